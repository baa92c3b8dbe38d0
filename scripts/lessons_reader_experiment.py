"""Would a reader (a cross-encoder) fill the selector's empty answers on lessons? A measurement, not shipped.

    .venv/bin/python scripts/lessons_reader_experiment.py collect --output SEEN.json
    .venv/bin/python scripts/lessons_reader_experiment.py train SEEN.json --test lessons-holdout4 \
        [--epochs 4] [--rate 5e-5] [--positive-weight 3] [--save DIR] --output SCORES.json
    .venv/bin/python scripts/lessons_reader_experiment.py replay SEEN.json SCORES.json [SCORES2.json ...]

The rule selector's misses on the fresh lessons holdouts are empty answers: the useful record is
among the candidates (often first) but its applicability score is under ``min_first``, and the
no-answer questions of the same authors score as low (docs/applicability.md). Words and the shipped
vectors do not tell them apart. This script asks whether MiniLM fine-tuned as a cross-encoder does:

- ``collect`` indexes every seen lessons set (``SEEN_SETS``: never lessons-holdout5, which is frozen
  and unscored), runs the rule selector on every query and keeps what it saw: the candidates in
  fused order with their text, which hard rule or context rule set each aside, its applicability
  score, and what the selector returned;
- ``train`` fine-tunes the shipped all-MiniLM-L6-v2 weights as a cross-encoder (a new one-logit
  head) on (question, record) pairs of every set but ``--test`` (a record that supplies a need is a
  positive, every other leading candidate a negative) and scores the test set's leading pairs;
- ``replay`` applies decision rules that combine the selector with the reader's scores to the test
  sets and prints precision, coverage, critical misses, unsafe results and no-answer accuracy
  exactly as ``retrieval-kernel eval`` counts them.

Fixed seeds; torch on two threads; four epochs take about 6 minutes here. What it measured, and why the
reader was not kept: docs/applicability.md, "A reader for the empty answers".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reader_experiment import encode_pairs, fine_tune  # scripts/ is on sys.path when a script runs
from sklearn.metrics import roc_auc_score

from retrieval_kernel.applicability.calibration import Thresholds
from retrieval_kernel.applicability.conditions import context_of, parse_conditions, task_conditions
from retrieval_kernel.applicability.rule import RuleSelector, eligible_candidates, in_context
from retrieval_kernel.applicability.scoring import score_candidates
from retrieval_kernel.evaluation.lessons_eval import (
    method_metrics,
    open_split,
    retrieve,
    score_returned,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SEEN_SETS = (
    ("lessons", "calibration"),
    ("lessons", "dev"),
    ("lessons", "holdout"),
    ("lessons-holdout2", "holdout"),
    ("lessons-holdout3", "holdout"),
    ("lessons-holdout4", "holdout"),
)
LEADING = 6  # candidates in fused order read per question
TRAIN_LEADING = 4  # of which the reader is trained on
MAX_TOKENS = 128


def reader_text(candidate: Any) -> str:
    """What the reader reads of a record: its title and claims, then its body."""
    capsule = candidate.capsule
    head = " ".join([capsule.title, *capsule.claims])
    return f"{head}\n{candidate.text}"


def collect(output: Path) -> None:
    """Run the selector on every seen set's queries, keeping what it saw (JSON)."""
    selector = RuleSelector()
    thresholds: Thresholds = selector.thresholds
    rows: list[dict[str, Any]] = []
    for suite, split in SEEN_SETS:
        run, _ = open_split(FIXTURES / suite, split)
        with run:
            for query in run.queries:
                got = retrieve(run.workspace, query["query"])
                candidates = got.candidates
                selection = selector.select(query["query"], candidates, query.get("conditions") or None)
                stated = parse_conditions(query.get("conditions") or None)
                task, _ = task_conditions(query["query"], candidates, stated)
                eligible, _, hard = eligible_candidates(candidates, task, "orient")
                scored, _, _ = score_candidates(query["query"], candidates, eligible, thresholds)
                inside, _ = in_context(scored, context_of(candidates), thresholds.min_other_context)
                score = {s.candidate.record: s.score for s in scored}
                cosine = {s.candidate.record: s.features[0] for s in scored}
                hard_reason = {r.record: r.reason for r in hard}
                kept = {s.candidate.record for s in inside}
                rows.append(
                    {
                        "set": f"{suite}:{split}",
                        "id": query["id"],
                        "query": query["query"],
                        "no_answer": query["no_answer"],
                        "needs": query["needs"],
                        "unsafe": query["unsafe"],
                        "returned": list(selection.ids),
                        "fork": selection.fork is not None,
                        "candidates": [
                            {
                                "record": c.record,
                                "text": reader_text(c),
                                "hard": hard_reason.get(c.record),
                                "in_context": c.record in kept,
                                "score": score.get(c.record),
                                "cosine": cosine.get(c.record),
                                "rule": c.capsule.rule,
                            }
                            for c in candidates
                        ],
                    }
                )
        print(f"collected {suite}:{split}", file=sys.stderr, flush=True)
    output.write_text(json.dumps(rows), encoding="utf-8")


