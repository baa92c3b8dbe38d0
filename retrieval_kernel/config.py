"""Where settings come from: ``[tool.retrieval_kernel]`` in the project's pyproject.toml.

Precedence, strongest first: an explicit option (magic flag, CLI flag, API
argument) > a traitlet set with ``%config`` > pyproject > built-in default.
Relative paths in pyproject are taken relative to the pyproject's folder.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from pathlib import Path
from typing import Any

from .errors import InputError

STORE_FOLDER = ".retrieval_kernel"
SETTING_KEYS = frozenset(
    {"notes_dir", "store_dir", "as_of", "max_bytes", "max_chars", "top", "refresh", "scope", "intent"}
    # where the dense lane's vectors live: "embedded" or http://host:port (see chroma_client.py)
    | {"chroma", "chroma_tenant", "chroma_database", "chroma_prefix", "chroma_timeout"}
    # when projections catch up with the notes (see refresh.py)
    | {"refresh_mode", "debounce", "refresh_timeout"}
)
PATH_KEYS = frozenset({"notes_dir", "store_dir"})


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def project_settings(start: Path | None = None) -> dict[str, Any]:
    """Settings from ``[tool.retrieval_kernel]`` of the nearest pyproject (empty when none)."""
    pyproject = find_pyproject(start or Path.cwd())
    if pyproject is None:
        return {}
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("retrieval_kernel", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{pyproject}: cannot read [tool.retrieval_kernel]: {exc}") from exc
    unknown = sorted(set(table) - SETTING_KEYS)
    if unknown:
        raise InputError(f"{pyproject}: unknown [tool.retrieval_kernel] keys {unknown}; known: {sorted(SETTING_KEYS)}")
    return {key: str(pyproject.parent / value) if key in PATH_KEYS else value for key, value in table.items()}


def default_store_dir(notes_root: Path) -> Path:
    """``.retrieval_kernel/`` inside the notes root, or a per-root cache folder if that is read-only."""
    beside = notes_root / STORE_FOLDER
    if (beside.is_dir() and os.access(beside, os.W_OK)) or os.access(notes_root, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(notes_root.resolve()).encode()).hexdigest()[:16]
    return cache / "retrieval_kernel" / f"{notes_root.name}-{key}"
