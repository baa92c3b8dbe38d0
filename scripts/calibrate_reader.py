"""Weigh the answer reader against the question model, on suites the reader never trained on.

    .venv/bin/python scripts/calibrate_reader.py [--output FILE.json]

The shipped reader (``retrieval_kernel/pipeline/answer_reader.onnx``, see ``scripts/build_reader.py``)
was fine-tuned on the policy suites up to policy-holdout22. This script asks every question of the
scored suites after those (``scripts/reader_experiment.py``'s ``TEST_SUITES``: other organisations,
other authors), with the judge as shipped, and keeps for each the question model's confidence and
the reader's best probability over the leading passages. A logistic regression on the two log-odds
(answerable or not; questions another decision owns, such as a tie or a scope, are left out) gives
the blend; its threshold is the highest that still answers ``ANSWER_RECALL`` of the answerable
questions, the rule the question model's own threshold follows. Written to
``retrieval_kernel/pipeline/answer_reader.json`` with what it was fitted on and the AUCs before and
after. A suite still frozen (no receipt) is never read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from calibrate_answerability import ANSWER_RECALL, question_threshold, scored
from reader_experiment import TEST_SUITES
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from retrieval_kernel.evaluation.policy_eval import load_policy_questions, load_policy_suite
from retrieval_kernel.evaluation.suites import indexed_workspace
from retrieval_kernel.pipeline import answerability
from retrieval_kernel.pipeline.answerability import BLEND_FILE, Blend, Judgement
from retrieval_kernel.pipeline.reader import READER_FILE, load_reader, read_as
from retrieval_kernel.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def collect(suites: Sequence[str]) -> list[tuple[float, float, bool]]:
    """(question model's confidence, reader's best, answerable) for each judged, answerable-or-not question."""
    reader = load_reader()
    rows: list[tuple[float, float, bool]] = []
    captured: dict[str, Any] = {}
    judge = Workspace._judge

    def spy(self: Workspace, query: str, ranked: Sequence[Any], *args: Any, **kwargs: Any) -> Judgement:
        captured["judgement"] = judgement = judge(self, query, ranked, *args, **kwargs)
        captured["read"] = reader.probabilities(query, [read_as(c.stored) for c in ranked[:3]])
        return judgement

    Workspace._judge = spy  # type: ignore[method-assign]
    try:
        for name in suites:
            suite = load_policy_suite(FIXTURES / name)
            with indexed_workspace(suite.notes_dir, None, ("identity", "lexical", "dense"), None) as workspace:
                for row in load_policy_questions(suite.questions_path):
                    if row["expected_abstention"] not in (None, "no_relevant_evidence"):
                        continue
                    captured.clear()
                    workspace.query(
                        row["question"], as_of=row["as_of"], scopes=row["scopes"], intent=row["intent"],
                        top=suite.top, refresh=False, max_chars=suite.budget,
                    )  # fmt: skip
                    judged: Judgement | None = captured.get("judgement")
                    read = captured.get("read")
                    if judged is None or not read or judged.judged_confidence is not None:
                        continue
                    if judged.confidence >= 1.0:  # an identifier named the note: nothing to weigh
                        continue
                    rows.append((judged.confidence, max(read), row["expected_abstention"] is None))
            print(f"asked {name}", file=sys.stderr, flush=True)
    finally:
        Workspace._judge = judge  # type: ignore[method-assign]
    return rows


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def fit(rows: Sequence[tuple[float, float, bool]]) -> tuple[Blend, dict[str, Any]]:
    features = np.array([[_logit(c), _logit(r)] for c, r, _ in rows])
    labels = np.array([y for _, _, y in rows])
    model = LogisticRegression(C=1.0, max_iter=1000).fit(features, labels)
    (judge_weight, reader_weight), bias = model.coef_[0], model.intercept_[0]
    draft = Blend(round(float(judge_weight), 6), round(float(reader_weight), 6), round(float(bias), 6), 0.5)
    blended = [draft.confidence(c, r) for c, r, _ in rows]
    threshold = question_threshold(list(zip(blended, labels.tolist(), strict=True)))
    blend = Blend(draft.judge_weight, draft.reader_weight, draft.bias, threshold)
    report = {
        "questions": len(rows),
        "answerable": int(labels.sum()),
        "auc": {
            "question_model": round(float(roc_auc_score(labels, [c for c, _, _ in rows])), 4),
            "reader": round(float(roc_auc_score(labels, [r for _, r, _ in rows])), 4),
            "blend": round(float(roc_auc_score(labels, blended)), 4),
        },
        "answer_recall_at_threshold": ANSWER_RECALL,
    }
    return blend, report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=BLEND_FILE)
    args = parser.parse_args(argv)
    suites = [name for name in TEST_SUITES if name in scored("policy-holdout")]
    shipped = answerability.load_models
    answerability.load_models = lambda: shipped(answerability.MODEL_FILE, ROOT / "no-blend")  # the judge alone
    try:
        blend, report = fit(collect(suites))
    finally:
        answerability.load_models = shipped
    data = {
        "created_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "reader": READER_FILE.name,
        "sources": [f"fixtures/{name}" for name in suites],
        "blend": vars(blend),
        "fit": report,
    }
    args.output.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
