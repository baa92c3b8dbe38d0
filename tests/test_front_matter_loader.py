"""Front matter read through libyaml gives exactly what yaml.safe_load gives (or raises what it raises)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_kernel.corpus import notes

REPO_ROOT = Path(__file__).resolve().parents[1]
TRICKY = [
    "a:\tb",
    "!",
    "a: !custom x",
    "a: |#\n  x",
    "a: >\n  x\n  y\n",
    "a: &x [1]\nb: *x",
    "? a\n: b",
    "%YAML 1.1\n---\na: 1",
    "title: Café",
    "a: [" * 40 + "]" * 40,
    "a:\n" + "".join(" " * n + f"k{n}:\n" for n in range(1, 80)),
    "a: yes\nb: 2026-10-01\nc: 0x1F\nd: 1_000\ne: 12:30\nf: ~",
    'a: "\\u263a \\x41"',
    "a: [1, 2",
    "a: b: c",
    "a: 2026-02-30",
]


def _outcome(load: Any, block: str) -> str:
    try:
        return repr(load(block))
    except Exception as exc:  # the kind of error is what must match
        return f"{type(exc).__name__}: {exc}"


def _front_matter_blocks() -> list[str]:
    blocks = []
    for path in sorted((REPO_ROOT / "fixtures").glob("*/notes/**/*.md")):
        lines = notes.source_lines(path.read_text(encoding="utf-8"))
        if lines and lines[0].rstrip() == "---":
            end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
            if end is not None:
                blocks.append("\n".join(lines[1:end]))
    return blocks


@pytest.mark.skipif(notes._C_LOADER is None, reason="PyYAML without libyaml")
def test_fixtures_and_tricky_blocks_load_as_safe_load_does() -> None:
    blocks = [*_front_matter_blocks(), *TRICKY]
    assert len(blocks) > 50
    for block in blocks:
        assert _outcome(notes._safe_load, block) == _outcome(yaml.safe_load, block), block


@pytest.mark.skipif(notes._C_LOADER is None, reason="PyYAML without libyaml")
def test_random_blocks_load_as_safe_load_does() -> None:
    rng = random.Random(5)
    pieces = [*"ab1: -[]{},#'\"\n.~\\/=_+()$;!|>&*?\t", "yes", "null", "2026-01-01", "0x1", "\n  ", "---", "12:30", "é"]
    for _ in range(3000):
        block = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        assert _outcome(notes._safe_load, block) == _outcome(yaml.safe_load, block), block
