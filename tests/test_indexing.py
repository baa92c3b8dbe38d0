"""sync_notes through Workspace.index(): adds, updates, deletes, problems, identity clashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval_kernel import Workspace


@pytest.fixture
def open_ws(tmp_path: Path):
    opened: list[Workspace] = []

    def open_(notes: Path, **kwargs) -> Workspace:
        ws = Workspace(notes, store_dir=tmp_path / "store", **{"lanes": ("lexical",), **kwargs})
        opened.append(ws)
        return ws

    yield open_
    for ws in opened:
        ws.close()


def hit_ids(ws: Workspace, text: str) -> list[str]:
    return [hit.passage_id for hit in ws.lexical.search(text, 50)]


def bump_mtime(path: Path, seconds: int = 5) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 1_000_000_000))


def test_first_index_adds_every_note(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "# A\nalpha words\n", "sub/b.md": "# B\nbravo words\n"})
    ws = open_ws(notes)
    report = ws.index()
    assert report.added == ("a.md", "sub/b.md")
    assert (report.updated, report.deleted, report.unchanged, report.problems) == ((), (), 0, ())
    assert report.changed
    assert set(ws.records.documents()) == {"a.md", "sub/b.md"}
    assert [k for _, _, k in ws.records.changes_since(0)] == ["add", "add"]
    assert hit_ids(ws, "bravo") == ["sub/b#b"]


def test_reindex_of_unchanged_notes_changes_nothing(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "# A\nalpha\n", "b.md": "# B\nbravo\n"})
    ws = open_ws(notes)
    ws.index()
    high_water = ws.records.high_water()
    lexical_state = ws.records.projection("lexical")
    report = ws.index()
    assert (report.added, report.updated, report.deleted) == ((), (), ())
    assert report.unchanged == 2
    assert not report.changed
    assert ws.records.high_water() == high_water
    assert ws.records.changes_since(high_water) == []
    assert ws.records.projection("lexical") == lexical_state


def test_updated_and_deleted_notes_are_reported_and_reindexed(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "# A\nalpha old\n", "b.md": "# B\nbravo\n", "c.md": "# C\ncharlie\n"})
    ws = open_ws(notes)
    ws.index()
    make_notes({"a.md": "# A\nalpha fresh wording\n"})
    bump_mtime(notes / "a.md")
    (notes / "c.md").unlink()
    make_notes({"d.md": "# D\ndelta\n"})
    report = ws.index()
    assert report.added == ("d.md",)
    assert report.updated == ("a.md",)
    assert report.deleted == ("c.md",)
    assert report.unchanged == 1
    assert ws.records.documents()["a.md"].revision == 2
    assert "c.md" not in ws.records.documents()
    assert hit_ids(ws, "fresh") == ["a#a"]
    assert hit_ids(ws, "old") == []
    assert hit_ids(ws, "charlie") == []
    assert hit_ids(ws, "delta") == ["d#d"]
    kinds = sorted(k for _, _, k in ws.records.changes_since(3))
    assert kinds == ["add", "delete", "update"]


def test_mtime_change_without_content_change_makes_no_revision(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "# A\nalpha\n"})
    ws = open_ws(notes)
    ws.index()
    high_water = ws.records.high_water()
    bump_mtime(notes / "a.md")
    assert ws.pending_changes()
    report = ws.index()
    assert report.unchanged == 1
    assert (report.added, report.updated) == ((), ())
    doc = ws.records.documents()["a.md"]
    assert doc.revision == 1
    assert doc.mtime_ns == (notes / "a.md").stat().st_mtime_ns  # new stat recorded, so no re-hash next time
    assert ws.records.high_water() == high_water
    assert not ws.pending_changes()


def test_rewriting_identical_bytes_makes_no_revision(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "# A\nalpha\n"})
    ws = open_ws(notes)
    ws.index()
    high_water = ws.records.high_water()
    make_notes({"a.md": "# A\nalpha\n"})
    bump_mtime(notes / "a.md", 10)
    ws.index()
    assert ws.records.documents()["a.md"].revision == 1
    assert ws.records.high_water() == high_water


def test_note_that_becomes_malformed_keeps_its_last_good_revision(make_notes, open_ws) -> None:
    notes = make_notes({"a.md": "---\ntitle: Good\n---\n# Good\nzeppelin facts\n", "b.md": "# B\nbravo\n"})
    ws = open_ws(notes)
    ws.index()
    make_notes({"a.md": "---\ntitle: [broken\n---\n# Broken\nnew words\n"})
    bump_mtime(notes / "a.md")
    report = ws.index()
    assert len(report.problems) == 1
    problem = report.problems[0]
    assert problem.path == "a.md"
    assert problem.kept_last_good is True
    assert "a.md:" in problem.message
    assert report.updated == ()
    doc = ws.records.documents()["a.md"]
    assert (doc.revision, doc.title) == (1, "Good")
    assert hit_ids(ws, "zeppelin") == ["a#good"]
    assert hit_ids(ws, "new words") == []
    # still reported (not silently forgotten) on the next run
    assert len(ws.index().problems) == 1
    # and fixing it makes a new revision
    make_notes({"a.md": "---\ntitle: Fixed\n---\n# Fixed\nrepaired zeppelin\n"})
    bump_mtime(notes / "a.md", 20)
    report = ws.index()
    assert report.updated == ("a.md",)
    assert report.problems == ()
    assert ws.records.documents()["a.md"].revision == 2


def test_new_malformed_note_is_reported_and_not_indexed(make_notes, open_ws) -> None:
    notes = make_notes({"good.md": "# G\ngolf\n", "bad.md": "---\n- not\n- a mapping\n---\nbody\n"})
    ws = open_ws(notes)
    report = ws.index()
    assert report.added == ("good.md",)
    assert [(p.path, p.kept_last_good) for p in report.problems] == [("bad.md", False)]
    assert set(ws.records.documents()) == {"good.md"}


def test_new_non_utf8_note_is_reported_and_others_are_indexed(make_notes, open_ws) -> None:
    notes = make_notes(
        {
            "a.md": "# A\nalpha\n",
            "latin.md": "# Caf\u00e9\n\nlatin words\n".encode("latin-1"),
            "z.md": "# Z\nzulu\n",
        }
    )
    ws = open_ws(notes)
    report = ws.index()
    assert report.added == ("a.md", "z.md")
    assert len(report.problems) == 1
    assert report.problems[0].path == "latin.md"
    assert report.problems[0].kept_last_good is False
    assert "UTF-8" in report.problems[0].message
    assert "latin.md" not in ws.records.documents()
    assert hit_ids(ws, "latin") == []
    assert hit_ids(ws, "zulu") == ["z#z"]


def test_note_with_an_impossible_observed_date_is_a_problem_not_a_crash(make_notes, open_ws) -> None:
    """``observed: 2026-02-30`` must be reported for that note while the other notes still index."""
    notes = make_notes({"a.md": "# A\nalpha\n", "bad.md": "---\nobserved: 2026-02-30\n---\n# Bad\nbravo\n"})
    ws = open_ws(notes)
    report = ws.index()
    assert "a.md" in report.added
    if "bad.md" in report.added:  # accepted with an 'unknown source time' warning
        assert ws.records.documents()["bad.md"].observed_at is None
        assert report.warnings
    else:
        assert [p.path for p in report.problems] == ["bad.md"]


def test_duplicate_front_matter_ids_fall_back_to_path(make_notes, open_ws) -> None:
    notes = make_notes(
        {
            "first.md": "---\nid: shared\n---\n# Setup\nfirst body\n",
            "second.md": "---\nid: shared\n---\n# Setup\nsecond body\n",
        }
    )
    ws = open_ws(notes)
    report = ws.index()
    assert report.added == ("first.md", "second.md")
    docs = ws.records.documents()
    assert docs["first.md"].module == "shared"
    assert docs["second.md"].module == "second"
    assert any("second.md" in w and "shared" in w and "first.md" in w for w in report.warnings)
    assert hit_ids(ws, "first body")[0] == "shared#setup"
    assert hit_ids(ws, "second body")[0] == "second#setup"
    # stable on re-index: the fallback does not flip to the other note
    ws.index()
    assert ws.records.documents()["second.md"].module == "second"


def test_duplicate_id_whose_path_fallback_is_also_taken_keeps_both_notes_distinct(make_notes, open_ws) -> None:
    """a.md declares id 'b'; b.md declares nothing, so its path identity 'b' is the same name."""
    notes = make_notes({"a.md": "---\nid: b\n---\n# Same\nalpha text\n", "b.md": "# Same\nbravo text\n"})
    ws = open_ws(notes)
    report = ws.index()
    assert set(report.added) == {"a.md", "b.md"}
    docs = ws.records.documents()
    assert docs["a.md"].module != docs["b.md"].module
    assert hit_ids(ws, "alpha") and hit_ids(ws, "bravo")
    assert hit_ids(ws, "alpha")[0] != hit_ids(ws, "bravo")[0]


def test_notes_with_the_same_stem_and_different_suffix_are_both_indexed(make_notes, open_ws) -> None:
    """a.md and a.markdown both default to the identity 'a'."""
    notes = make_notes({"a.md": "alpha text\n", "a.markdown": "bravo text\n"})
    ws = open_ws(notes)
    report = ws.index()
    assert set(report.added) == {"a.md", "a.markdown"}
    assert len(ws.records.passages()) == 2


def test_max_passage_chars_is_applied_when_indexing(make_notes, open_ws) -> None:
    body = "\n\n".join(f"paragraph {i} " + "words " * 15 for i in range(6))
    notes = make_notes({"long.md": f"# Long\n\n{body}\n"})
    ws = open_ws(notes, max_passage_chars=200)
    ws.index()
    passages = ws.records.passages_of("long.md")
    assert len(passages) > 1
    assert all(len(p.text) <= 200 for p in passages)
