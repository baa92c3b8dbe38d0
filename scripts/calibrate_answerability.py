"""Fit the answerability models on calibration data only (never a holdout).

    .venv/bin/python scripts/calibrate_answerability.py [--output FILE.json]

Calibration questions, each run against real notes with every lane:

- the workshop study (``fixtures/workshop``): the labelled section answers;
- the two development policy suites (``fixtures/policy``, ``fixtures/policy-holdout``): the
  passages a question must admit, must not admit (stale, but about the question) or names
  in an expected conflict answer it; ``no_relevant_evidence`` questions have no answer;
- ``fixtures/answerability-calibration``: questions written for calibration against those
  three note collections, half of them near misses or off topic with no answer;
- each suite's questions asked of another suite's notes (off topic);
- every policy holdout and workshop probe set already scored once (a receipt; ``policy-holdout3``
  on, ``workshop-probes`` on): development data since their scores. A holdout still frozen is
  never read (``--leave-out`` drops more, to score a set out of fit).

Questions labelled filtered by scope or validity, or underspecified, are left out: the
decision for them is not answerability's.

Two L2-regularised logistic regressions (scikit-learn's objective; the weights keep the signs
in ``SIGNS``), each for hybrid and lexical-only workspaces: the *question* model (one example
per question: does anything answer?) with the highest threshold that still answers
``ANSWER_RECALL`` of the answerable questions; the *passage* model (one example per candidate
of an answerable question: does it answer?) with the highest floor that keeps
``PASSAGE_RECALL`` of the answering candidates. The output keeps the models and reliability
bins (predicted vs observed, per question and per passage) for notebook 03.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from retrieval_kernel.evaluation.jsonl import read_jsonl
from retrieval_kernel.pipeline.answerability import (
    JUDGED,
    LEXICAL_ONLY,
    MODEL_FILE,
    PASSAGE_FEATURES,
    QUESTION_FEATURES,
    Signals,
    question_features,
)
from retrieval_kernel.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
STORES = ROOT / ".retrieval_kernel" / "calibration"
FIXTURES = ROOT / "fixtures"


def scored(prefix: str) -> dict[str, str]:
    """The holdouts named ``prefix`` + a number already scored once (a receipt), by number: development
    data since their scores. One still frozen (no receipt) is never read."""
    numbered = [
        (int(folder.name.removeprefix(prefix) or 1), folder.name)
        for folder in FIXTURES.glob(f"{prefix}*")
        if folder.name.removeprefix(prefix).isdigit() or folder.name == prefix
    ]
    scored_once = [name for _, name in sorted(numbered) if any((FIXTURES / name / "receipts").glob("*.json"))]
    return {name: f"fixtures/{name}" for name in scored_once}


SUITES = {
    "workshop": "fixtures/workshop",
    "policy": "fixtures/policy",
    "policy-holdout": "fixtures/policy-holdout",
    **{name: path for name, path in scored("policy-holdout").items() if name != "policy-holdout"},
}
WRITTEN = ROOT / "fixtures/answerability-calibration/questions.jsonl"
PROBES = scored("workshop-probes")
OFF_TOPIC = [
    ("workshop", "policy"),
    ("workshop", "policy-holdout"),
    ("workshop", "policy-holdout3"),
    ("policy", "workshop"),
    ("policy-holdout", "workshop"),
    ("policy-holdout3", "workshop"),
]
KEPT = {"workshop", "policy", "policy-holdout", "policy-holdout3"}  # the written and off-topic questions ask these
SKIPPED = {"filtered_by_scope", "filtered_by_validity", "underspecified_query"}
INDEX_CLOCK = "2026-11-30T00:00:00Z"
PASSAGE_RECALL = 0.95  # answering passages the passage floors keep
REACH_RECALL = 0.90  # answering passages at or above the bar for "an unusable passage answers" (out of reach)
ANSWER_RECALL = 0.95  # answerable calibration questions the question threshold keeps answering


@dataclass(frozen=True)
class Question:
    source: str
    corpus: str
    id: str
    text: str
    scopes: tuple[str, ...]
    answers: frozenset[str]  # passage ids that answer it (empty: nothing does)
    section: tuple[str, str] | None = None  # the workshop labels a section by (module, heading)
    kind: str = ""

    def answered_by(self, passage_id: str, module: str, heading: str) -> bool:
        return passage_id in self.answers or self.section == (module, heading)

    @property
    def answerable(self) -> bool:
        return bool(self.answers) or self.section is not None


@dataclass
class Asked:
    """One question asked of one collection: its candidates' signals (best first) and labels."""

    name: str
    kind: str  # "labelled", "written" or "off-topic"
    answerable: bool
    written_kind: str = ""  # for written questions: direct, paraphrase, multi_part, near_miss, off_topic
    signals: list[Signals] = field(default_factory=list)
    answering: list[bool] = field(default_factory=list)


