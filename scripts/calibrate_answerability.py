"""Fit the answerability models on calibration data only (never a holdout).

    .venv/bin/python scripts/calibrate_answerability.py [--output FILE.json]

Calibration questions, each run against real notes with every lane:

- the workshop study (``fixtures/workshop``): the labelled section answers;
- the two development policy suites (``fixtures/policy``, ``fixtures/policy-holdout``): the
  passages a question must admit, must not admit (stale, but about the question) or names
  in an expected conflict answer it; ``no_relevant_evidence`` questions have no answer;
- ``fixtures/answerability-calibration``: questions written for calibration against those
  three note collections, half of them near misses or off topic with no answer;
- each suite's questions asked of another suite's notes (off topic).

- ``fixtures/policy-holdout3`` and ``fixtures/workshop-probes``: scored once as holdouts
  (2026-12-01), calibration data since; ``fixtures/policy-holdout4`` and
  ``fixtures/workshop-probes2`` (their successors) are never read.

Questions labelled filtered by scope or validity, or underspecified, are left out: the
decision for them is not answerability's.

Two L2-regularised logistic regressions (scikit-learn), each for hybrid and lexical-only
workspaces: the *question* model (one example per question: does anything answer?) with
the highest threshold that still answers ``ANSWER_RECALL`` of the answerable questions; the
*passage* model (one example per candidate of an answerable question: does it answer?) with
the highest floor that keeps ``PASSAGE_RECALL`` of the answering candidates. The output keeps the models and
reliability bins (predicted vs observed, per question and per passage) for notebook 03.
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
from sklearn.linear_model import LogisticRegression

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
SUITES = {
    "workshop": "fixtures/workshop",
    "policy": "fixtures/policy",
    "policy-holdout": "fixtures/policy-holdout",
    "policy-holdout3": "fixtures/policy-holdout3",  # scored once as a holdout (2026-12-01), a calibration set since
}
WRITTEN = ROOT / "fixtures/answerability-calibration/questions.jsonl"
PROBES = ROOT / "fixtures/workshop-probes"  # scored once (2026-12-01), a calibration set since
OFF_TOPIC = [
    ("workshop", "policy"),
    ("workshop", "policy-holdout"),
    ("workshop", "policy-holdout3"),
    ("policy", "workshop"),
    ("policy-holdout", "workshop"),
    ("policy-holdout3", "workshop"),
]
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


def probe_questions() -> Iterator[Question]:
    """The workshop probes: questions its notes do not answer, and paraphrases labelled by section."""
    for _, row in read_jsonl(PROBES / "offtopic.jsonl"):
        yield Question("probe", "workshop", row["id"], row["question"], ("*",), frozenset(), kind="near_miss")
    for _, row in read_jsonl(PROBES / "paraphrases.jsonl"):
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


def everything(spaces: dict[str, Workspace]) -> list[Asked]:
    out = [ask(spaces[s], q, "labelled", s) for s in SUITES for q in suite_questions(s)]
    out += [ask(spaces[q.corpus], q, "written", q.corpus) for q in written_questions()]
    out += [ask(spaces["workshop"], q, "written", "workshop") for q in probe_questions()]
    out += [ask(spaces[of], q, "off-topic", of) for asked, of in OFF_TOPIC for q in suite_questions(asked)]
    return out


def features(names: Sequence[str], values: dict[str, float]) -> list[float]:
    return [float(values[name]) for name in names]


def fit(x: list[list[float]], y: list[bool]) -> LogisticRegression:
    return LogisticRegression(C=1.0, max_iter=1000).fit(np.array(x), np.array(y))


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


def model_dict(
    model: LogisticRegression, names: Sequence[str], threshold: float, reach: float | None = None
) -> dict[str, Any]:
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
    question = fit(qx, qy)
    q_scored = list(zip(question.predict_proba(np.array(qx))[:, 1].tolist(), qy, strict=True))
    threshold = question_threshold(q_scored)
    balanced = balanced_accuracy(q_scored, threshold)
    answerable = [a for a in asked if a.answerable]
    rows = [(s, label) for a in answerable for s, label in zip(a.signals, a.answering, strict=True)]
    px = [features(passage_names, vars(s)) for s, _ in rows]
    py = [label for _, label in rows]
    passage = fit(px, py)
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
    args = parser.parse_args(argv)
    spaces = {suite: workspace(suite) for suite in SUITES}
    try:
        asked = [a for a in everything(spaces) if a.signals]
    finally:
        for ws in spaces.values():
            ws.close()
    result = {
        "created_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sources": {
            **SUITES,
            "written": str(WRITTEN.relative_to(ROOT)),
            "probes": str(PROBES.relative_to(ROOT)),
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
