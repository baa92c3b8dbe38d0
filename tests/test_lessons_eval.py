"""The lessons suite runner: frozen inputs, split isolation, per-method metrics, gates, calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_applicability import lesson  # tests/ is on sys.path (rootdir-less test modules)

from retrieval_kernel.applicability import FEATURES, RuleSelector, Thresholds
from retrieval_kernel.cli import main
from retrieval_kernel.errors import FrozenInputChangedError, SuiteError
from retrieval_kernel.evaluation.lessons_calibration import calibrate, fit_weights, objective
from retrieval_kernel.evaluation.lessons_eval import (
    METHODS,
    lessons_gates,
    load_lesson_queries,
    load_lessons_suite,
    method_metrics,
    open_split,
    retrieve,
    run_lessons_suite,
    score_returned,
    write_manifest,
)

WEIGHTS = dict.fromkeys(FEATURES, 0.0) | {"capsule_coverage": 6.0, "clause_coverage": 6.0, "coverage": 2.0}
PARAMS = Thresholds(weights=tuple(WEIGHTS[name] for name in FEATURES), bias=-5.0, min_first=0.5, min_keep=0.5)

GATES = {
    "selector.precision": {"min": 0.9},
    "selector.coverage": {"min": 0.99},
    "selector.critical_misses": {"max": 0},
    "selector.unsafe_results": {"max": 0},
    "selector.no_answer_accuracy": {"min": 0.95},
    "selector.p95_ms": {"max": 50},
}


def _family(name: str) -> dict[str, str]:
    """Four lessons of one family: two conditions of one topic, a universal one, a diagnostic."""
    return {
        f"lessons/{name}/{name}-raw.md": lesson(
            f"{name}-raw",
            f"{name} signatures over the raw body",
            [f"For {name}, compute the HMAC signature over the raw body bytes."],
            applies_when={"signature_input": "raw-body"},
            rule=f"{name}-raw",
            critical=True,
        ),
        f"lessons/{name}/{name}-canonical.md": lesson(
            f"{name}-canonical",
            f"{name} signatures over canonical JSON",
            [f"For {name}, canonicalise the JSON then compute the HMAC signature."],
            applies_when={"signature_input": "canonical-json"},
            rule=f"{name}-canonical",
        ),
        f"lessons/{name}/{name}-rotate.md": lesson(
            f"{name}-rotate",
            f"Rotate {name} secrets with an overlap",
            [f"Accept both the old and the new {name} secret during a rotation overlap."],
            rule=f"{name}-rotate",
        ),
        f"lessons/{name}/{name}-diag.md": lesson(
            f"{name}-diag", f"{name} 401s on staging", [], body=f"{name} returns 401 on staging.", kind="diagnostic"
        ),
    }


def _queries(name: str, split: str) -> str:
    rows = [
        {
            "id": f"{name}-q1",
            "query": f"For {name}, which bytes go into the HMAC signature over the raw body?",
            "conditions": {},
            "needs": [{"group": "raw", "records": [f"{name}-raw"], "critical": True}],
            "unsafe": [f"{name}-canonical"],
            "no_answer": False,
        },
        {
            "id": f"{name}-q2",
            "query": f"How do we rotate {name} secrets with an overlap of old and new?",
            "conditions": {},
            "needs": [{"group": "rotate", "records": [f"{name}-rotate"], "critical": False}],
            "unsafe": [],
            "no_answer": False,
        },
        {
            "id": f"{name}-q3",
            "query": f"Which mTLS certificate bundle should {name} trust at the ingress?",
            "conditions": {},
            "needs": [],
            "unsafe": [],
            "no_answer": True,
        },
    ]
    return "".join(json.dumps({**row, "family": name, "split": split}) + "\n" for row in rows)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A frozen three-family suite: alpha (dev), beta (calibration), gamma (holdout)."""
    root = tmp_path / "lessons-suite"
    files: dict[str, str] = {}
    for name, split in (("alpha", "dev"), ("beta", "calibration"), ("gamma", "holdout")):
        files.update(_family(name))
        files[f"queries/{name}.jsonl"] = _queries(name, split)
    files["splits.json"] = json.dumps({"alpha": "dev", "beta": "calibration", "gamma": "holdout"})
    files["suite.json"] = json.dumps({"name": "tiny", "kind": "lessons", "gates": GATES})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "manifest.json").write_text(json.dumps(write_manifest(root)), encoding="utf-8")
    return root


# ---------------------------------------------------------------- scoring arithmetic


QUERY = {
    "needs": [
        {"group": "a", "records": ["a1", "a2"], "critical": True},
        {"group": "b", "records": ["b1"], "critical": False},
    ],
    "unsafe": ["x"],
    "no_answer": False,
}


def test_score_returned_counts_useful_unsafe_and_misses() -> None:
    outcome = score_returned(QUERY, ["a2", "x", "z"])
    assert outcome["useful"] == ["a2"] and outcome["unsafe"] == ["x"]
    assert outcome["covered"] == ["a"] and outcome["missed"] == ["b"] and outcome["critical_missed"] == []
    assert score_returned(QUERY, [])["critical_missed"] == ["a"]


