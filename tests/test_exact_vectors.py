"""In-memory exact vectors: patched in place on refresh, equal to reading every vector back."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.projections import exact as exact_module
from retrieval_kernel.projections.exact import ExactVectors


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype("float32")


def brute(rows: dict[str, np.ndarray], vector: np.ndarray, limit: int) -> list[str]:
    scored = sorted(((-round(float(v @ vector), 6), pid) for pid, v in rows.items()))
    return [pid for _, pid in scored[:limit]]


def ordered(hits: list[tuple[str, float]]) -> list[str]:
    return [pid for _, pid in sorted((-score, pid) for pid, score in hits)]


LANES = ("identity", "lexical", "dense")
PAGER = "\n## Pager\n\nThe pager rota approves deployments.\n"


def copied_notes(tmp_path: Path, workshop_notes: Path) -> tuple[Path, Path]:
    """A copy of the workshop notes, and a store folder beside it (not made yet)."""
    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    return notes, tmp_path / "store"


def indexed_copy(tmp_path: Path, workshop_notes: Path) -> tuple[Path, Path]:
    """A copy of the workshop notes, indexed with every lane into the store beside it."""
    notes, store = copied_notes(tmp_path, workshop_notes)
    with Workspace(notes, store, lanes=LANES) as workspace:
        workspace.index()
    return notes, store


def add_section(note: Path, text: str = PAGER) -> None:
    note.write_text(note.read_text(encoding="utf-8") + text, encoding="utf-8")


def count_chroma_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry for every read of all the vectors back from Chroma."""
    from retrieval_kernel.projections.dense import DenseProjection

    reads: list[int] = []
    original = DenseProjection._all_vectors
    monkeypatch.setattr(DenseProjection, "_all_vectors", lambda *args: reads.append(1) or original(*args))
    return reads


@pytest.mark.parametrize("fold_at", [2, 1000])
def test_patched_vectors_search_like_brute_force(monkeypatch, fold_at: int) -> None:
    monkeypatch.setattr(exact_module, "FOLD_AT", fold_at)
    rng = np.random.default_rng(7)
    picker = random.Random(7)
    truth = {f"n{i}#p{j}": unit(rng.normal(size=(1, 8)))[0] for i in range(20) for j in range(3)}
    ids = sorted(truth)
    exact = ExactVectors(ids, [pid.split("#")[0] for pid in ids], np.stack([truth[pid] for pid in ids]))
    for step in range(25):
        note = f"n{picker.randrange(30)}"
        truth = {pid: v for pid, v in truth.items() if not pid.startswith(f"{note}#")}
        fresh = {f"{note}#p{j}": unit(rng.normal(size=(1, 8)))[0] for j in range(picker.randrange(0, 4))}
        truth.update(fresh)
        ids = sorted(fresh)
        rows = np.stack([fresh[pid] for pid in ids]) if ids else np.zeros((0, 8), "float32")
        exact.replace_notes([note], ids, [note] * len(ids), rows)
        query = unit(rng.normal(size=(1, 8)))[0]
        assert len(exact) == len(truth)
        assert ordered(exact.search(query, 7)) == brute(truth, query, 7), step


def test_a_refresh_carries_the_vectors_over_without_reading_them_back(tmp_path: Path, workshop_notes: Path) -> None:
    notes, _ = copied_notes(tmp_path, workshop_notes)
    question = "Who may approve a production deployment?"
    with Workspace(notes, tmp_path / "store", lanes=LANES) as workspace:
        workspace.index()
        workspace.query(question, as_of="2026-10-15")
        dense = workspace.dense
        before = dense._exact
        assert before is not None
        target = sorted(notes.glob("*.md"))[0]
        add_section(target)
        (notes / sorted(p.name for p in notes.glob("*.md"))[1]).unlink()
        reads: list[int] = []
        original = dense._all_vectors
        dense._all_vectors = lambda *args: reads.append(1) or original(*args)  # type: ignore[method-assign]
        packet = workspace.query(question, as_of="2026-10-15")  # answers first: the new passages wait
        assert packet.projection == "stale" and not reads  # the old vectors dropped in place, none read back
        workspace.flush_writes()  # the deferred writes: embedded, written to Chroma, patched in memory
        packet = workspace.query(question, as_of="2026-10-15")
        assert packet.projection == "consistent" and not reads  # patched in place, never read back
        state = workspace.records.projection("dense")
        vector = dense.embed_query(question)
        patched = dense.search_vector(vector, 50, state)
        dense._exact = None  # what a new process would read from Chroma
        reread = dense.search_vector(vector, 50, state)
        assert [(h.passage_id, h.score) for h in patched] == [(h.passage_id, h.score) for h in reread]
        assert any("Pager" in pid or "pager" in pid for pid in (h.passage_id for h in reread))


