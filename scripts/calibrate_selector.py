"""Choose the applicability selector's parameters on the lessons suite's *calibration* split only.

    .venv/bin/python scripts/calibrate_selector.py [SUITE_DIR] [--output FILE.json]

Indexes the calibration families alone (the dev and holdout lessons are never read),
retrieves each calibration query once, then:

1. fits the rule selector's feature weights (an L2-regularised logistic regression:
   is this eligible candidate listed by one of the query's needs?);
2. searches the thresholds (``min_first``, ``min_keep``, ``min_gain``, ``max_records``,
   ``min_ratio``) on a fixed grid and keeps the best by ``lessons_calibration.objective``: a
   setting that meets every target (precision >= 0.90, coverage >= 0.99, no critical
   miss, nothing unsafe, no-answer accuracy >= 0.95) wins, the most precise of those
   first; otherwise the one closest to the targets (precision/0.90 + coverage/0.99 +
   no-answer accuracy/0.95, each capped at 1, less 0.05 per critical miss or unsafe
   result), ties to the more precise;
3. chooses the dense-similarity cutoff baseline: the most precise cutoff whose
   coverage is at least 0.98 (seed 001's calibration check), else the best covering.

It writes the chosen values with the calibration metrics they reach (aggregates only)
to the output JSON, which the package reads, and prints what it chose. It verifies
the frozen manifest when one exists (and says so when it does not).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

from retrieval_kernel.applicability import CALIBRATION_FILE
from retrieval_kernel.evaluation.lessons_calibration import calibrate
from retrieval_kernel.evaluation.lessons_eval import load_lessons_suite, open_split, retrieve

SPLIT = "calibration"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite_dir", nargs="?", type=Path, default=Path("fixtures/lessons"))
    parser.add_argument("--output", type=Path, default=CALIBRATION_FILE)
    args = parser.parse_args(argv)
    started = time.time()
    suite = load_lessons_suite(args.suite_dir)
    verify = bool(suite.manifest)
    run, _ = open_split(suite, SPLIT, verify=verify)
    with run:
        retrieved = {q["id"]: retrieve(run.workspace, q["query"]) for q in run.queries}
        chosen = calibrate(run.queries, retrieved, progress=lambda line: print(line, file=sys.stderr))
        queries = len(run.queries)
        no_answer = sum(bool(q["no_answer"]) for q in run.queries)
    result = {
        "split": SPLIT,
        "families": suite.families(SPLIT),
        "queries": queries,
        "no_answer_queries": no_answer,
        "manifest_verified": verify,
        "created_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 1),
        "method": (
            "weights: logistic regression on the calibration candidates; thresholds: grid search by "
            "lessons_calibration.objective; dense cutoff: most precise with coverage >= 0.98"
        ),
        **chosen,
    }
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"calibration split: {', '.join(result['families'])} ({queries} queries, {no_answer} no-answer)")
    print(f"manifest verified: {verify}")
    print("selector parameters chosen:")
    print(json.dumps(chosen["selector"], indent=1))
    print(f"selector on calibration: {chosen['selector_metrics']} (meets targets: {chosen['selector_meets_targets']})")
    print(f"dense cutoff chosen: {chosen['dense_cutoff']} -> {chosen['dense_cutoff_metrics']}")
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
