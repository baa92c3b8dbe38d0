"""Long indexing shows progress; small jobs stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.store.progress import Progress


def test_small_jobs_and_disabled_progress_draw_nothing(capsys) -> None:
    for progress in (Progress(enabled=False, min_items=1), Progress(enabled=True, min_items=10)):
        with progress.track("reading notes", 5, "note") as step:
            step(5)
    assert capsys.readouterr().err == ""


def test_a_big_first_index_shows_notes_and_passages_with_a_rate(tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(12):
        (notes / f"n{n:02d}.md").write_text(f"# Note {n}\n\n## Pumps\n\nPump {n} is inspected.\n", encoding="utf-8")
    with Workspace(notes, tmp_path / "store", lanes=("identity", "lexical"), progress=True) as workspace:
        workspace.progress.min_items = 10
        workspace.index()
        err = capsys.readouterr().err
        assert "reading notes" in err and "12/12" in err and "note/s" in err
        assert "lexical index" in err and "passage/s" in err
        (notes / "n00.md").write_text("# Note 0\n\nChanged.\n", encoding="utf-8")
        workspace.index()
        assert capsys.readouterr().err == ""  # one changed note: no bar


@pytest.mark.parametrize("enabled", [False, True])
def test_progress_never_changes_what_is_indexed(tmp_path: Path, workshop_notes: Path, enabled: bool) -> None:
    with Workspace(workshop_notes, tmp_path / "store", lanes=("identity", "lexical"), progress=enabled) as workspace:
        workspace.progress.min_items = 1
        report = workspace.index()
        assert len(report.added) == workspace.note_count() > 0