def useful_of(row: dict[str, Any]) -> set[str]:
    return {record for need in row["needs"] for record in need["records"]}


def pairs_of(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """(question, record text, 1 if the record supplies a need) for each leading candidate."""
    pairs = []
    for row in rows:
        useful = useful_of(row)
        for candidate in row["candidates"][:TRAIN_LEADING]:
            pairs.append((row["query"], candidate["text"], float(candidate["record"] in useful)))
    return pairs


def train(
    seen_path: Path,
    test_sets: Sequence[str],
    epochs: int,
    save: Path | None,
    output: Path,
    rate: float = 5e-5,
    positive_weight: float = 3.0,
) -> None:
    import torch

    rows = json.loads(seen_path.read_text(encoding="utf-8"))
    held = [r for r in rows if r["set"].split(":")[0] in test_sets]
    taught = [r for r in rows if r["set"].split(":")[0] not in test_sets]
    started = time.time()
    pairs = pairs_of(taught)
    print(f"{len(taught)} questions, {len(pairs)} pairs", file=sys.stderr, flush=True)
    model, tokenizer = fine_tune(pairs, epochs, save, rate, positive_weight, MAX_TOKENS)
    scores: dict[str, dict[str, float]] = {}
    with torch.no_grad():
        for row in held:
            leading = row["candidates"][:LEADING]
            batch = [(row["query"], c["text"], 0.0) for c in leading]
            if not batch:
                scores[f"{row['set']}/{row['id']}"] = {}
                continue
            encoded = encode_pairs(tokenizer, batch, MAX_TOKENS)
            probabilities = torch.sigmoid(model(**encoded).logits.squeeze(-1)).reshape(-1).tolist()
            scores[f"{row['set']}/{row['id']}"] = {c["record"]: p for c, p in zip(leading, probabilities, strict=True)}
    output.write_text(
        json.dumps(
            {"test": list(test_sets), "epochs": epochs, "seconds": round(time.time() - started), "scores": scores}
        ),
        encoding="utf-8",
    )


# ---------------------------------------------------------------- replay

Rule = Callable[[dict[str, Any], dict[str, float]], list[str]]


def selectable(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Leading candidates no hard rule or context rule set aside, in fused order."""
    return [c for c in row["candidates"][:LEADING] if c["hard"] is None and c["in_context"]]


def today(row: dict[str, Any], _: dict[str, float]) -> list[str]:
    return list(row["returned"])


def fill_empty(bar: float) -> Rule:
    """The selector's answer; when it is empty (and no fork held it back), the reader's best if it reaches ``bar``."""

    def rule(row: dict[str, Any], reader: dict[str, float]) -> list[str]:
        if row["returned"] or row["fork"]:
            return list(row["returned"])
        pool = [c for c in selectable(row) if c["record"] in reader]
        if not pool:
            return []
        best = max(pool, key=lambda c: reader[c["record"]])
        return [best["record"]] if reader[best["record"]] >= bar else []

    return rule


def fill_by_score(bar: float, pick: str = "score") -> Rule:
    """The selector's answer; when empty, if the reader rates some selectable record ``bar`` or more (the question
    reads as answerable), the selectable record ranked first by ``pick``: applicability ``score`` or fused ``rank``."""

    def rule(row: dict[str, Any], reader: dict[str, float]) -> list[str]:
        if row["returned"] or row["fork"]:
            return list(row["returned"])
        pool = [c for c in selectable(row) if c["record"] in reader]
        if not pool or max(reader[c["record"]] for c in pool) < bar:
            return []
        if pick == "score":
            best = max(pool, key=lambda c: c["score"] or 0.0)
        elif pick == "product":
            best = max(pool, key=lambda c: (c["score"] or 0.0) * reader[c["record"]])
        elif pick == "reader-of-top2":
            best = max(sorted(pool, key=lambda c: -(c["score"] or 0.0))[:2], key=lambda c: reader[c["record"]])
        else:
            best = pool[0]
        return [best["record"]]

    return rule


def fill_and_veto(bar: float, veto: float) -> Rule:
    """``fill_empty``, and a lone returned record the reader rates under ``veto`` is dropped."""
    fill = fill_empty(bar)

    def rule(row: dict[str, Any], reader: dict[str, float]) -> list[str]:
        returned = fill(row, reader)
        if len(returned) == 1 and reader.get(returned[0], 1.0) < veto:
            return []
        return returned

    return rule


def fill_and_add(bar: float, add: float, most: int = 2) -> Rule:
    """``fill_empty``, then further selectable records of another rule the reader rates ``add`` or more."""
    fill = fill_empty(bar)

    def rule(row: dict[str, Any], reader: dict[str, float]) -> list[str]:
        returned = fill(row, reader)
        if not returned:
            return returned
        rules = {c["rule"] for c in row["candidates"] if c["record"] in returned and c["rule"]}
        for candidate in sorted(selectable(row), key=lambda c: -reader.get(c["record"], 0.0)):
            if len(returned) >= most:
                break
            if candidate["record"] in returned or (candidate["rule"] and candidate["rule"] in rules):
                continue
            if reader.get(candidate["record"], 0.0) >= add:
                returned.append(candidate["record"])
                rules.add(candidate["rule"])
        return returned

    return rule


def replay(seen_path: Path, score_paths: Sequence[Path]) -> None:
    rows = {f"{r['set']}/{r['id']}": r for r in json.loads(seen_path.read_text(encoding="utf-8"))}
    rules: dict[str, Rule] = {"today": today}
    for bar in (0.3, 0.5, 0.7, 0.8, 0.9):
        rules[f"fill>={bar}"] = fill_empty(bar)
    for bar in (0.4, 0.5, 0.6, 0.7):
        rules[f"answerable>={bar}: by score"] = fill_by_score(bar)
        rules[f"answerable>={bar}: by rank"] = fill_by_score(bar, "rank")
        rules[f"answerable>={bar}: by product"] = fill_by_score(bar, "product")
        rules[f"answerable>={bar}: reader of 2"] = fill_by_score(bar, "reader-of-top2")
    for bar in (0.5, 0.7, 0.9):
        for veto in (0.02, 0.05, 0.1, 0.2):
            rules[f"fill>={bar},veto<{veto}"] = fill_and_veto(bar, veto)
    for bar in (0.7, 0.9):
        for add in (0.7, 0.9, 0.95):
            rules[f"fill>={bar},add>={add}"] = fill_and_add(bar, add)
    for path in score_paths:
        scored = json.loads(path.read_text(encoding="utf-8"))
        by_set: dict[str, list[str]] = {}
        for key in scored["scores"]:
            by_set.setdefault(key.split("/")[0], []).append(key)
        for name, keys in sorted(by_set.items()):
            test = [rows[k] for k in keys]
            labels, best = [], []
            for row in test:
                reader = scored["scores"][f"{row['set']}/{row['id']}"]
                useful = useful_of(row)
                labels += [c["record"] in useful for c in row["candidates"][:LEADING]]
                best.append(max(reader.values(), default=0.0))
            pair_scores = [
                scored["scores"][f"{r['set']}/{r['id']}"].get(c["record"], 0.0)
                for r in test
                for c in r["candidates"][:LEADING]
            ]
            answerable = [not r["no_answer"] for r in test]
            print(
                f"\n{name}: {len(test)} questions; pair AUC {roc_auc_score(labels, pair_scores):.3f}, "
                f"question AUC (best reader score) {roc_auc_score(answerable, best):.3f}"
            )
            print(f"{'rule':28} precision coverage critical unsafe no-answer returned")
            for label, rule in rules.items():
                outcomes = [score_returned(r, rule(r, scored["scores"][f"{r['set']}/{r['id']}"])) for r in test]
                m = method_metrics(test, outcomes)
                print(
                    f"{label:28} {m['precision'] or 0:9.3f} {m['coverage']:8.3f} {m['critical_misses']:8d} "
                    f"{m['unsafe_results']:6d} {m['no_answer_accuracy']:9.3f} {m['mean_returned']:8.2f}"
                )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    collecting = commands.add_parser("collect")
    collecting.add_argument("--output", type=Path, required=True)
    training = commands.add_parser("train")
    training.add_argument("seen", type=Path)
    training.add_argument("--test", nargs="+", required=True)
    training.add_argument("--epochs", type=int, default=4)
    training.add_argument("--save", type=Path)
    training.add_argument("--output", type=Path, required=True)
    training.add_argument("--rate", type=float, default=5e-5)
    training.add_argument("--positive-weight", type=float, default=3.0)
    replaying = commands.add_parser("replay")
    replaying.add_argument("seen", type=Path)
    replaying.add_argument("scores", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.output)
    elif args.command == "train":
        train(args.seen, args.test, args.epochs, args.save, args.output, args.rate, args.positive_weight)
    else:
        replay(args.seen, args.scores)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
