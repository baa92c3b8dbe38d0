"""What a reader's veto would do to each suite's abstention figures, replayed on its scored-once receipt.

    .venv/bin/python scripts/reader_veto_replay.py QUESTIONS.jsonl [--bars 0.02,0.05,0.1] [--rescue 0.7]

``QUESTIONS.jsonl`` is what ``scripts/reader_experiment.py --questions`` wrote for its test suites. Each
question the receipt shows answered and the reader's best leading passage scores under a bar is counted as
abstaining (right when no answer was expected); with ``--rescue``, each question the receipt shows abstaining
below the threshold whose reader score reaches it is counted as answered. Every other question keeps the
receipt's outcome. An abstention counts as right whatever its reason, so the figures are at or above what
``retrieval-kernel eval`` would report for the same decisions. Nothing here changes ``%context``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def reader_scores(path: Path) -> dict[tuple[str, str], float]:
    """``(suite, question) -> the reader's best score over the leading passages``."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(row["suite"], row["question"]): max(p["reader"] for p in row["leading"]) for row in rows}


def replayed(
    suite: str, scores: dict[tuple[str, str], float], bar: float, rescue: float | None
) -> tuple[int, int, int, Counter[str]]:
    """``(expected abstentions, abstentions, right abstentions, changes)`` of ``suite`` with the veto (and rescue)
    applied; ``changes`` counts the questions each changed, by what was expected of them."""
    receipt_path = sorted((FIXTURES / suite / "receipts").glob("*scored-once*.json"))[0]
    receipt = json.loads(receipt_path.read_text(encoding="utf-8"))
    lines = (FIXTURES / suite / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    texts = {row["id"]: row["question"] for row in map(json.loads, filter(str.strip, lines))}
    expected = abstained = right = 0
    changes: Counter[str] = Counter()
    for question in receipt["questions"]:
        wanted, abstains = question["expected_abstention"], question["abstained"]
        score = scores.get((suite, texts[question["id"]]))
        if score is not None and not abstains and score < bar:
            abstains = True
            changes["answerable emptied" if wanted is None else "no-answer emptied"] += 1
        elif (
            rescue is not None
            and score is not None
            and score >= rescue
            and question["abstention_reason"] == "below_threshold"
        ):
            abstains = False
            changes["answerable rescued" if wanted is None else "no-answer answered"] += 1
        expected += wanted is not None
        abstained += abstains
        right += abstains and wanted is not None
    return expected, abstained, right, changes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path, help="reader_experiment.py --questions output")
    parser.add_argument(
        "--bars", default="0,0.02,0.05,0.07,0.1,0.2", help="reader scores under which an answer is vetoed"
    )
    parser.add_argument("--rescue", type=float, help="reader score at which a below-threshold abstention answers")
    args = parser.parse_args(argv)
    scores = reader_scores(args.questions)
    suites = sorted({suite for suite, _ in scores}, key=lambda name: (len(name), name))
    for bar in (float(b) for b in args.bars.split(",")):
        figures = [replayed(suite, scores, bar, args.rescue) for suite in suites]
        expected, abstained, right = (sum(f[i] for f in figures) for i in range(3))
        changes = sum((f[3] for f in figures), Counter())
        each = " ".join(f"{r / a:.3f}/{r / e:.3f}" for e, a, r, _ in figures)
        print(f"bar {bar}: pooled precision / recall {right / abstained:.3f} / {right / expected:.3f}; {dict(changes)}")
        print(f"  each suite: {each}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