def suite_questions(suite: str) -> Iterator[Question]:
    folder = ROOT / SUITES[suite]
    for _, row in read_jsonl(folder / "questions.jsonl"):
        if "expected_module" in row:
            section = (row["expected_module"], row["expected_heading"])
            yield Question("suite", suite, row["id"], row["question"], ("*",), frozenset(), section)
            continue
        if row["expected_abstention"] in SKIPPED:
            continue
        answers = set(row["must_admit"]) | set(row["must_not_admit"])
        answers |= {pid for conflict in row["expected_conflicts"] for pid in conflict["passages"]}
        if row["expected_abstention"] == "no_relevant_evidence":
            answers = set()
        yield Question("suite", suite, row["id"], row["question"], tuple(row["scopes"]), frozenset(answers))


def written_questions() -> Iterator[Question]:
    for _, row in read_jsonl(WRITTEN):
        answers = frozenset(row["answers"]) if row["answerable"] else frozenset()
        yield Question(
            "written", row["corpus"], row["id"], row["question"], tuple(row["scopes"]), answers, kind=row["kind"]
        )


def probe_questions(probes: str) -> Iterator[Question]:
    """One workshop probe set: questions its notes do not answer, and paraphrases labelled by section."""
    folder = ROOT / PROBES[probes]
    for _, row in read_jsonl(folder / "offtopic.jsonl"):
        yield Question("probe", "workshop", row["id"], row["question"], ("*",), frozenset(), kind="near_miss")
    if (folder / "paraphrases.jsonl").exists():
        for _, row in read_jsonl(folder / "paraphrases.jsonl"):
            section = (row["expected_module"], row["expected_heading"])
            yield Question("probe", "workshop", row["id"], row["question"], ("*",), frozenset(), section, "paraphrase")


def workspace(suite: str) -> Workspace:
    notes = ROOT / SUITES[suite] / json.loads((ROOT / SUITES[suite] / "suite.json").read_text())["notes"]
    ws = Workspace(notes, STORES / suite, refresh="off", index_clock=lambda: INDEX_CLOCK)
    ws.index()
    return ws


def ask(ws: Workspace, question: Question, kind: str, corpus: str) -> Asked:
    found = ws.signals(question.text, scopes=question.scopes)
    answerable = question.answerable and corpus == question.corpus
    asked = Asked(f"{question.corpus}->{corpus}:{question.id}", kind, answerable, question.kind)
    for candidate, signals in found:
        passage = candidate.stored.passage
        asked.signals.append(signals)
        asked.answering.append(answerable and question.answered_by(candidate.id, passage.module, passage.heading))
    return asked


def everything(spaces: dict[str, Workspace], probe_sets: Sequence[str]) -> list[Asked]:
    out = [ask(ws, q, "labelled", s) for s, ws in spaces.items() for q in suite_questions(s)]
    out += [ask(spaces[q.corpus], q, "written", q.corpus) for q in written_questions()]
    out += [ask(spaces["workshop"], q, "written", "workshop") for p in probe_sets for q in probe_questions(p)]
    out += [ask(spaces[of], q, "off-topic", of) for asked, of in OFF_TOPIC for q in suite_questions(asked)]
    return out