def test_method_metrics_pool_over_queries() -> None:
    no_answer = {"needs": [], "unsafe": [], "no_answer": True}
    queries = [QUERY, QUERY, no_answer, no_answer]
    outcomes = [
        {**score_returned(QUERY, ["a1", "a2", "b1"]), "ms": 1.0, "pipeline_ms": 5.0, "chars": 300},
        {**score_returned(QUERY, ["x"]), "ms": 3.0, "pipeline_ms": 7.0, "chars": 100},
        {**score_returned(no_answer, []), "ms": 2.0, "pipeline_ms": 6.0, "chars": 0},
        {**score_returned(no_answer, ["a1"]), "ms": 4.0, "pipeline_ms": 8.0, "chars": 50},
    ]
    m = method_metrics(queries, outcomes)
    assert m["precision"] == round(3 / 5, 4)  # useful / returned over every query, no-answer ones included
    assert m["coverage"] == 0.5  # 2 of 4 needs (answerable queries only)
    assert m["critical_misses"] == 1 and m["unsafe_results"] == 1
    assert m["mean_returned"] == 1.25 and m["returned_chars"] == 450
    assert m["no_answer_accuracy"] == 0.5
    assert m["p50_ms"] == 2.5 and m["p95_ms"] == pytest.approx(3.85) and m["pipeline_p95_ms"] == pytest.approx(7.85)


def test_gates_read_the_selector_and_fail_unmeasured_metrics() -> None:
    metrics = {"selector": {"precision": None, "coverage": 1.0}, "dense_top8": {"precision": 0.1}}
    gates = lessons_gates({"selector.precision": {"min": 0.9}, "coverage": {"min": 0.99}}, metrics)
    assert gates["selector.precision"]["passed"] is False and gates["coverage"]["passed"] is True
    with pytest.raises(SuiteError, match="names no metric"):
        lessons_gates({"selector.recall": {"min": 1}}, metrics)


def test_objective_prefers_settings_that_meet_every_target() -> None:
    meets = {
        "precision": 0.91,
        "coverage": 1.0,
        "critical_misses": 0,
        "unsafe_results": 0,
        "no_answer_accuracy": 1.0,
        "mean_returned": 1.0,
    }
    misses = {**meets, "precision": 0.99, "unsafe_results": 1}
    assert objective(meets) > objective(misses)
    assert objective({**meets, "precision": 0.95}) > objective(meets)


def test_fit_weights_separates_the_useful_feature() -> None:
    features = [[float(i % 2), 0.5] for i in range(40)]
    labels = [i % 2 for i in range(40)]
    weights, bias = fit_weights(features, labels)
    assert weights[0] > 1 and bias < 0
    with pytest.raises(SuiteError):
        fit_weights(features, [0] * 40)


def test_fit_weights_is_the_penalised_optimum() -> None:
    """At the returned weights the L2-penalised log-loss (on standardised features) has zero gradient."""
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.normal(size=(300, 3)) * [1.0, 5.0, 0.2] + [0.0, 2.0, -1.0]
    y = (x @ [1.5, -0.3, 4.0] + rng.normal(size=300) > -2.0).astype(int)
    weights, bias = fit_weights(x.tolist(), y.tolist(), l2=2.0)
    mean, std = x.mean(axis=0), x.std(axis=0)
    w_std = np.asarray(weights) * std
    b_std = bias + float((np.asarray(weights) * mean).sum())
    z = (x - mean) / std
    p = 1.0 / (1.0 + np.exp(-(z @ w_std + b_std)))
    assert abs(float((p - y).sum())) < 1e-3  # the intercept is not penalised
    assert np.abs(z.T @ (p - y) + 2.0 * w_std).max() < 1e-3


# ---------------------------------------------------------------- loading, freezing, split isolation


def test_queries_are_read_only_for_the_split(suite: Path) -> None:
    (suite / "queries" / "gamma.jsonl").write_text("not json at all\n", encoding="utf-8")  # holdout: never read
    loaded = load_lessons_suite(suite)
    assert [q["id"] for q in load_lesson_queries(loaded, "dev")] == ["alpha-q1", "alpha-q2", "alpha-q3"]
    with pytest.raises(SuiteError, match="not valid JSON"):
        load_lesson_queries(loaded, "holdout")
    with pytest.raises(SuiteError, match="split must be"):
        load_lesson_queries(loaded, "test")


def test_a_split_indexes_only_its_families(suite: Path) -> None:
    run, inputs = open_split(suite, "calibration", lanes=("lexical",))
    with run:
        modules = {doc.module for doc in run.workspace.records.documents().values()}
        assert modules == {"beta-raw", "beta-canonical", "beta-rotate", "beta-diag"}
        assert inputs is not None and "lessons/gamma/gamma-raw.md" in inputs  # hashed, not indexed


