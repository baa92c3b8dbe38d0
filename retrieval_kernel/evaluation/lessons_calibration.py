"""Choosing the applicability selector's weights and thresholds on a lessons suite's calibration split
(``scripts/calibrate_selector.py``): training rows, the fitted weights, the grid search and its objective."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..applicability import Thresholds
from ..errors import SuiteError
from .lessons_eval import Retrieved, dense_cosine, method_metrics, score_returned

# The grids searched on the calibration split.
FIRST_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
KEEP_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
GAIN_GRID = (0.0, 0.05, 0.1)
RATIO_GRID = (0.0, 0.25, 0.5)
MAX_RECORDS_GRID = (2, 3, 4, 6)
CUTOFF_GRID = tuple(round(0.2 + 0.01 * i, 2) for i in range(61))
TARGETS = {"precision": 0.90, "coverage": 0.99, "critical_misses": 0, "unsafe_results": 0, "no_answer_accuracy": 0.95}
CUTOFF_MIN_COVERAGE = 0.98  # seed 001's calibration check for the similarity cutoff


def training_rows(
    queries: Sequence[Mapping[str, Any]], retrieved: Mapping[str, Retrieved], params: Thresholds | None = None
) -> tuple[list[list[float]], list[int]]:
    """Features of every eligible candidate (hard rules passed) and whether a need lists it (1) or not (0)."""
    from ..applicability import eligible_candidates, parse_conditions, score_candidates, task_conditions

    params = params or Thresholds()
    features: list[list[float]] = []
    labels: list[int] = []
    for query in queries:
        pool = retrieved[query["id"]].candidates
        task, _ = task_conditions(query["query"], pool, parse_conditions(query.get("conditions") or None))
        eligible, _, _ = eligible_candidates(pool, task, "orient")
        scored, _, _ = score_candidates(query["query"], pool, eligible, params)
        useful = {record for need in query["needs"] for record in need["records"]}
        for item in scored:
            features.append(list(item.features))
            labels.append(int(item.candidate.record in useful))
    return features, labels


def fit_weights(
    features: Sequence[Sequence[float]], labels: Sequence[int], l2: float = 1.0
) -> tuple[tuple[float, ...], float]:
    """L2-regularised logistic regression on standardised features; returns raw-scale weights and bias.

    scikit-learn's ``LogisticRegression`` (lbfgs) does the fit; ``l2`` is the penalty on
    the standardised weights (scikit-learn's ``C`` is its inverse), the intercept is
    not penalised. Constant features get weight 0.
    """
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=int)
    if x.size == 0 or y.min() == y.max():
        raise SuiteError("calibration needs candidates of both kinds (useful and not) to fit the selector")
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    model = LogisticRegression(C=1.0 / l2, solver="lbfgs", max_iter=1000, tol=1e-10)
    model.fit((x - mean) / std, y)
    w = model.coef_[0]
    weights = w / std
    bias = float(model.intercept_[0]) - float((w * mean / std).sum())
    return tuple(round(float(v), 6) for v in weights), round(float(bias), 6)


def meets_targets(metrics: Mapping[str, Any]) -> bool:
    return (
        (metrics["precision"] or 0) >= TARGETS["precision"]
        and (metrics["coverage"] or 0) >= TARGETS["coverage"]
        and metrics["critical_misses"] <= TARGETS["critical_misses"]
        and metrics["unsafe_results"] <= TARGETS["unsafe_results"]
        and (metrics["no_answer_accuracy"] if metrics["no_answer_accuracy"] is not None else 1)
        >= TARGETS["no_answer_accuracy"]
    )


def objective(metrics: Mapping[str, Any]) -> tuple[float, ...]:
    """Higher is better. A setting meeting every target beats any that does not; among those, precision wins.

    Otherwise: how close the setting comes to the targets, each counted up to its
    target only (precision / 0.90, coverage / 0.99, no-answer accuracy / 0.95, each
    capped at 1, summed), less 0.05 per critical miss and per unsafe result; ties go
    to the more precise, then the one returning fewer records. No rate is bought
    beyond its target at the expense of another.
    """
    precision = metrics["precision"] if metrics["precision"] is not None else 1.0
    coverage = metrics["coverage"] if metrics["coverage"] is not None else 1.0
    no_answer = metrics["no_answer_accuracy"] if metrics["no_answer_accuracy"] is not None else 1.0
    if meets_targets(metrics):
        return (1.0, precision, -metrics["mean_returned"])
    attainment = (
        min(precision / TARGETS["precision"], 1.0)
        + min(coverage / TARGETS["coverage"], 1.0)
        + min(no_answer / TARGETS["no_answer_accuracy"], 1.0)
    )
    harm = 0.05 * (metrics["critical_misses"] + metrics["unsafe_results"])
    return (0.0, round(attainment - harm, 6), precision, -metrics["mean_returned"])


@dataclass(frozen=True)
class _Prepared:
    query: Mapping[str, Any]
    scored: list[Any]
    terms: list[str]
    weights: dict[str, float]
    chars: dict[str, int]


def _prepare(
    queries: Sequence[Mapping[str, Any]], retrieved: Mapping[str, Retrieved], params: Thresholds
) -> list[_Prepared]:
    """Score every query's eligible candidates once (scores do not depend on the thresholds)."""
    from ..applicability import eligible_candidates, parse_conditions, score_candidates, task_conditions

    prepared = []
    for query in queries:
        pool = retrieved[query["id"]].candidates
        task, _ = task_conditions(query["query"], pool, parse_conditions(query.get("conditions") or None))
        eligible, _, _ = eligible_candidates(pool, task, "orient")
        scored, terms, weights = score_candidates(query["query"], pool, eligible, params)
        prepared.append(_Prepared(query, scored, terms, weights, {c.record: c.chars for c in pool}))
    return prepared


def _picked_metrics(prepared: Sequence[_Prepared], params: Thresholds) -> dict[str, Any]:
    from ..applicability import pick

    outcomes = []
    for item in prepared:
        kept, _ = pick(item.scored, item.terms, item.weights, params)
        ids = [scored.candidate.record for scored, _ in kept]
        outcomes.append({**score_returned(item.query, ids), "chars": sum(item.chars.get(r, 0) for r in ids)})
    return method_metrics([item.query for item in prepared], outcomes)


def calibrate(
    queries: Sequence[Mapping[str, Any]],
    retrieved: Mapping[str, Retrieved],
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit the selector's weights, then choose its thresholds and the dense cutoff, on these queries only.

    Returns the chosen values and the aggregate metrics they reach on these queries.
    """
    features, labels = training_rows(queries, retrieved)
    weights, bias = fit_weights(features, labels)
    prepared = _prepare(queries, retrieved, Thresholds(weights, bias))
    best: tuple[tuple[float, ...], Thresholds, dict[str, Any]] | None = None
    tried = 0
    for max_records in MAX_RECORDS_GRID:
        for min_gain in GAIN_GRID:
            for min_first in FIRST_GRID:
                for min_keep in (keep for keep in KEEP_GRID if keep <= min_first):
                    for min_ratio in RATIO_GRID:
                        params = Thresholds(
                            weights, bias, min_first, min_keep, min_gain, max_records, min_ratio=min_ratio
                        )
                        metrics = _picked_metrics(prepared, params)
                        tried += 1
                        key = objective(metrics)
                        if best is None or key > best[0]:
                            best = (key, params, metrics)
        if progress:
            progress(f"max_records {max_records}: {tried} settings tried")
    assert best is not None
    _, params, metrics = best
    cutoff_best: tuple[tuple[float, ...], float, dict[str, Any]] | None = None
    for cutoff in CUTOFF_GRID:
        outcomes = [
            {
                **score_returned(q, [c.record for c in retrieved[q["id"]].dense if dense_cosine(c) >= cutoff]),
                "chars": sum(c.chars for c in retrieved[q["id"]].dense if dense_cosine(c) >= cutoff),
            }
            for q in queries
        ]
        m = method_metrics(queries, outcomes)
        enough = (m["coverage"] or 0) >= CUTOFF_MIN_COVERAGE
        key = (1.0, m["precision"] or 0.0, cutoff) if enough else (0.0, m["coverage"] or 0.0, m["precision"] or 0.0)
        if cutoff_best is None or key > cutoff_best[0]:
            cutoff_best = (key, cutoff, m)
    assert cutoff_best is not None
    return {
        "selector": params.to_dict(),
        "selector_metrics": _public(metrics),
        "selector_meets_targets": meets_targets(metrics),
        "settings_tried": tried,
        "training": {"candidates": len(labels), "useful": int(sum(labels))},
        "dense_cutoff": cutoff_best[1],
        "dense_cutoff_metrics": _public(cutoff_best[2]),
        "dense_cutoff_meets_coverage": cutoff_best[0][0] == 1.0,
    }


def _public(metrics: Mapping[str, Any]) -> dict[str, Any]:
    keep = (
        "precision",
        "coverage",
        "critical_misses",
        "unsafe_results",
        "mean_returned",
        "returned_chars",
        "no_answer_accuracy",
    )
    return {key: metrics[key] for key in keep}
