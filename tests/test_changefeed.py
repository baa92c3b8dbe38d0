"""Change detection without a per-query walk: the OS change feed, and the walk it falls back to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import InputError
from retrieval_kernel.store import indexing
from retrieval_kernel.store.changefeed import ChangeFeed

AS_OF = "2026-11-30"
LANES = ("identity", "lexical")
PUMPS = "# Pumps\n\n## Impeller\n\nThe impeller balance is inspected quarterly.\n"

pytestmark = pytest.mark.skipif(ChangeFeed.open(Path("/")) is None, reason="no inotify on this platform")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "plant").mkdir(parents=True)
    (folder / "plant" / "pumps.md").write_text(PUMPS, encoding="utf-8")
    (folder / "valves.md").write_text("# Valves\n\nGate valves are exercised yearly.\n", encoding="utf-8")
    return folder


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every stat walk a query makes (the call it replaces), counted."""
    seen: list[Path] = []
    real = indexing.pending_stats

    def counted(root: Path, records):  # type: ignore[no-untyped-def]
        seen.append(root)
        return real(root, records)

    monkeypatch.setattr("retrieval_kernel.pipeline.upkeep.pending_stats", counted)
    return seen


def ask(workspace: Workspace, text: str = "impeller inspection"):
    return workspace.query(text, as_of=AS_OF)


def test_a_quiet_folder_is_walked_once_then_never(notes: Path, tmp_path: Path, walks: list[Path]) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        for _ in range(5):
            assert ask(workspace).projection == "consistent"
        assert workspace.detecting_changes_by == "notify"
        assert len(walks) == 1


def test_walk_mode_walks_on_every_query(notes: Path, tmp_path: Path, walks: list[Path]) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES, change_detection="walk") as workspace:
        workspace.index()
        for _ in range(3):
            ask(workspace)
        assert workspace.detecting_changes_by == "walk"
        assert len(walks) == 3


@pytest.mark.parametrize(
    "change",
    [
        lambda n: (n / "plant" / "pumps.md").write_text(PUMPS.replace("quarterly", "monthly"), encoding="utf-8"),
        lambda n: os.replace(_written(n / "plant" / ".pumps.md.swp", "monthly"), n / "plant" / "pumps.md"),
        lambda n: (n / "plant" / "pumps.md").unlink(),
        lambda n: _written(_folder(n / "plant" / "new" / "deeper") / "impeller.md", "monthly"),
    ],
    ids=["edit", "atomic-save", "delete", "note-in-new-folders"],
)
def test_a_change_right_before_a_query_is_seen(notes: Path, tmp_path: Path, change) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        before = ask(workspace)
        change(notes)
        after = ask(workspace)  # no sleep: the kernel queues the event inside the write itself
        assert after.projection == "consistent"
        assert [e.excerpt for e in after.evidence] != [e.excerpt for e in before.evidence]


def test_a_change_in_a_folder_made_after_the_feed_opened_is_seen(notes: Path, tmp_path: Path) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        ask(workspace)
        folder = _folder(notes / "later")
        _written(folder / "gaskets.md", "quarterly")
        ask(workspace)
        (folder / "gaskets.md").write_text("# Gaskets\n\nGaskets are replaced at every impeller overhaul.\n")
        packet = ask(workspace, "gaskets replaced overhaul")
        assert packet.evidence and "every impeller overhaul" in packet.evidence[0].excerpt


def test_hidden_files_and_the_store_are_not_changes(notes: Path, walks: list[Path]) -> None:
    with Workspace(notes, lanes=LANES) as workspace:  # the store lives in notes/.retrieval_kernel
        workspace.index()
        ask(workspace)
        ask(workspace)  # this query's trace was written inside the notes folder, in the hidden store
        (notes / ".scratch.md").write_text("not a note", encoding="utf-8")
        ask(workspace)
        assert len(walks) == 1


def test_stale_is_still_reported_without_refreshing(notes: Path, tmp_path: Path) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES, refresh="off") as workspace:
        workspace.index()
        assert ask(workspace).projection == "consistent"
        _written(notes / "impeller.md", "monthly")
        assert ask(workspace).projection == "stale"
        assert workspace.status()["pending_notes"] == 1


def test_an_overflowed_queue_counts_as_a_change(notes: Path) -> None:
    feed = ChangeFeed.open(notes)
    assert feed is not None
    try:
        assert not feed.changed()
        overflow = type("Event", (), {"mask": 0x4000, "wd": -1, "name": ""})()  # IN_Q_OVERFLOW
        assert feed._note(overflow) is None  # cannot say which notes: the caller walks
    finally:
        feed.close()