def test_vectors_are_read_back_in_pages_past_sqlites_variable_limit(tmp_path: Path, monkeypatch) -> None:
    """40,000 vectors (one read of every metadata row fails past 32,766 SQL variables): read in pages,
    every id, path and vector comes back once, in the collection's order."""
    import chromadb

    from retrieval_kernel.projections import dense as dense_module
    from retrieval_kernel.projections.dense import DenseProjection

    count = 40_000
    rng = np.random.default_rng(3)
    vectors = unit(rng.normal(size=(count, 8)))
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    collection = client.create_collection("many", embedding_function=None)
    for start in range(0, count, 5_000):
        ids = [f"n{i}#p" for i in range(start, start + 5_000)]
        collection.add(
            ids=ids,
            embeddings=vectors[start : start + 5_000],
            metadatas=[{"path": f"n{i}.md"} for i in range(start, start + 5_000)],
        )
    projection = DenseProjection.__new__(DenseProjection)  # only the reading half is exercised
    projection._on = lambda collection, what, operation: operation(collection)  # type: ignore[method-assign]
    monkeypatch.setattr(dense_module, "READ_PAGE", 10_000)
    ids, paths, rows = projection._all_vectors(collection, collection.count())
    assert len(ids) == len(set(ids)) == count
    assert all(path == pid.split("#")[0] + ".md" for pid, path in zip(ids, paths, strict=True))
    by_id = dict(zip(ids, rows, strict=True))
    assert np.allclose(np.stack([by_id[f"n{i}#p"] for i in (0, 12_345, 39_999)]), vectors[[0, 12_345, 39_999]])


def test_a_new_process_at_the_same_state_loads_the_vectors_instead_of_reading_chroma(
    tmp_path: Path, workshop_notes: Path, monkeypatch
) -> None:
    from retrieval_kernel.projections.dense import EXACT_SNAPSHOT

    notes, store = copied_notes(tmp_path, workshop_notes)
    questions = ["Who may approve a production deployment?", "How is ownership of a record decided?"]
    reads = count_chroma_reads(monkeypatch)

    def answers() -> list[str]:
        with Workspace(notes, store, lanes=LANES) as workspace:
            return [workspace.query(q, as_of="2026-10-15").to_json() for q in questions]

    with Workspace(notes, store, lanes=LANES) as workspace:
        workspace.index()
    assert (store / EXACT_SNAPSHOT).exists()  # the build kept the vectors it wrote
    first = answers()
    assert len(reads) == 0  # loaded from the build's snapshot, nothing read back from Chroma
    (store / EXACT_SNAPSHOT).write_bytes(b"not a snapshot")
    assert answers() == first and len(reads) == 1  # read from Chroma: the same answers
    assert answers() == first and len(reads) == 1  # loaded, not read back
    target = sorted(notes.glob("*.md"))[0]
    add_section(target)
    edited = answers()  # answers from the loaded vectors brought forward in memory; closing writes Chroma
    assert len(reads) == 1 and edited != first
    settled = answers()  # another state: the snapshot brought forward from the embedding cache
    assert len(reads) == 1 and settled != edited  # the edited note's passages are embedded now
    assert answers() == settled and len(reads) == 1
    (store / EXACT_SNAPSHOT).write_bytes(b"not a snapshot")
    assert answers() == settled and len(reads) == 2  # damaged: read from Chroma, the same answers
    assert answers() == settled and len(reads) == 2  # that state's vectors were kept in turn


def test_a_snapshot_is_read_from_chroma_when_a_changed_notes_vector_is_missing(
    tmp_path: Path, workshop_notes: Path, monkeypatch
) -> None:
    from retrieval_kernel.projections.dense import CACHE_NAME

    notes, store = copied_notes(tmp_path, workshop_notes)
    question = "Who may approve a production deployment?"
    with Workspace(notes, store, lanes=LANES) as workspace:
        workspace.index()
        target = sorted(notes.glob("*.md"))[0]
        add_section(target)
        workspace.refresh()
        expected = workspace.query(question, as_of="2026-10-15").to_json()
    (store / CACHE_NAME).unlink()  # the cache lost the edited note's vectors: bringing forward cannot work
    reads = count_chroma_reads(monkeypatch)
    with Workspace(notes, store, lanes=LANES) as workspace:
        assert workspace.query(question, as_of="2026-10-15", refresh=False).to_json() == expected
    assert len(reads) == 1