def test_changed_frozen_input_refuses_to_score(suite: Path, capsys) -> None:
    target = suite / "lessons" / "alpha" / "alpha-raw.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")
    with pytest.raises(FrozenInputChangedError, match=r"alpha-raw\.md"):
        run_lessons_suite(suite, "dev", lanes=("lexical",))
    assert main(["eval", str(suite), "--split", "dev", "--lanes", "lexical"]) == 3
    assert "frozen inputs differ" in capsys.readouterr().err


def test_a_new_lesson_file_is_a_change(suite: Path) -> None:
    (suite / "lessons" / "alpha" / "alpha-extra.md").write_text(lesson("alpha-extra", "x", ["y"]), encoding="utf-8")
    with pytest.raises(FrozenInputChangedError, match="alpha-extra"):
        run_lessons_suite(suite, "dev", lanes=("lexical",))


def test_a_manifest_without_suite_json_does_not_freeze_the_gates(suite: Path) -> None:
    manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
    del manifest["files"]["suite.json"]
    (suite / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    receipt = run_lessons_suite(suite, "dev", lanes=("lexical",), selector=RuleSelector(PARAMS))
    assert receipt["inputs"]["manifest_verified"] is True


# ---------------------------------------------------------------- end to end


def test_receipt_has_every_method_and_honest_gates(suite: Path, tmp_path: Path) -> None:
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"selector": PARAMS.to_dict(), "dense_cutoff": 0.4, "split": "calibration"}))
    receipt = run_lessons_suite(suite, "dev", lanes=("lexical",), calibration=calibration)
    assert receipt["kind"] == "lessons" and receipt["split"] == "dev" and receipt["families"] == ["alpha"]
    assert receipt["inputs"]["manifest_verified"] is True
    assert receipt["config"]["thresholds"]["min_first"] == 0.5 and receipt["config"]["dense_cutoff"] == 0.4
    assert set(receipt["metrics"]) == set(METHODS)
    keys = {"precision", "coverage", "critical_misses", "unsafe_results", "mean_returned", "returned_chars"}
    keys |= {"no_answer_accuracy", "p50_ms", "p95_ms", "pipeline_p50_ms", "pipeline_p95_ms"}
    for values in receipt["metrics"].values():
        assert keys <= set(values)
    selector = receipt["metrics"]["selector"]
    assert selector["coverage"] == 1.0 and selector["unsafe_results"] == 0 and selector["no_answer_accuracy"] == 1.0
    rows = {row["id"]: row for row in receipt["questions"]}
    assert rows["alpha-q1"]["selector"]["returned"] == ["alpha-raw"]
    assert rows["alpha-q3"]["selector"]["returned"] == []
    assert rows["alpha-q1"]["hybrid_top8"]["returned"][0] == "alpha-raw"
    assert receipt["metrics"]["hybrid_top8"]["no_answer_accuracy"] == 0.0  # a fixed count always answers
    assert receipt["gates"]["selector.p95_ms"]["passed"] is True
    assert receipt["passed"] == all(g["passed"] for g in receipt["gates"].values())


def test_cli_eval_writes_receipt_and_exit_code_follows_gates(suite: Path, tmp_path: Path, capsys) -> None:
    config = json.loads((suite / "suite.json").read_text(encoding="utf-8"))
    config["gates"]["selector.mean_returned"] = {"max": 0}  # impossible: the selector answers something
    (suite / "suite.json").write_text(json.dumps(config), encoding="utf-8")
    (suite / "manifest.json").write_text(json.dumps(write_manifest(suite)), encoding="utf-8")
    output = tmp_path / "receipt.json"
    code = main(["eval", str(suite), "--split", "dev", "--lanes", "lexical", "--output", str(output)])
    assert code == 1
    printed = capsys.readouterr().out
    assert "A GATE FAILED" in printed and "selector" in printed and "dense_top25" in printed
    receipt = json.loads(output.read_text(encoding="utf-8"))
    assert receipt["gates"]["selector.mean_returned"]["passed"] is False
    assert main(["eval", str(suite), "--split", "dev", "--questions", str(output)]) == 2


@pytest.mark.slow
def test_calibrate_and_dense_baselines_with_the_dense_lane(suite: Path) -> None:
    run, _ = open_split(suite, "calibration")
    with run:
        retrieved = {q["id"]: retrieve(run.workspace, q["query"]) for q in run.queries}
        chosen = calibrate(run.queries, retrieved)
    assert len(retrieved["beta-q1"].dense) == 4  # the dense baseline ranks every note, no floor
    assert set(chosen["selector"]["weights"]) == set(FEATURES)
    assert 0 < chosen["selector"]["min_first"] < 1 and chosen["dense_cutoff"] is not None
    assert set(chosen["selector_metrics"]) >= {"precision", "coverage", "no_answer_accuracy"}
    assert chosen["training"]["useful"] >= 2
