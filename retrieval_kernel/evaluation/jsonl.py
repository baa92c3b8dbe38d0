"""Question files: JSON Lines read once, the same way for every suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SuiteError


def read_jsonl(path: Path, what: str = "question file", number_blank_lines: bool = True) -> list[tuple[int, Any]]:
    """Each non-blank line of ``path`` parsed, with the line number errors cite.

    Blank lines are skipped; ``number_blank_lines=False`` numbers only the non-blank
    lines (the policy suites' rule), else numbers are the file's own lines.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read {what} {path}: {exc}") from exc
    if not number_blank_lines:
        lines = [line for line in lines if line.strip()]
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
    return rows