_SNAPSHOT_FIRST_CHILD = """
import json, sys
from retrieval_kernel import Workspace
with Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical", "dense")) as ws:
    packet = ws.query(sys.argv[3], as_of="2026-10-15", refresh=False)
    opened = "chromadb" in sys.modules
print(json.dumps({"packet": packet.to_json(), "chromadb_imported": opened}))
"""


def _in_a_new_process(notes: Path, store: Path, question: str) -> dict:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT_FIRST_CHILD, str(notes), str(store), question],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_process_answers_from_the_snapshot_without_importing_chroma(tmp_path: Path, workshop_notes: Path) -> None:
    """The snapshot answers for the state it names: a fresh process's first query neither imports
    chromadb nor opens Chroma, and answers as a process that read the vectors from Chroma does."""
    from retrieval_kernel.projections.dense import EXACT_SNAPSHOT

    notes, store = indexed_copy(tmp_path, workshop_notes)
    question = "Who may approve a production deployment?"
    fast = _in_a_new_process(notes, store, question)
    assert fast["chromadb_imported"] is False
    (store / EXACT_SNAPSHOT).unlink()  # no snapshot: the vectors are read from Chroma
    slow = _in_a_new_process(notes, store, question)
    assert slow["chromadb_imported"] is True
    assert fast["packet"] == slow["packet"]
    assert (store / EXACT_SNAPSHOT).exists()


@pytest.mark.parametrize("damage", ["deleted", "overwritten"])
def test_a_damaged_chroma_store_is_not_hidden_by_the_snapshot(
    tmp_path: Path, workshop_notes: Path, damage: str
) -> None:
    """With Chroma's database gone or overwritten, the snapshot is not taken: Chroma is opened, the
    damage found and the collection rebuilt from the record store, as without a snapshot."""
    notes, store = indexed_copy(tmp_path, workshop_notes)
    with Workspace(notes, store, lanes=LANES) as workspace:
        version = workspace.records.projection("dense").version  # type: ignore[union-attr]
    database = store / "dense" / "chroma.sqlite3"
    if damage == "deleted":
        shutil.rmtree(store / "dense")
    else:
        database.write_bytes(b"\xde\xad\xbe\xef" * 4096)
    result = _in_a_new_process(notes, store, "Who may approve a production deployment?")
    assert result["chromadb_imported"] is True
    dense = next(lane for lane in json.loads(result["packet"])["lanes"] if lane["name"] == "dense")
    assert dense["status"] == "ok" and dense["index_version"] > version


def test_a_sync_after_a_snapshot_first_answer_patches_the_same_vectors(
    tmp_path: Path, workshop_notes: Path, monkeypatch
) -> None:
    """Vectors taken from the snapshot before Chroma was opened are the collection's: a later sync
    (which opens Chroma) patches them in place, and the answers equal a fresh read's."""
    from retrieval_kernel.projections.dense import EXACT_SNAPSHOT

    notes, store = indexed_copy(tmp_path, workshop_notes)
    question = "Who approves deployments on the pager rota?"
    reads = count_chroma_reads(monkeypatch)
    with Workspace(notes, store, lanes=LANES) as workspace:
        workspace.query(question, as_of="2026-10-15", refresh=False)
        assert workspace.dense._checked is None  # answered without opening Chroma
        target = sorted(notes.glob("*.md"))[0]
        add_section(target)
        workspace.index()  # a sync: opens and verifies Chroma, patches the vectors in memory
        patched = workspace.query(question, as_of="2026-10-15", refresh=False).to_json()
    assert reads == []
    (store / EXACT_SNAPSHOT).unlink()
    with Workspace(notes, store, lanes=LANES) as workspace:
        assert workspace.query(question, as_of="2026-10-15", refresh=False).to_json() == patched


_OPENS_CHROMA_DURING_WARM_UP = """
import sys, time
from retrieval_kernel.projections.embedding import warm_up_in_background
from retrieval_kernel import Workspace
warm_up_in_background(import_chroma=True)  # as %load_ext does when a Chroma server is configured
time.sleep(float(sys.argv[3]))  # the warm-up is loading the model, or importing chromadb
with Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical", "dense")) as ws:
    packet = ws.query("Who may approve a production deployment?", as_of="2026-10-15", refresh=False)
print({lane.name: lane.status for lane in packet.lanes}["dense"])
"""