@pytest.mark.parametrize(
    ("change", "found", "gone"),
    [
        (lambda n: (n / "plant" / "pumps.md").write_text(PUMPS.replace("quarterly", "monthly")), "monthly", None),
        (lambda n: _written(n / "impeller.md", "weekly"), "weekly", None),
        (lambda n: (n / "plant" / "pumps.md").unlink(), None, "plant/pumps.md"),
        (
            lambda n: os.replace(n / "plant" / "pumps.md", n / "plant" / "impeller-pumps.md"),
            "quarterly",
            "plant/pumps.md",
        ),
        (lambda n: os.replace(_written(n / ".draft.md", "daily"), n / "plant" / "pumps.md"), "daily", None),
    ],
    ids=["edit", "add", "delete", "rename", "atomic-save"],
)
def test_the_notes_the_feed_names_are_refreshed_without_a_walk(
    notes: Path, tmp_path: Path, walks: list[Path], change, found: str | None, gone: str | None
) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        ask(workspace)  # the first look walks once
        change(notes)
        packet = ask(workspace)
        assert packet.projection == "consistent" and len(walks) == 1
        paths = set(workspace.records.documents())
        assert paths == {p.relative_to(notes).as_posix() for p in notes.rglob("*.md") if ".draft" not in p.name}
        if found is not None:
            assert any(found in e.excerpt for e in packet.evidence)
        if gone is not None:
            assert gone not in paths and all(e.path != gone for e in packet.evidence)
        assert ask(workspace).projection == "consistent" and len(walks) == 1


def test_a_feed_that_cannot_name_the_changes_falls_back_to_a_walk(
    notes: Path, tmp_path: Path, walks: list[Path]
) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        ask(workspace)
        feed = workspace._change_feed()
        assert feed is not None
        overflowed = feed.changes
        feed.changes = lambda: (overflowed(), None)[1]  # type: ignore[method-assign]  # e.g. IN_Q_OVERFLOW
        (notes / "plant" / "pumps.md").write_text(PUMPS.replace("quarterly", "monthly"), encoding="utf-8")
        packet = ask(workspace)
        assert len(walks) == 2 and "monthly" in packet.evidence[0].excerpt
        del feed.changes
        ask(workspace)
        assert len(walks) == 2  # named again after the walk


def test_a_stale_answer_names_the_notes_the_feed_saw(notes: Path, tmp_path: Path, walks: list[Path]) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES, refresh="off") as workspace:
        workspace.index()
        ask(workspace)
        _written(notes / "impeller.md", "monthly")
        (notes / "valves.md").unlink()
        assert ask(workspace).projection == "stale"
        assert workspace.status()["pending_notes"] == 2
        assert len(walks) == 1


def test_new_folders_and_linked_notes_are_walked(notes: Path, tmp_path: Path, walks: list[Path]) -> None:
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        ask(workspace)
        _written(_folder(notes / "new") / "impeller.md", "weekly")
        assert any("weekly" in e.excerpt for e in ask(workspace).evidence) and len(walks) == 2
        (notes / "linked.md").symlink_to(notes / "valves.md")
        ask(workspace)
        assert len(walks) == 3
        (notes / "valves.md").write_text("# Valves\n\nGate valves are exercised monthly.\n", encoding="utf-8")
        ask(workspace)  # the edit names valves.md only: the link to it is found by walking
        assert len(walks) == 4
        assert workspace.records.documents()["linked.md"].sha256 == workspace.records.documents()["valves.md"].sha256


def test_no_feed_falls_back_to_the_walk(notes: Path, tmp_path: Path, monkeypatch, walks: list[Path]) -> None:
    monkeypatch.setattr(ChangeFeed, "open", classmethod(lambda cls, root: None))  # e.g. no inotify instance left
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        ask(workspace)
        _written(notes / "impeller.md", "monthly")
        assert "monthly" in ask(workspace).evidence[0].excerpt
        assert workspace.detecting_changes_by == "walk" and len(walks) == 2


def test_bad_change_detection_is_a_specific_error(notes: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="change detection"):
        Workspace(notes, tmp_path / "store", change_detection="guess")


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _written(path: Path, cadence: str) -> Path:
    path.write_text(f"# Impeller\n\nThe impeller balance is inspected {cadence} since the recall.\n", encoding="utf-8")
    return path
