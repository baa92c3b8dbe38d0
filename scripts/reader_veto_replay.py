"""What a reader would do to each suite's abstention figures, replayed on its scored-once receipt.

    .venv/bin/python scripts/reader_veto_replay.py QUESTIONS.jsonl [--bars 0.02,0.05,0.1] [--rescue 0.7]
    .venv/bin/python scripts/reader_veto_replay.py QUESTIONS.jsonl --blend [--bars 0.3,0.5,0.7]

``QUESTIONS.jsonl`` is what ``scripts/reader_experiment.py --questions`` wrote for its test suites.

- **Veto** (the default): each question the receipt shows answered whose best leading passage the reader scores
  under a bar is counted as abstaining; with ``--rescue``, each question the receipt shows abstaining
  ``below_threshold`` whose reader score reaches it is counted as answered.
- **Blend** (``--blend``): a logistic regression of the judge's confidence and the reader's best score (both as
  log-odds), fitted leaving the question's own suite out, decides every question the receipt shows answered or
  abstaining ``below_threshold``: it abstains under the bar.

Every other question keeps the receipt's outcome. An abstention counts as right whatever its reason, so the
figures are at or above what ``retrieval-kernel eval`` would report for the same decisions. Nothing here changes
``%context``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
Key = tuple[str, str]  # (suite, question)
# (the reader's score, whether the receipt abstained, its reason) -> abstains, or None to keep the receipt's
Decision = Callable[[float, bool, str | None], bool | None]


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def reader_scores(rows: Sequence[dict]) -> dict[Key, float]:
    """The reader's best score over each question's leading passages."""
    return {(row["suite"], row["question"]): max(p["reader"] for p in row["leading"]) for row in rows}


def blended(rows: Sequence[dict]) -> dict[Key, float]:
    """Each question's probability of being answerable from the judge and the reader, its suite left out."""
    features = np.array(
        [[_log_odds(row["confidence"]), _log_odds(max(p["reader"] for p in row["leading"]))] for row in rows]
    )
    answerable = np.array([row["answerable"] for row in rows])
    suites = np.array([row["suite"] for row in rows])
    probability = np.zeros(len(rows))
    for suite in sorted(set(suites)):
        mine = suites == suite
        model = LogisticRegression().fit(features[~mine], answerable[~mine])
        probability[mine] = model.predict_proba(features[mine])[:, 1]
    return {(row["suite"], row["question"]): float(p) for row, p in zip(rows, probability, strict=True)}


def _log_odds(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def veto(bar: float, rescue: float | None) -> Decision:
    def decide(score: float, abstained: bool, reason: str | None) -> bool | None:
        if not abstained and score < bar:
            return True
        if rescue is not None and reason == "below_threshold" and score >= rescue:
            return False
        return None

    return decide


def blend(bar: float) -> Decision:
    def decide(score: float, abstained: bool, reason: str | None) -> bool | None:
        return score < bar if not abstained or reason == "below_threshold" else None

    return decide


def scored_outcomes(suite: str) -> list[tuple[Key, str | None, bool, str | None]]:
    """Each question of ``suite``'s scored-once receipt: ``(key, expected abstention, abstained, reason)``."""
    receipt_path = sorted((FIXTURES / suite / "receipts").glob("*scored-once*.json"))[0]
    receipt = json.loads(receipt_path.read_text(encoding="utf-8"))
    lines = (FIXTURES / suite / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    texts = {row["id"]: row["question"] for row in map(json.loads, filter(str.strip, lines))}
    return [
        ((suite, texts[q["id"]]), q["expected_abstention"], q["abstained"], q["abstention_reason"])
        for q in receipt["questions"]
    ]


def replayed(
    outcomes: Sequence[tuple[Key, str | None, bool, str | None]], scores: dict[Key, float], decide: Decision
) -> tuple[int, int, int, Counter[str]]:
    """``(expected abstentions, abstentions, right abstentions, changes)`` of one suite's ``outcomes`` with
    ``decide`` applied; ``changes`` counts the questions whose outcome changed, by what was expected of them."""
    expected = abstained = right = 0
    changes: Counter[str] = Counter()
    for key, wanted, abstains, reason in outcomes:
        score = scores.get(key)
        decided = None if score is None else decide(score, abstains, reason)
        if decided is not None and decided != abstains:
            kind = "answerable" if wanted is None else "no-answer"
            changes[f"{kind} {'emptied' if decided else 'answered'}"] += 1
            abstains = decided
        expected += wanted is not None
        abstained += abstains
        right += abstains and wanted is not None
    return expected, abstained, right, changes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path, help="reader_experiment.py --questions output")
    parser.add_argument("--bars", help="veto: reader scores under which an answer abstains; blend: the thresholds")
    parser.add_argument("--rescue", type=float, help="veto: reader score at which a below-threshold abstention answers")
    parser.add_argument(
        "--blend", action="store_true", help="replay the judge and reader blended (leave-one-suite-out)"
    )
    args = parser.parse_args(argv)
    rows = read_rows(args.questions)
    scores = blended(rows) if args.blend else reader_scores(rows)
    default = "0.3,0.4,0.5,0.6,0.7,0.8" if args.blend else "0,0.02,0.05,0.07,0.1,0.2"
    suites = sorted({suite for suite, _ in scores}, key=lambda name: (len(name), name))
    outcomes = [scored_outcomes(suite) for suite in suites]  # read once, replayed at every bar
    for bar in (float(b) for b in (args.bars or default).split(",")):
        decide = blend(bar) if args.blend else veto(bar, args.rescue)
        figures = [replayed(suite_outcomes, scores, decide) for suite_outcomes in outcomes]
        expected, abstained, right = (sum(f[i] for f in figures) for i in range(3))
        changes = sum((f[3] for f in figures), Counter())
        each = " ".join(f"{r / a:.3f}/{r / e:.3f}" for e, a, r, _ in figures)
        print(f"bar {bar}: pooled precision / recall {right / abstained:.3f} / {right / expected:.3f}; {dict(changes)}")
        print(f"  each suite: {each}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
