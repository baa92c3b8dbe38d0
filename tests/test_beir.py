"""BEIR runs through the workspace: data loading, the RUN.json shape, metrics and the CLI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import ir_measures
import pytest
from ir_measures import RR, R, nDCG

from retrieval_kernel.cli import main
from retrieval_kernel.errors import SuiteError
from retrieval_kernel.evaluation.beir import METHODS, evaluate, load_beir, run_beir, write_notes

CORPUS = [
    {"_id": "d1", "title": "Volcanoes", "text": "Magma erupts from volcanoes as lava and ash."},
    {"_id": "d2", "title": "Penguins", "text": "Penguins are flightless seabirds of the southern hemisphere."},
    {"_id": "d3", "title": "Espresso", "text": "Espresso is brewed by forcing hot water through finely ground coffee."},
    {"_id": "d4", "title": "Glaciers", "text": "Glaciers carve valleys as compacted snow turns to ice."},
    {"_id": "d5", "title": "Violins", "text": "A violin has four strings and is played with a bow."},
    {"_id": "d6", "title": "Tides", "text": "The moon's gravity raises ocean tides twice a day."},
    {"_id": "d7", "title": "Sourdough", "text": "Sourdough bread rises with a wild yeast starter."},
    {"_id": "d8", "title": "Comets", "text": "Comets grow bright tails of dust when they near the sun."},
]
QUERIES = [
    {"_id": "q1", "text": "volcanoes lava magma"},
    {"_id": "q2", "text": "penguins flightless seabirds"},
    {"_id": "q3", "text": "espresso coffee brewed"},
    {"_id": "q4", "text": "xyzzy plugh"},  # no shared word: the lexical run is empty
    {"_id": "q5", "text": "violin strings"},  # not judged: dropped
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1), ("q4", "d4", 1)]
SCORES = ("ndcg_at_10", "recall_at_100", "mrr_at_10")


def make_beir(root: Path, gzipped: bool = False, qrels: list[tuple[str, str, int]] = QRELS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    corpus = "".join(json.dumps(row) + "\n" for row in CORPUS)
    if gzipped:
        with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.write(corpus)
    else:
        (root / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in QUERIES), encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in qrels)]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_beir(tmp_path_factory.mktemp("beir") / "tiny")


@pytest.fixture(scope="module")
def full_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_beir(data_dir, tmp_path_factory.mktemp("beir-store"), methods=["lexical", "dense", "hybrid"])


# ---------------------------------------------------------------- loading


def test_load_keeps_only_judged_queries(data_dir: Path) -> None:
    data = load_beir(data_dir)
    assert data.name == "tiny"
    assert set(data.corpus) == {row["_id"] for row in CORPUS}
    assert data.corpus["d1"] == ("Volcanoes", CORPUS[0]["text"])
    assert set(data.queries) == {"q1", "q2", "q3", "q4"}
    assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}, "q4": {"d4": 1}}


def test_load_reads_a_gzipped_corpus(tmp_path: Path, data_dir: Path) -> None:
    gz = make_beir(tmp_path / "gz", gzipped=True)
    assert not (gz / "corpus.jsonl").exists()
    assert load_beir(gz).corpus == load_beir(data_dir).corpus


def test_missing_corpus_is_a_suite_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "nocorpus")
    (root / "corpus.jsonl").unlink()
    with pytest.raises(SuiteError, match="corpus"):
        load_beir(root)
    with pytest.raises(SuiteError, match="corpus"):
        run_beir(root, tmp_path / "store", methods=["lexical"])


def test_missing_qrels_is_a_suite_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "noqrels")
    with pytest.raises(SuiteError, match="qrels"):
        load_beir(root, split="dev")


def test_qrels_naming_an_unknown_query_is_a_suite_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "ghost", qrels=[*QRELS, ("q9", "d1", 1)])
    with pytest.raises(SuiteError, match="q9"):
        load_beir(root)


def test_qrels_with_a_trailing_blank_line_is_read_or_rejected_cleanly(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "blank")
    qrels = root / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    try:
        data = load_beir(root)
    except SuiteError:
        return  # a clear, catchable error is acceptable
    assert set(data.qrels) == {"q1", "q2", "q3", "q4"}


def test_unknown_method_is_a_suite_error(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="bm42"):
        run_beir(data_dir, tmp_path / "store", methods=["lexical", "bm42"])
    assert not (tmp_path / "store").exists()  # rejected before anything was written


def test_every_document_becomes_its_own_note(tmp_path: Path) -> None:
    corpus = {"x.1": ("Dotted", "alpha text"), "x_1": ("Underscored", "beta text"), "x/1": ("Slashed", "gamma text")}
    write_notes(corpus, tmp_path / "notes")
    texts = [path.read_text(encoding="utf-8") for path in sorted((tmp_path / "notes").glob("*.md"))]
    assert len(texts) == 3, "document ids that differ only in punctuation overwrote each other's notes"
    assert any("alpha text" in text for text in texts)


# ---------------------------------------------------------------- run_beir


def test_run_has_the_documented_shape(full_run: dict) -> None:
    assert {"dataset", "split", "methods", "versions"} <= set(full_run)
    assert full_run["dataset"] == "tiny"
    assert full_run["split"] == "test"
    assert full_run["documents"] == len(CORPUS)
    assert full_run["queries"] == 4
    assert set(full_run["methods"]) == {"lexical", "dense", "hybrid"}
    for scores in full_run["methods"].values():
        assert {*SCORES, "per_query", "seconds"} <= set(scores)
        assert all(0.0 <= scores[name] <= 1.0 for name in SCORES)
        assert {"index", "queries", "per_query_ms"} <= set(scores["seconds"])
        assert set(scores["per_query"]) == {"q1", "q2", "q3", "q4"}
        for row in scores["per_query"].values():
            assert set(row) == set(SCORES)
    assert "python" in full_run["versions"]
    json.dumps(full_run)  # RUN.json is plain JSON


def test_obvious_queries_score_perfectly_with_lexical(full_run: dict) -> None:
    per_query = full_run["methods"]["lexical"]["per_query"]
    for qid in ("q1", "q2", "q3"):
        assert per_query[qid] == {"ndcg_at_10": 1.0, "recall_at_100": 1.0, "mrr_at_10": 1.0}


def test_empty_lexical_run_scores_zero_and_is_averaged_in(full_run: dict) -> None:
    lexical = full_run["methods"]["lexical"]
    assert lexical["per_query"]["q4"] == {"ndcg_at_10": 0.0, "recall_at_100": 0.0, "mrr_at_10": 0.0}
    # the mean counts the zero: (1 + 1 + 1 + 0) / 4
    assert lexical["ndcg_at_10"] == 0.75
    assert lexical["recall_at_100"] == 0.75
    assert lexical["mrr_at_10"] == 0.75


def test_dense_and_hybrid_find_the_obvious_documents(full_run: dict) -> None:
    for method in ("dense", "hybrid"):
        per_query = full_run["methods"][method]["per_query"]
        for qid in ("q1", "q2", "q3"):
            assert per_query[qid]["mrr_at_10"] == 1.0, (method, qid)
        # dense ranks every document (threshold -1), so the judged one is always recalled
        assert per_query["q4"]["recall_at_100"] == 1.0


def test_run_on_a_gzipped_corpus_matches(tmp_path: Path, full_run: dict) -> None:
    gz = make_beir(tmp_path / "tiny", gzipped=True)
    run = run_beir(gz, tmp_path / "store", methods=["lexical"])
    assert run["methods"]["lexical"]["per_query"] == full_run["methods"]["lexical"]["per_query"]


def test_methods_name_their_lanes() -> None:
    assert METHODS == {"lexical": ("lexical",), "dense": ("dense",), "hybrid": ("lexical", "dense")}


# ---------------------------------------------------------------- evaluate


def test_evaluate_perfect_ranking_for_one_query() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    scores = evaluate({"q": {"a": 0.9, "b": 0.8, "x": 0.1}}, qrels)
    assert scores["ndcg_at_10"] == pytest.approx(1.0)
    assert scores["recall_at_100"] == pytest.approx(1.0)
    assert scores["mrr_at_10"] == pytest.approx(1.0)
    assert scores["per_query"]["q"]["ndcg_at_10"] == pytest.approx(1.0)


def test_evaluate_counts_recall_and_reciprocal_rank() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"x": 0.9, "a": 0.5}}  # one of two relevant found, first at rank 2
    scores = evaluate(run, qrels)
    assert scores["recall_at_100"] == pytest.approx(0.5)
    assert scores["mrr_at_10"] == pytest.approx(0.5)
    expected = ir_measures.calc_aggregate([nDCG @ 10, R @ 100, RR @ 10], qrels, run)
    assert scores["ndcg_at_10"] == pytest.approx(expected[nDCG @ 10])
    assert scores["recall_at_100"] == pytest.approx(expected[R @ 100])
    assert scores["mrr_at_10"] == pytest.approx(expected[RR @ 10])
    assert 0.0 < scores["ndcg_at_10"] < 1.0


def test_evaluate_scores_a_missing_run_as_zero() -> None:
    qrels = {"hit": {"a": 1}, "miss": {"b": 1}}
    scores = evaluate({"hit": {"a": 1.0}}, qrels)
    assert scores["per_query"]["miss"] == {"ndcg_at_10": 0.0, "recall_at_100": 0.0, "mrr_at_10": 0.0}
    assert scores["ndcg_at_10"] == pytest.approx(0.5)
    assert scores["mrr_at_10"] == pytest.approx(0.5)


# ---------------------------------------------------------------- CLI


def test_cli_beir_writes_the_run(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "RUN.json"
    code = main(["beir", str(data_dir), "--output", str(out), "--methods", "lexical"])
    assert code == 0
    run = json.loads(out.read_text(encoding="utf-8"))
    assert set(run["methods"]) == {"lexical"}
    assert run["methods"]["lexical"]["ndcg_at_10"] == 0.75
    assert "lexical" in capsys.readouterr().out


def test_cli_beir_bad_input_exits_2(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["beir", str(tmp_path / "missing"), "--output", str(tmp_path / "RUN.json")]) == 2
    assert main(["beir", str(data_dir), "--output", str(tmp_path / "RUN.json"), "--methods", "bm42"]) == 2
    assert main(["beir", str(data_dir), "--output", str(tmp_path / "nowhere" / "RUN.json")]) == 2
    assert not (tmp_path / "RUN.json").exists()
    assert "retrieval-kernel beir" in capsys.readouterr().err
