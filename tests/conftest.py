"""Shared fixtures for the retrieval_kernel test suite."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

NotesFactory = Callable[[Mapping[str, str | bytes]], Path]


@pytest.fixture
def make_notes(tmp_path: Path) -> NotesFactory:
    """Write ``{relative_path: text}`` into ``tmp_path/notes`` and return that folder.

    Text is written as UTF-8 bytes exactly as given (no newline translation, so
    ``\\r\\n`` stays ``\\r\\n``); ``bytes`` values are written verbatim. Calling the
    factory again adds or overwrites files in the same folder.
    """
    root = tmp_path / "notes"

    def make(files: Mapping[str, str | bytes]) -> Path:
        root.mkdir(exist_ok=True)
        for rel, content in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return root

    return make


@pytest.fixture(scope="session")
def workshop_notes() -> Path:
    """The frozen workshop corpus (read-only: never index it with its default store)."""
    path = REPO_ROOT / "fixtures" / "workshop" / "notes"
    assert path.is_dir(), f"workshop fixture missing at {path}"
    return path


@pytest.fixture
def ws_for(tmp_path: Path, make_notes):
    """Build (and by default index) a lexical-only workspace over ``{path: text}``; closed afterwards."""
    from retrieval_kernel import Workspace

    opened: list[Workspace] = []

    def build(files: dict[str, str], index: bool = True) -> Workspace:
        ws = Workspace(make_notes(files), store_dir=tmp_path / "store", lanes=("lexical",))
        if index:
            ws.index()
        opened.append(ws)
        return ws

    yield build
    for ws in opened:
        ws.close()