def features(names: Sequence[str], values: dict[str, float]) -> list[float]:
    return [float(values[name]) for name in names]


# The direction a signal can move the probability: more coverage, closeness or agreement never makes
# an answer less likely; words of the question unknown to the notes, the question's rarest word
# missing, or a module's introduction never more likely.
SIGNS = {
    "coverage": 1,
    "best_coverage": 1,
    "top_coverage": 1,
    "cosine": 1,
    "best_cosine": 1,
    "margin": 1,
    "best_margin": 1,
    "agreement": 1,
    "top_agreement": 1,
    "unknown": -1,
    "rare_miss": -1,
    "least_miss": -1,
    "intro": -1,
}


@dataclass(frozen=True)
class Fitted:
    """An L2-regularised logistic regression whose weights keep the signs in :data:`SIGNS`."""

    coef_: np.ndarray  # shape (1, features), as scikit-learn's
    intercept_: np.ndarray  # shape (1,)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-(x @ self.coef_[0] + self.intercept_[0])))
        return np.column_stack([1 - p, p])


def fit(x: list[list[float]], y: list[bool], names: Sequence[str]) -> Fitted:
    """Minimise scikit-learn's objective (C = 1: log loss summed, half the squared weights, bias free)
    under the sign bounds; unbounded, it is ``LogisticRegression(C=1.0)``."""
    xs, ys = np.array(x), np.array(y, dtype=float)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        weights, bias = theta[:-1], theta[-1]
        z = xs @ weights + bias
        p = 1.0 / (1.0 + np.exp(-z))
        loss = np.sum(np.logaddexp(0.0, z) - ys * z) + 0.5 * weights @ weights
        grad = np.append(xs.T @ (p - ys) + weights, np.sum(p - ys))
        return float(loss), grad

    bounds = [_bound(SIGNS.get(name, 0)) for name in names] + [(None, None)]
    theta = minimize(objective, np.zeros(len(names) + 1), jac=True, method="L-BFGS-B", bounds=bounds).x
    return Fitted(theta[None, :-1], theta[-1:])


def _bound(sign: int) -> tuple[float | None, float | None]:
    return {1: (0.0, None), -1: (None, 0.0)}.get(sign, (None, None))


def balanced_accuracy(scored: list[tuple[float, bool]], cut: float) -> float:
    yes = [p >= cut for p, label in scored if label]
    no = [p < cut for p, label in scored if not label]
    return (sum(yes) / len(yes) + sum(no) / len(no)) / 2


def question_threshold(scored: list[tuple[float, bool]]) -> float:
    """The highest threshold that still answers ``ANSWER_RECALL`` of the answerable questions.

    A wrong "nothing applies" costs the user the answer, so abstaining is bought only with
    at most 2% of the answerable calibration questions.
    """
    return recall_floor(scored, ANSWER_RECALL)


def recall_floor(scored: list[tuple[float, bool]], recall: float) -> float:
    """The highest cut that keeps ``recall`` of the positive examples at or above it."""
    kept = sorted((p for p, label in scored if label), reverse=True)
    return round(kept[max(0, int(np.ceil(recall * len(kept))) - 1)], 4) if kept else 0.0


def reliability(pairs: list[tuple[float, bool]], bins: int = 10) -> list[dict[str, float]]:
    out = []
    for index in range(bins):
        low, high = index / bins, (index + 1) / bins
        inside = [(p, y) for p, y in pairs if low <= p < high or (index == bins - 1 and p == 1.0)]
        if inside:
            out.append(
                {
                    "low": low,
                    "high": high,
                    "count": len(inside),
                    "predicted": round(sum(p for p, _ in inside) / len(inside), 4),
                    "observed": round(sum(y for _, y in inside) / len(inside), 4),
                }
            )
    return out


def model_dict(model: Fitted, names: Sequence[str], threshold: float, reach: float | None = None) -> dict[str, Any]:
    out = {
        "features": list(names),
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "bias": round(float(model.intercept_[0]), 6),
        "threshold": threshold,
    }
    return out if reach is None else out | {"reach": reach}