@pytest.mark.parametrize("pause", [0.0, 0.6, 1.2])
def test_a_first_query_that_opens_chroma_during_the_warm_up_finishes(
    tmp_path: Path, workshop_notes: Path, pause: float
) -> None:
    """No snapshot: the first query imports and opens Chroma while the warm-up thread may be importing
    it too. The two threads take the import locks in one order (a deadlock hung this query once)."""
    import subprocess
    import sys

    from retrieval_kernel.projections.dense import EXACT_SNAPSHOT

    notes, store = indexed_copy(tmp_path, workshop_notes)
    (store / EXACT_SNAPSHOT).unlink()
    done = subprocess.run(
        [sys.executable, "-c", _OPENS_CHROMA_DURING_WARM_UP, str(notes), str(store), str(pause)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "ok"


def test_a_snapshot_brought_forward_past_many_notes_is_saved_at_the_new_state(
    tmp_path: Path, workshop_notes: Path, monkeypatch
) -> None:
    """Syncs patch the vectors in memory, not the snapshot: a new process that brings the snapshot
    forward past RESAVE_SNAPSHOT_AT notes saves it at the state, so the next one loads it as it is."""
    from retrieval_kernel.projections import dense as dense_module
    from retrieval_kernel.projections.dense import EXACT_SNAPSHOT, DenseProjection

    notes, store = copied_notes(tmp_path, workshop_notes)
    question = "Who approves deployments on the pager rota?"

    def snapshot_high_water() -> int:
        with np.load(store / EXACT_SNAPSHOT, allow_pickle=False) as stored:
            return json.loads(json.loads(stored["meta"].tobytes().decode())["tag"])[3]

    with Workspace(notes, store, lanes=LANES) as workspace:
        workspace.index()
        built = snapshot_high_water()
        for target in sorted(notes.glob("*.md"))[:3]:
            add_section(target, "\n## Pager\n\nThe pager rota approves.\n")
        workspace.index()
        state = workspace.records.projection("dense").high_water  # type: ignore[union-attr]
        expected = workspace.query(question, as_of="2026-10-15", refresh=False).to_json()
    assert snapshot_high_water() == built < state  # the syncs patched memory only
    brought: list[int] = []
    original = DenseProjection._brought_forward
    monkeypatch.setattr(DenseProjection, "_brought_forward", lambda *a: brought.append(1) or original(*a))
    monkeypatch.setattr(dense_module, "RESAVE_SNAPSHOT_AT", 5)  # three notes: not saved
    with Workspace(notes, store, lanes=LANES) as workspace:
        assert workspace.query(question, as_of="2026-10-15", refresh=False).to_json() == expected
    assert brought == [1] and snapshot_high_water() == built
    monkeypatch.setattr(dense_module, "RESAVE_SNAPSHOT_AT", 2)  # three notes: saved at the state
    with Workspace(notes, store, lanes=LANES) as workspace:
        assert workspace.query(question, as_of="2026-10-15", refresh=False).to_json() == expected
    assert brought == [1, 1] and snapshot_high_water() == state
    with Workspace(notes, store, lanes=LANES) as workspace:  # loaded as it is: nothing brought forward
        assert workspace.query(question, as_of="2026-10-15", refresh=False).to_json() == expected
    assert brought == [1, 1]


def rounded_top_reference(scores: np.ndarray, count: int) -> list[tuple[int, float]]:
    """What search did before it rounded only the rows near the top: round every score, then keep
    the ``count`` highest and every row tied at the last place."""
    rounded = np.round(scores, 6)
    threshold = np.sort(rounded)[rounded.size - count]
    return [(int(i), float(rounded[i])) for i in np.flatnonzero(rounded >= threshold)]


@pytest.mark.parametrize("seed", range(6))
def test_rounding_only_the_top_keeps_the_same_rows_and_ties(seed: int) -> None:
    """Scores a hair apart round to ties (the last place's tie must keep every tied row), scores
    just below the last place may round up into it: the same rows and rounded scores either way."""
    rng = np.random.default_rng(seed)
    base = rng.choice(np.linspace(0.2, 0.9, 40), size=3_000)  # many exact ties
    scores = (base + rng.choice([0, 1, -1, 4e-7, -4e-7, 6e-7, 1.4e-6], size=base.size) * 1e-6).astype("float32")
    for count in (1, 7, 50, 400, 3_000):
        assert sorted(exact_module.top_rounded(scores, count)) == rounded_top_reference(scores, count), count


def test_a_search_leaves_blas_thread_counts_as_it_found_them() -> None:
    from threadpoolctl import threadpool_info

    def counts() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = counts()
    exact = ExactVectors(["a#p", "b#p"], ["a", "b"], unit(np.eye(2, 8)))
    assert [pid for pid, _ in exact.search(unit(np.ones((1, 8)))[0], 1)] in (["a#p", "b#p"], ["a#p"], ["b#p"])
    assert counts() == before
