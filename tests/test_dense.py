"""The dense lane: the two embedders, paraphrase retrieval, the embedding cache, edits, lane honesty."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

import retrieval_kernel.projections.embedding as embedding
from retrieval_kernel import Workspace
from retrieval_kernel.output.packet import LaneReport, Packet
from retrieval_kernel.pipeline.lanes import DENSE_MIN_COSINE
from retrieval_kernel.projections.dense import DenseProjection, PassageEmbeddingFunction
from retrieval_kernel.projections.embedding import DIMENSION, OnnxEmbedder, TorchEmbedder

AS_OF = "2026-10-15"

TEXTS = [
    "The cat sat on the mat.",
    "Quarterly revenue grew by twelve percent.",
    "Replace the brake pads every 40,000 km.",
    "How do I reset my password?",
    "Photosynthesis converts light into chemical energy.",
    "The train to Berlin leaves at noon.",
    "Store the vaccine between two and eight degrees.",
    "Our release freezes on Friday afternoon.",
    "Penguins cannot fly but swim well.",
    "Add two cups of flour and a pinch of salt.",
    "The contract expires at the end of March.",
    "Use a torque wrench on the wheel nuts.",
    "Rainfall was heavier than usual this autumn.",
    "Backups run nightly to the offsite bucket.",
    "She plays the violin in an orchestra.",
    "The museum opens on Sundays.",
    "Mount the sensor bracket with two screws.",
    "Interest rates rose again this year.",
    "Water the tomatoes every morning.",
    "hello world",
]

# Five notes on unrelated topics whose words barely overlap.
TOPICS = {
    "vehicle.md": "# Automobile maintenance\n\n"
    "Service the vehicle engine regularly: change the motor oil, rotate the tyres and inspect the brakes.\n",
    "garden.md": "# Gardening\n\nPlant tomatoes in spring, water the seedlings daily and prune the basil.\n",
    "bread.md": "# Baking\n\nKnead sourdough with flour, water and salt, then let the loaves rise overnight.\n",
    "stars.md": "# Astronomy\n\nObserve planets and distant galaxies through a telescope on clear nights.\n",
    "money.md": "# Household finances\n\nTrack monthly spending, build savings and pay down the mortgage interest.\n",
}
VEHICLE = "vehicle#automobile-maintenance"
PARAPHRASE = "car repair"
OFF_TOPIC = "zebra quantum"

TWO_SECTIONS = (
    "# Pumps\n\n## Intake\n\nThe intake filter is cleaned weekly.\n\n"
    "## Outlet\n\nThe outlet valve is greased monthly.\n"
)


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def lane(packet: Packet, name: str) -> LaneReport:
    return next(report for report in packet.lanes if report.name == name)


def dense_ids(ws: Workspace, query: str) -> list[str]:
    state = ws.records.projection("dense")
    assert state is not None
    return [hit.passage_id for hit in ws.dense.search(query, 50, state)]


# ---------------------------------------------------------------- the embedders


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture(scope="module")
def torch_embedder() -> TorchEmbedder:
    return TorchEmbedder()


@pytest.fixture(scope="module")
def vectors(onnx: OnnxEmbedder, torch_embedder: TorchEmbedder) -> tuple[np.ndarray, np.ndarray]:
    return onnx.embed(TEXTS), torch_embedder.embed(TEXTS)


def test_both_embedders_give_normalised_float32_rows(vectors: tuple[np.ndarray, np.ndarray]) -> None:
    for matrix in vectors:
        assert matrix.shape == (len(TEXTS), DIMENSION) == (20, 384)
        assert matrix.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
        assert np.isfinite(matrix).all()


def test_int8_onnx_agrees_with_fp32_torch(vectors: tuple[np.ndarray, np.ndarray]) -> None:
    ours, reference = vectors
    paired = (ours * reference).sum(axis=1)
    assert paired.mean() > 0.98
    assert paired.min() > 0.95
    # row i of one is the nearest neighbour of row i of the other: the pairing is not accidental
    assert (np.argmax(ours @ reference.T, axis=1) == np.arange(len(TEXTS))).all()
    # and different texts really are different vectors
    off_diagonal = (reference @ reference.T)[~np.eye(len(TEXTS), dtype=bool)]
    assert off_diagonal.max() < 0.9


def test_embedders_are_deterministic(onnx: OnnxEmbedder, torch_embedder: TorchEmbedder, vectors) -> None:
    ours, reference = vectors
    np.testing.assert_array_equal(onnx.embed(TEXTS), ours)
    np.testing.assert_array_equal(onnx.embed(list(TEXTS)), onnx.embed(tuple(TEXTS)))
    np.testing.assert_allclose(torch_embedder.embed(TEXTS), reference, atol=1e-6)


def test_onnx_row_order_follows_input_order(onnx: OnnxEmbedder, vectors) -> None:
    ours, _ = vectors
    reversed_rows = onnx.embed(TEXTS[::-1])
    assert (np.argmax(reversed_rows @ ours.T, axis=1) == np.arange(len(TEXTS))[::-1]).all()


def test_onnx_text_alone_is_close_to_the_same_text_in_a_batch(onnx: OnnxEmbedder, vectors) -> None:
    # Dynamic int8 quantisation scales activations per batch, so this is close, not equal.
    ours, _ = vectors
    alone = np.stack([onnx.embed([text])[0] for text in TEXTS])
    assert (alone * ours).sum(axis=1).min() > 0.97


def test_onnx_single_worker_gives_the_same_vectors(vectors) -> None:
    ours, _ = vectors
    np.testing.assert_allclose(OnnxEmbedder(workers=1).embed(TEXTS), ours, atol=1e-5)


def test_onnx_empty_input_gives_an_empty_matrix(onnx: OnnxEmbedder) -> None:
    for empty in ([], ()):
        result = onnx.embed(empty)
        assert result.shape == (0, DIMENSION)
        assert result.dtype == np.float32


def test_torch_empty_input_gives_an_empty_matrix(torch_embedder: TorchEmbedder) -> None:
    result = torch_embedder.embed([])
    assert result.shape == (0, DIMENSION)


def test_load_embedder_rejects_unknown_names() -> None:
    with pytest.raises(embedding.LaneUnavailableError, match="unknown embedder"):
        embedding.load_embedder("word2vec")


def test_the_onnx_embedder_is_loaded_once_per_process_and_warmed_up_in_the_background() -> None:
    thread = embedding.warm_up_in_background()  # what %load_ext starts
    thread.join(timeout=120)
    assert not thread.is_alive()
    first, second = embedding.load_embedder(), embedding.load_embedder()
    assert isinstance(first, embedding.OnnxEmbedder) and first is not second  # each may be patched alone
    assert first._sessions is second._sessions  # one model load per process
    assert len(first._sessions) == first.workers  # the warm-up loaded every worker's session
    np.testing.assert_allclose(first.embed(TEXTS), OnnxEmbedder(workers=1).embed(TEXTS), atol=0)


RACE = """
from retrieval_kernel.projections.embedding import warm_up_in_background
warm_up_in_background(import_chroma=True)  # %load_ext with a Chroma server; a first %context imports it too
from retrieval_kernel.projections.chroma_function import PassageEmbeddingFunction
from retrieval_kernel.projections.dense import _chroma_errors
_chroma_errors()
print("imported", PassageEmbeddingFunction.__name__)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_a_first_dense_query_during_the_background_warm_up_imports_chromadb_whole(attempt: int) -> None:
    """A fresh interpreter: chromadb half-imported by the warm-up thread must not be met by the query's
    import (it failed with "partially initialized module 'chromadb.utils.embedding_functions'")."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "imported PassageEmbeddingFunction"


# ---------------------------------------------------------------- one shared, read-only topic workspace


@pytest.fixture(scope="module")
def topics(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("dense-topics")
    notes = write(root / "notes", TOPICS)
    ws = Workspace(notes, root / "store")
    ws.index()
    yield ws
    ws.close()


def test_paraphrase_is_found_by_the_dense_lane_only(topics: Workspace) -> None:
    with Workspace(topics.notes_dir, topics.store_dir, judge_answers=False) as lanes_only:  # the lane, not the judge
        packet = lanes_only.query(PARAPHRASE, as_of=AS_OF)
    assert lane(packet, "lexical").status == "empty"
    assert lane(packet, "lexical").candidates == 0
    assert lane(packet, "identity").status == "empty"
    dense = lane(packet, "dense")
    assert dense.status == "ok"
    assert dense.candidates >= 1
    assert dense.index_version == 1
    assert not packet.abstained
    first = packet.evidence[0]
    assert first.id == VEHICLE
    assert [hit.lane for hit in first.retrieved_by] == ["dense"]
    assert first.retrieved_by[0].rank == 1
    assert first.retrieved_by[0].score >= DENSE_MIN_COSINE


def test_paraphrase_with_lexical_only_abstains(topics: Workspace) -> None:
    packet = topics.query(PARAPHRASE, as_of=AS_OF, lanes=["lexical"])
    assert packet.abstained
    assert packet.abstention_reason == "no_match"


def test_dense_scores_are_cosines_sorted_best_first(topics: Workspace) -> None:
    state = topics.records.projection("dense")
    assert state is not None
    hits = topics.dense.search(PARAPHRASE, 50, state)
    assert len(hits) == len(TOPICS)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    query = topics.dense.embed_query(PARAPHRASE)
    vehicle = topics.records.passages([VEHICLE])[VEHICLE].passage
    expected = float(topics.dense.vectors_for([vehicle])[vehicle.sha256] @ query)
    assert hits[0].passage_id == VEHICLE
    assert hits[0].score == pytest.approx(expected, abs=1e-5)
    assert [h.passage_id for h in topics.dense.search(PARAPHRASE, 2, state)] == [h.passage_id for h in hits[:2]]


def test_off_topic_query_abstains_below_threshold(topics: Workspace) -> None:
    packet = topics.query(OFF_TOPIC, as_of=AS_OF, lanes=["lexical", "dense"])
    assert packet.abstained
    assert packet.abstention_reason == "below_threshold"
    dense = lane(packet, "dense")
    assert dense.status == "empty"
    assert dense.candidates == 0
    assert dense.reason is not None
    assert "threshold" in dense.reason
    assert f"{DENSE_MIN_COSINE:.2f}" in dense.reason


def test_threshold_minus_one_lets_the_off_topic_query_through_the_lane_not_into_the_packet(topics: Workspace) -> None:
    with Workspace(topics.notes_dir, topics.store_dir, dense_min_cosine=-1.0) as loose:
        packet = loose.query(OFF_TOPIC, as_of=AS_OF, lanes=["lexical", "dense"])
    assert lane(packet, "dense").status == "ok"
    assert lane(packet, "dense").candidates == len(TOPICS)
    # every note got through the lane; none answers the question, so nothing is admitted
    assert packet.abstained and packet.abstention_reason == "below_threshold"
    assert packet.evidence == ()
    assert packet.exclusions["weak_match"] == len(TOPICS)
    assert packet.confidence is not None and packet.confidence < 0.1


def test_chroma_gets_our_embedding_function_never_its_default(topics: Workspace) -> None:
    dense = topics.dense
    state = topics.records.projection("dense")
    assert state is not None
    collection = dense._collection(state.version)
    assert collection._embedding_function is dense.function
    assert isinstance(collection._embedding_function, PassageEmbeddingFunction)
    assert isinstance(collection.configuration["embedding_function"], PassageEmbeddingFunction)
    # what Chroma persisted names our function, so a reopened collection rebuilds it, not the default
    persisted = dense._get_client().get_collection(collection.name).configuration_json["embedding_function"]
    assert persisted["name"] == PassageEmbeddingFunction.name() == "retrieval_kernel_minilm"
    assert persisted["config"] == {"kind": "onnx-int8"}
    assert collection.count() == len(TOPICS)


def test_default_embedding_function_is_never_called(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from chromadb.utils import embedding_functions

    def forbidden(self, input):
        raise AssertionError("Chroma's default embedding function was used")

    monkeypatch.setattr(embedding_functions.DefaultEmbeddingFunction, "__call__", forbidden)
    notes = write(tmp_path / "notes", {"vehicle.md": TOPICS["vehicle.md"]})
    with Workspace(notes, tmp_path / "store", lanes=("dense",)) as ws:
        ws.index()
        assert "dense" not in ws.lane_errors
        packet = ws.query(PARAPHRASE, as_of=AS_OF)
    assert lane(packet, "dense").status == "ok" and lane(packet, "dense").candidates == 1


def test_creating_a_projection_turns_chroma_telemetry_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    DenseProjection(tmp_path / "store")
    assert os.environ["ANONYMIZED_TELEMETRY"] == "False"
    assert os.environ["HF_HUB_OFFLINE"] == "1"


# ---------------------------------------------------------------- the embedding cache


@pytest.fixture
def pumps(tmp_path: Path):
    notes = write(tmp_path / "notes", {"pumps.md": TWO_SECTIONS, "vehicle.md": TOPICS["vehicle.md"]})
    ws = Workspace(notes, tmp_path / "store", lanes=("lexical", "dense"))
    yield ws
    ws.close()


def collection_vectors(ws: Workspace) -> dict[str, np.ndarray]:
    state = ws.records.projection("dense")
    assert state is not None
    stored = ws.dense._collection(state.version).get(include=["embeddings"])
    return {pid: np.asarray(vector) for pid, vector in zip(stored["ids"], stored["embeddings"], strict=True)}


def test_embedding_cache_embeds_only_what_changed(pumps: Workspace) -> None:
    notes = pumps.notes_dir
    pumps.index()
    assert pumps.dense.embedded_last_sync == 3  # intake, outlet, vehicle
    before = collection_vectors(pumps)
    assert set(before) == {"pumps#intake", "pumps#outlet", VEHICLE}

    pumps.index()  # nothing changed
    assert pumps.dense.embedded_last_sync == 0

    (notes / "pumps.md").write_text(TWO_SECTIONS.replace("greased monthly", "greased every fortnight"))
    pumps.index()
    assert pumps.dense.embedded_last_sync == 1  # only the outlet passage changed
    after = collection_vectors(pumps)
    assert set(after) == set(before)
    np.testing.assert_array_equal(after["pumps#intake"], before["pumps#intake"])  # cache hit, same vector
    np.testing.assert_array_equal(after[VEHICLE], before[VEHICLE])
    assert float(after["pumps#outlet"] @ before["pumps#outlet"]) < 0.9999

    (notes / "pumps.md").write_text(TWO_SECTIONS)  # back to the original text: both vectors are cached
    pumps.index()
    assert pumps.dense.embedded_last_sync == 0
    np.testing.assert_array_equal(collection_vectors(pumps)["pumps#outlet"], before["pumps#outlet"])


def test_a_refresh_embeds_an_edit_early_once_note_by_note_and_the_sync_takes_those_vectors(
    monkeypatch: pytest.MonkeyPatch, pumps: Workspace
) -> None:
    notes = pumps.notes_dir
    pumps.index()
    before = collection_vectors(pumps)
    embedder = pumps.dense.function.embedder
    calls: list[tuple[str, list[str]]] = []

    def spy(texts: list[str]) -> np.ndarray:
        calls.append((threading.current_thread().name, list(texts)))
        return type(embedder).embed(embedder, texts)

    monkeypatch.setattr(embedder, "embed", spy)
    (notes / "pumps.md").write_text(TWO_SECTIONS.replace("greased monthly", "greased every fortnight"))
    (notes / "vehicle.md").write_text(TOPICS["vehicle.md"] + "\nCheck the tyre pressure monthly.\n")
    pumps.index()
    assert calls == [  # as the sync would embed them: note by note, in path order
        ("rk-embed-early_0", ["## Outlet\n\nThe outlet valve is greased every fortnight."]),
        ("rk-embed-early_0", [TOPICS["vehicle.md"].strip() + "\n\nCheck the tyre pressure monthly."]),
    ]  # on the early thread, beside the lexical sync
    assert pumps.dense.embedded_last_sync == 2
    after = collection_vectors(pumps)
    np.testing.assert_array_equal(after["pumps#intake"], before["pumps#intake"])
    for pid, texts in zip(("pumps#outlet", VEHICLE), calls, strict=True):  # what the sync alone would store
        np.testing.assert_array_equal(after[pid], type(embedder).embed(embedder, texts[1])[0])


def test_a_failed_early_embedding_is_embedded_again_by_the_sync(
    monkeypatch: pytest.MonkeyPatch, pumps: Workspace
) -> None:
    pumps.index()
    embedder = pumps.dense.function.embedder
    real = type(embedder).embed

    def early_fails(texts: list[str]) -> np.ndarray:
        if threading.current_thread().name.startswith("rk-embed-early"):
            raise RuntimeError("no early vectors")
        return real(embedder, texts)

    monkeypatch.setattr(embedder, "embed", early_fails)
    (pumps.notes_dir / "pumps.md").write_text(TWO_SECTIONS.replace("greased monthly", "greased every fortnight"))
    pumps.index()
    assert pumps.dense.embedded_last_sync == 1
    assert pumps.lane_errors == {}
    assert dense_ids(pumps, "outlet valve greased every fortnight")[0] == "pumps#outlet"


def test_cache_survives_a_new_workspace_and_a_rebuild(pumps: Workspace, tmp_path: Path) -> None:
    pumps.index()
    assert pumps.dense.embedded_last_sync == 3
    with Workspace(pumps.notes_dir, pumps.store_dir, lanes=("lexical", "dense")) as again:
        state = again.records.projection("dense")
        assert state is not None
        rebuilt = again.dense.rebuild(again.records, state.version + 1)
        assert rebuilt.version == state.version + 1
        assert again.dense.embedded_last_sync == 0
        assert dense_ids(again, "intake filter")[0] == "pumps#intake"


def test_identical_text_in_two_notes_is_embedded_once(tmp_path: Path) -> None:
    same = "# Same\n\nIdentical words in two different files.\n"
    notes = write(tmp_path / "notes", {"one.md": same, "two.md": same})
    with Workspace(notes, tmp_path / "store", lanes=("dense",)) as ws:
        ws.index()
        assert ws.dense.embedded_last_sync == 1
        assert sorted(collection_vectors(ws)) == ["one#same", "two#same"]


# ---------------------------------------------------------------- the projection follows edits and deletes


def test_dense_projection_follows_deletes_adds_and_renames(pumps: Workspace) -> None:
    notes = pumps.notes_dir
    pumps.index()
    assert "pumps#intake" in dense_ids(pumps, "intake filter")

    (notes / "pumps.md").unlink()
    pumps.index()
    found = dense_ids(pumps, "intake filter cleaned weekly")
    assert found == [VEHICLE]  # only the surviving note
    assert not any(pid.startswith("pumps#") for pid in found)
    assert set(collection_vectors(pumps)) == {VEHICLE}

    write(notes, {"boats.md": "# Sailing\n\nHoist the mainsail and trim the jib when the wind rises.\n"})
    pumps.index()
    assert dense_ids(pumps, "yacht rigging in a breeze")[0] == "boats#sailing"
    packet = pumps.query("hoist the mainsail when the wind rises", as_of=AS_OF, lanes=["dense"])
    assert packet.evidence[0].id == "boats#sailing"

    write(notes, {"boats.md": "# Rowing\n\nPull the oars together and keep the stroke rate steady.\n"})
    pumps.index()
    ids = dense_ids(pumps, "yacht rigging in a breeze")
    assert "boats#sailing" not in ids
    assert "boats#rowing" in ids
    assert set(collection_vectors(pumps)) == {VEHICLE, "boats#rowing"}


def test_deleting_every_note_empties_the_dense_lane(pumps: Workspace) -> None:
    pumps.index()
    for path in list(pumps.notes_dir.glob("*.md")):
        path.unlink()
    pumps.index()
    packet = pumps.query("anything at all", as_of=AS_OF)
    assert packet.abstained
    assert packet.abstention_reason == "empty_store"
    dense = lane(packet, "dense")
    # an empty collection is an empty lane, not a broken one
    assert (dense.status, dense.reason) == ("empty", None)
    assert dense_ids(pumps, "anything at all") == []


# ---------------------------------------------------------------- lane honesty


def test_embedder_that_cannot_load_leaves_lexical_answering(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(self: TorchEmbedder) -> None:
        raise RuntimeError("boom: weights are corrupt")

    monkeypatch.setattr(embedding.TorchEmbedder, "__init__", broken)
    notes = write(tmp_path / "notes", {"pumps.md": TWO_SECTIONS})
    with Workspace(notes, tmp_path / "store", embedder="torch") as ws:
        ws.index()  # does not raise
        assert "boom" in ws.lane_errors["dense"]
        packet = ws.query("intake filter", as_of=AS_OF)
    assert not packet.abstained
    assert packet.evidence[0].id == "pumps#intake"
    assert [hit.lane for hit in packet.evidence[0].retrieved_by] == ["lexical"]
    assert lane(packet, "lexical").status == "ok"
    dense = lane(packet, "dense")
    assert dense.status == "unavailable"
    assert dense.candidates == 0
    assert dense.reason is not None
    assert "RuntimeError" in dense.reason
    assert "boom: weights are corrupt" in dense.reason


def test_query_time_embedding_failure_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch, pumps: Workspace) -> None:
    pumps.index()
    assert "dense" not in pumps.lane_errors

    def broken(texts):
        raise RuntimeError("onnx session died")

    monkeypatch.setattr(pumps.dense.function.embedder, "embed", broken)
    packet = pumps.query("intake filter", as_of=AS_OF)
    assert packet.evidence[0].id == "pumps#intake"
    dense = lane(packet, "dense")
    assert dense.status == "unavailable"
    assert dense.reason is not None
    assert "onnx session died" in dense.reason
    assert lane(packet, "lexical").status == "ok"


def test_only_dense_and_it_fails_abstains_as_unavailable(monkeypatch: pytest.MonkeyPatch, pumps: Workspace) -> None:
    pumps.index()

    def broken(texts):
        raise RuntimeError("onnx session died")

    monkeypatch.setattr(pumps.dense.function.embedder, "embed", broken)
    packet = pumps.query("intake filter", as_of=AS_OF, lanes=["dense"])
    assert packet.abstained
    assert packet.abstention_reason == "index_unavailable"


def test_unrefreshed_edit_marks_the_dense_lane_stale(pumps: Workspace) -> None:
    pumps.index()
    fresh = pumps.query("intake filter", as_of=AS_OF, refresh=False)
    assert lane(fresh, "dense").status == "ok"
    assert lane(fresh, "dense").lag == 0

    (pumps.notes_dir / "pumps.md").write_text(TWO_SECTIONS + "\n## Drain\n\nThe drain plug is checked yearly.\n")
    packet = pumps.query("intake filter", as_of=AS_OF, refresh=False)
    assert packet.projection == "stale"
    assert lane(packet, "dense").status == "stale"
    assert lane(packet, "lexical").status == "stale"
    assert packet.evidence  # the last good index still answers


def test_dense_projection_behind_the_record_store_reports_its_lag(pumps: Workspace) -> None:
    pumps.index()
    (pumps.notes_dir / "pumps.md").write_text(TWO_SECTIONS + "\n## Drain\n\nThe drain plug is checked yearly.\n")
    (pumps.notes_dir / "vehicle.md").unlink()
    pumps.lanes = ("lexical",)
    pumps.index()  # the record store and the lexical projection move on; the dense projection does not
    packet = pumps.query("intake filter", as_of=AS_OF, refresh=False, lanes=["lexical", "dense"])
    assert packet.projection == "consistent"
    assert lane(packet, "lexical").status == "ok"
    assert lane(packet, "lexical").lag == 0
    dense = lane(packet, "dense")
    assert dense.status == "stale"
    assert dense.lag == 2
    assert dense.high_water is not None
    assert dense.high_water + 2 == pumps.records.high_water()

    pumps.lanes = ("lexical", "dense")
    packet = pumps.query("intake filter", as_of=AS_OF, lanes=["lexical", "dense"])  # answers first
    dense = lane(packet, "dense")
    assert (packet.projection, dense.status, dense.lag) == ("stale", "stale", 2)
    assert dense.reason is not None and "pumps.md" in dense.reason  # named: not embedded yet
    pumps.flush_writes()
    packet = pumps.query("intake filter", as_of=AS_OF, lanes=["lexical", "dense"])
    assert (lane(packet, "dense").status, lane(packet, "dense").lag) == ("ok", 0)
    assert "pumps#drain" in dense_ids(pumps, "drain plug")
    assert VEHICLE not in dense_ids(pumps, "drain plug")


def test_dense_lane_before_any_dense_index_is_unavailable(tmp_path: Path) -> None:
    notes = write(tmp_path / "notes", {"pumps.md": TWO_SECTIONS})
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as ws:
        ws.index()
        packet = ws.query("intake filter", as_of=AS_OF, lanes=["lexical", "dense"], refresh=False)
        assert not ws.lane("dense").built  # asking did not build it behind our back
    assert packet.evidence[0].id == "pumps#intake"
    dense = lane(packet, "dense")
    assert dense.status == "unavailable"
    assert dense.reason is not None
    assert "not been built" in dense.reason
    assert not (tmp_path / "store" / "dense").exists()


def test_load_ext_imports_chroma_in_the_warm_up_only_for_a_chroma_server(monkeypatch, tmp_path: Path) -> None:
    """Embedded, a first query answers from the snapshot without Chroma; a server needs it on every query."""
    import retrieval_kernel
    from retrieval_kernel.settings import ENV_URL

    monkeypatch.chdir(tmp_path)  # no pyproject.toml setting chroma
    monkeypatch.delenv(ENV_URL, raising=False)
    assert retrieval_kernel._chroma_server_configured() is False
    monkeypatch.setenv(ENV_URL, "http://localhost:8000")
    assert retrieval_kernel._chroma_server_configured() is True
    monkeypatch.setenv(ENV_URL, "ftp://nowhere")  # a bad setting is left for %context to report
    assert retrieval_kernel._chroma_server_configured() is False