def fit_pair(asked: list[Asked], lexical_only: bool) -> dict[str, Any]:
    question_names = [n for n in QUESTION_FEATURES if not lexical_only or n in LEXICAL_ONLY]
    passage_names = [n for n in PASSAGE_FEATURES if not lexical_only or n in LEXICAL_ONLY]
    qx = [features(question_names, question_features(a.signals[:JUDGED])) for a in asked]
    qy = [a.answerable for a in asked]
    question = fit(qx, qy, question_names)
    q_scored = list(zip(question.predict_proba(np.array(qx))[:, 1].tolist(), qy, strict=True))
    threshold = question_threshold(q_scored)
    balanced = balanced_accuracy(q_scored, threshold)
    answerable = [a for a in asked if a.answerable]
    rows = [(s, label) for a in answerable for s, label in zip(a.signals, a.answering, strict=True)]
    px = [features(passage_names, vars(s)) for s, _ in rows]
    py = [label for _, label in rows]
    passage = fit(px, py, passage_names)
    p_scored = list(zip(passage.predict_proba(np.array(px))[:, 1].tolist(), py, strict=True))
    floor = recall_floor(p_scored, PASSAGE_RECALL)
    by_kind = {
        kind: {
            "questions": sum(1 for a in asked if a.kind == kind),
            "answerable": sum(1 for a in asked if a.kind == kind and a.answerable),
            "decided_right": sum(
                1 for (p, y), a in zip(q_scored, asked, strict=True) if a.kind == kind and (p >= threshold) == y
            ),
        }
        for kind in ("labelled", "written", "off-topic")
    }
    written = {
        kind: {
            "questions": sum(1 for a in asked if a.written_kind == kind),
            "decided_right": sum(
                1 for (p, y), a in zip(q_scored, asked, strict=True) if a.written_kind == kind and (p >= threshold) == y
            ),
        }
        for kind in ("direct", "paraphrase", "multi_part", "near_miss", "off_topic")
    }
    return {
        "question": model_dict(question, question_names, threshold),
        "passage": model_dict(passage, passage_names, floor, recall_floor(p_scored, REACH_RECALL)),
        "calibration": {
            "questions": by_kind,
            "written_by_kind": written,
            "balanced_accuracy": round(balanced, 4),
            "passages": len(rows),
            "answering_passages": sum(py),
            "passage_recall_at_floor": PASSAGE_RECALL,
            "answer_recall_at_threshold": ANSWER_RECALL,
            "reliability_questions": reliability(q_scored),
            "reliability_passages": reliability(p_scored),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=MODEL_FILE)
    parser.add_argument(
        "--leave-out",
        nargs="*",
        default=[],
        choices=[name for name in (*SUITES, *PROBES) if name not in KEPT],
        help="suites or probe sets not to fit on (to score them out of fit)",
    )
    args = parser.parse_args(argv)
    suites = {name: path for name, path in SUITES.items() if name not in args.leave_out}
    probe_sets = [name for name in PROBES if name not in args.leave_out]
    spaces = {suite: workspace(suite) for suite in suites}
    try:
        asked = [a for a in everything(spaces, probe_sets) if a.signals]
    finally:
        for ws in spaces.values():
            ws.close()
    result = {
        "created_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sources": {
            **suites,
            "written": str(WRITTEN.relative_to(ROOT)),
            "probes": [PROBES[name] for name in probe_sets],
            "off_topic": [f"{a}->{b}" for a, b in OFF_TOPIC],
        },
        "hybrid": fit_pair(asked, lexical_only=False),
        "lexical": fit_pair(asked, lexical_only=True),
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name in ("hybrid", "lexical"):
        pair = result[name]
        print(
            name,
            "question threshold",
            pair["question"]["threshold"],
            "passage floor",
            pair["passage"]["threshold"],
            "balanced accuracy",
            pair["calibration"]["balanced_accuracy"],
            pair["calibration"]["questions"],
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
