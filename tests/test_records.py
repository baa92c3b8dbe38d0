"""RecordStore: revisions, change log, tombstones, atomic passage replacement, open errors."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from retrieval_kernel.corpus.notes import parse_note
from retrieval_kernel.errors import StoreError
from retrieval_kernel.store.records import DATABASE_NAME, ProjectionState, RecordStore

AT = "2026-10-15T00:00:00Z"


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "store") as records:
        yield records


def note_v1():
    return parse_note("a.md", "---\nobserved: 2026-10-01\nauthority: reference\n---\n# Alpha\nfirst\n## Beta\nsecond\n")


def note_v2():
    return parse_note("a.md", "---\nobserved: 2026-10-05\n---\n# Gamma\nthird\n")


def test_new_store_is_empty(store: RecordStore) -> None:
    assert store.documents() == {}
    assert store.passages() == {}
    assert store.passage_count() == 0
    assert store.high_water() == 0
    assert store.changes_since(0) == []
    assert store.projection("lexical") is None


def test_upsert_add_then_update_bumps_revision_and_logs(store: RecordStore) -> None:
    seq1 = store.upsert(note_v1(), size=10, mtime_ns=100, indexed_at=AT)
    doc = store.documents()["a.md"]
    assert (doc.revision, doc.size, doc.mtime_ns, doc.indexed_at) == (1, 10, 100, AT)
    assert doc.observed_at == "2026-10-01"
    assert doc.metadata == {"observed": "2026-10-01", "authority": "reference"}
    assert doc.title == "Alpha"

    seq2 = store.upsert(note_v2(), size=20, mtime_ns=200, indexed_at=AT)
    assert seq2 > seq1 >= 1
    doc = store.documents()["a.md"]
    assert (doc.revision, doc.size, doc.observed_at, doc.title) == (2, 20, "2026-10-05", "Gamma")
    assert store.changes_since(0) == [(seq1, "a.md", "add"), (seq2, "a.md", "update")]
    assert store.changes_since(seq1) == [(seq2, "a.md", "update")]
    assert store.high_water() == seq2


def test_passages_are_replaced_not_accumulated(store: RecordStore) -> None:
    store.upsert(note_v1(), 1, 1, AT)
    assert [p.heading for p in store.passages_of("a.md")] == ["Alpha", "Beta"]
    old_ids = {p.id for p in store.passages_of("a.md")}
    store.upsert(note_v2(), 2, 2, AT)
    current = store.passages_of("a.md")
    assert [p.heading for p in current] == ["Gamma"]
    assert not old_ids & set(store.passages())
    assert store.passage_count() == 1
    stored = store.passages([current[0].id])[current[0].id]
    assert stored.revision == 2
    assert stored.observed_at == "2026-10-05"
    assert stored.passage == current[0]


def test_after_a_change_cached_passages_and_documents_of_other_notes_are_kept(store: RecordStore) -> None:
    other = parse_note("b.md", "# Other\nkept\n")
    store.upsert(note_v1(), 1, 1, AT)
    store.upsert(other, 1, 1, AT)
    ids = [p.id for p in store.passages_of("a.md")] + [p.id for p in store.passages_of("b.md")]
    before = store.passages(ids)
    documents = store.documents()
    store.upsert(note_v2(), 2, 2, AT)
    after = store.passages(ids)
    assert list(after) == [other.passages[0].id]  # a.md's old passages are gone, not served from the cache
    assert after[other.passages[0].id] is before[other.passages[0].id]
    gamma = store.passages_of("a.md")[0].id
    assert store.passages([gamma])[gamma].revision == 2
    assert store.documents()["b.md"] is documents["b.md"]
    assert store.documents(["a.md"])["a.md"].title == "Gamma"
    assert store.changed_paths(0) == {"a.md", "b.md"} and store.changed_paths(0, limit=1) is None
    store.delete("b.md", AT)
    assert store.passages(ids) == {} and "b.md" not in store.documents(["b.md"])


def test_passages_round_trip_exactly(store: RecordStore) -> None:
    note = parse_note("dir/n.md", "# T\n\n## A / B\ntext \u00e9\u6f22\n### C\nmore\n")
    store.upsert(note, 1, 1, AT)
    assert store.passages_of("dir/n.md") == list(note.passages)
    assert store.passages_of("other.md") == []


def test_failed_upsert_rolls_back_everything(store: RecordStore) -> None:
    """Passages and the change-log entry commit together or not at all."""
    store.upsert(note_v1(), 1, 1, AT)
    before_passages = store.passages_of("a.md")
    before_doc = store.documents()["a.md"]
    before_hw = store.high_water()

    good = note_v2()
    clash = dataclasses.replace(good.passages[0], line_start=99)  # same id twice: the INSERT must fail
    broken = dataclasses.replace(good, passages=(good.passages[0], clash))
    with pytest.raises((sqlite3.Error, StoreError)):
        store.upsert(broken, 2, 2, AT)

    assert store.passages_of("a.md") == before_passages
    assert store.documents()["a.md"] == before_doc
    assert store.high_water() == before_hw
    # and the store is still usable afterwards
    store.upsert(good, 3, 3, AT)
    assert store.documents()["a.md"].revision == 2


def test_a_batch_keeps_every_write_that_finished(tmp_path: Path, store: RecordStore) -> None:
    """In a batch a failed write is undone alone; the others commit when the batch ends, also by an exception."""
    good = note_v2()
    clash = dataclasses.replace(good.passages[0], line_start=99)
    broken = dataclasses.replace(good, path="c.md", passages=(good.passages[0], clash))
    with pytest.raises(RuntimeError), store.batch():
        store.upsert(note_v1(), 1, 1, AT)
        with pytest.raises((sqlite3.Error, StoreError)):
            store.upsert(broken, 2, 2, AT)
        store.upsert(parse_note("b.md", "# B\nkeep me\n"), 1, 1, AT)
        with RecordStore(tmp_path / "store") as reader:  # nothing is visible before the batch ends
            assert reader.documents() == {}
        raise RuntimeError("a deadline")
    with RecordStore(tmp_path / "store") as reader:
        assert sorted(reader.documents()) == ["a.md", "b.md"]
        assert [path for _, path, _ in reader.changes_since(0)] == ["a.md", "b.md"]
        assert reader.passages_of("c.md") == []


def test_a_batch_that_writes_nothing_takes_no_lock(tmp_path: Path, store: RecordStore) -> None:
    with RecordStore(tmp_path / "store") as other:
        with other.transaction(), store.batch():  # another writer holds the store's write lock
            assert store.documents() == {}
        with store.batch():
            store.upsert(note_v1(), 1, 1, AT)
        assert sorted(other.documents()) == ["a.md"]


def test_delete_tombstones_and_logs(store: RecordStore) -> None:
    store.upsert(note_v1(), 1, 1, AT)
    other = parse_note("b.md", "# B\nkeep me\n")
    store.upsert(other, 1, 1, AT)
    seq = store.delete("a.md", AT)
    assert seq == store.high_water()
    assert set(store.documents()) == {"b.md"}
    assert store.passages_of("a.md") == []
    assert all(sp.passage.path == "b.md" for sp in store.passages().values())
    assert store.changes_since(seq - 1) == [(seq, "a.md", "delete")]


def test_re_adding_a_tombstoned_path_is_an_add_with_a_newer_revision(store: RecordStore) -> None:
    store.upsert(note_v1(), 1, 1, AT)
    store.delete("a.md", AT)
    seq = store.upsert(note_v2(), 2, 2, AT)
    assert store.changes_since(seq - 1) == [(seq, "a.md", "add")]
    assert store.documents()["a.md"].revision == 2
    kinds = [kind for _, _, kind in store.changes_since(0)]
    assert kinds == ["add", "delete", "add"]


def test_change_seq_strictly_increases_across_paths(store: RecordStore) -> None:
    seqs = [store.upsert(parse_note(f"n{i}.md", f"# N{i}\nbody {i}\n"), 1, 1, AT) for i in range(5)]
    seqs.append(store.delete("n2.md", AT))
    seqs.append(store.upsert(parse_note("n0.md", "# N0\nchanged\n"), 2, 2, AT))
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert [s for s, _, _ in store.changes_since(0)] == seqs


def test_touch_updates_stat_without_a_revision(store: RecordStore) -> None:
    store.upsert(note_v1(), 1, 1, AT)
    hw = store.high_water()
    store.touch("a.md", 5, 555)
    doc = store.documents()["a.md"]
    assert (doc.size, doc.mtime_ns, doc.revision) == (5, 555, 1)
    assert store.high_water() == hw


def test_projection_state_round_trip(store: RecordStore) -> None:
    state = ProjectionState("lexical", 3, 17, AT)
    store.set_projection(state)
    assert store.projection("lexical") == state
    store.set_projection(dataclasses.replace(state, high_water=18))
    assert store.projection("lexical").high_water == 18
    assert store.projection("other") is None


def test_store_persists_across_reopen(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "s") as first:
        first.upsert(note_v1(), 1, 1, AT)
    with RecordStore(tmp_path / "s") as second:
        assert second.documents()["a.md"].revision == 1
        assert second.high_water() == 1


def test_store_on_a_path_that_is_a_file_raises_store_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("I am a file")
    with pytest.raises(StoreError) as info:
        RecordStore(blocker)
    assert str(blocker / DATABASE_NAME) in str(info.value)


def test_store_on_a_corrupt_database_raises_store_error_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / DATABASE_NAME).write_bytes(b"this is not an sqlite database" * 100)
    with pytest.raises(StoreError) as info:
        RecordStore(folder)
    assert str(folder / DATABASE_NAME) in str(info.value)


def test_store_with_a_different_schema_version_is_refused(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "s") as records:
        records._db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as info:
        RecordStore(tmp_path / "s")
    assert "999" in str(info.value)


def test_a_schema_2_store_gains_the_cell_column_and_reparses_every_note(tmp_path: Path) -> None:
    note = parse_note("a.md", "# A\n\nSome text here.\n")
    with RecordStore(tmp_path / "s") as records:
        records.upsert(note, 10, 1, "2026-11-30T00:00:00Z")
        records._db.execute("ALTER TABLE passages DROP COLUMN cell")  # the store as schema 2 wrote it
        records._db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        records._db.commit()
    with RecordStore(tmp_path / "s") as records:
        (stored,) = records.passages().values()
        assert stored.passage.text == note.passages[0].text and stored.passage.cell_index is None
        assert records.documents()["a.md"].sha256 == ""  # parsed again on the next sync (facts gained fields)
        version = records._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == "3"
