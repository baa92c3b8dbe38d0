"""Would a reader tell "the notes state it" from "the notes only talk about it"? A measurement, not shipped.

    .venv/bin/python scripts/reader_experiment.py [--epochs N] [--output FILE.json] [--save DIR] [--questions FILE]
        [--test SUITE,SUITE,...]

``--save`` keeps the fine-tuned cross-encoder (a transformers folder); ``--questions`` writes each test
question's judge confidence and per-passage scores as JSON lines, for studying a decision rule on them.

The answerability judge reads words, types and one sentence cosine. On three fresh holdouts in a row
(policy-holdout27 to 29) its wording rules moved almost nothing, and the questions it gets wrong are
near misses: the notes talk about the asked thing and never state it. This script measures two
readers on the policy suites already scored once (development data; a frozen suite, one without a
receipt, is never read), trained on the older suites and tested on the seven newest
(``TEST_SUITES``, or the suites ``--test`` names: other organisations, other authors):

- **a head on the shipped vectors**: logistic regression on ``q * s`` and ``|q - s|`` of the
  question's vector and the closest sentence's vector among the three leading passages (the
  InferSent recipe), plus both cosines;
- **a cross-encoder fine-tuned from the shipped all-MiniLM-L6-v2 weights** (a new one-logit head;
  question and heading path with passage read together), on (question, leading passage) pairs:
  a passage the question must admit is a positive, every other leading passage a negative.

Each is compared with the judge on the same test questions: over the pairs (does this passage answer?)
and over the questions the packet answered (the ones a veto could still empty). Nothing here changes
what ``%context`` does. Fixed seeds; torch on two threads; about 10 minutes per epoch on these machines.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from calibrate_answerability import scored  # scripts/ is on sys.path when a script runs
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from retrieval_kernel.evaluation.policy_eval import load_policy_questions, load_policy_suite
from retrieval_kernel.evaluation.suites import indexed_workspace
from retrieval_kernel.output.packet import Packet
from retrieval_kernel.pipeline.answerability import Judgement
from retrieval_kernel.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TEST_SUITES = tuple(f"policy-holdout{n}" for n in range(23, 30))
LEADING = 3  # leading candidates read per question (the judge's typed checks read as many)
MAX_TOKENS = 160  # question plus passage, for the cross-encoder
BATCH = 16
SEED = 0
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=[-*] )")


@dataclass
class Seen:
    """One question as the judge saw it."""

    suite: str
    question: str
    answerable: bool
    must: frozenset[str]
    answered: bool
    confidence: float  # the judge's confidence, 0 when it vetoed or abstained below its threshold
    leading: list[tuple[str, str, float]]  # (passage id, heading path and text, the judge's passage probability)


def scored_suites() -> list[str]:
    """Every policy suite with a receipt (scored once, development data since), by number."""
    return ["policy", *scored("policy-holdout")]


def asked(suites: Sequence[str]) -> Iterator[tuple[str, dict[str, Any], Workspace, Packet]]:
    """Each answerable or no-answer question of each suite, asked of its indexed notes as the suite's eval asks
    it: ``(suite, question row, workspace, packet)``."""
    for name in suites:
        suite = load_policy_suite(FIXTURES / name)
        with indexed_workspace(suite.notes_dir, None, ("identity", "lexical", "dense"), None) as workspace:
            for row in load_policy_questions(suite.questions_path):
                if row["expected_abstention"] not in (None, "no_relevant_evidence"):
                    continue
                packet = workspace.query(
                    row["question"], as_of=row["as_of"], scopes=row["scopes"], intent=row["intent"],
                    top=suite.top, refresh=False, max_chars=suite.budget,
                )  # fmt: skip
                yield name, row, workspace, packet
        print(f"asked {name}", file=sys.stderr, flush=True)


def collect(suites: Sequence[str]) -> list[Seen]:
    """Ask every answerable or no-answer question of each suite, keeping what the judge saw."""
    seen: list[Seen] = []
    captured: dict[str, Any] = {}
    judge = Workspace._judge

    def spy(self: Workspace, query: str, ranked: Sequence[Any], *args: Any, **kwargs: Any) -> Judgement:
        captured["judgement"] = judgement = judge(self, query, ranked, *args, **kwargs)
        captured["ranked"] = list(ranked[:LEADING])
        return judgement

    Workspace._judge = spy  # type: ignore[method-assign]
    try:
        for name, row, _, packet in asked(suites):
            judged: Judgement | None = captured.pop("judgement", None)  # popped: the next question starts empty
            leading: list[Any] = captured.pop("ranked", [])
            if judged is None or not leading:
                continue
            below = packet.abstained and packet.abstention_reason == "below_threshold"
            seen.append(
                Seen(
                    name,
                    row["question"],
                    row["expected_abstention"] is None,
                    frozenset(row["must_admit"]),
                    not packet.abstained,
                    0.0 if judged.overruled or below else judged.confidence,
                    [(c.id, _read_as(c.stored.passage), judged.probabilities.get(c.id, 0.0)) for c in leading],
                )
            )
    finally:
        Workspace._judge = judge  # type: ignore[method-assign]
    return seen


def _read_as(passage: Any) -> str:
    heading = " / ".join(passage.heading_path)
    return f"{heading}: {passage.text}" if heading else passage.text


def pairs_of(seen: Sequence[Seen]) -> list[tuple[str, str, float]]:
    """(question, passage, 1 if the question must admit it) for each leading passage."""
    return [(s.question, text, float(s.answerable and pid in s.must)) for s in seen for pid, text, _ in s.leading]


def vector_head(train: Sequence[Seen], test: Sequence[Seen]) -> np.ndarray:
    """Each test question's probability of being answerable, from the shipped model's vectors."""
    from retrieval_kernel.projections.embedding import load_embedder

    embedder = load_embedder()
    everyone = [*train, *test]
    texts = sorted(
        {s.question for s in everyone}
        | {s.leading[0][1] for s in everyone}
        | {sentence for s in everyone for sentence in _sentences(s)}
    )
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))

    def features(s: Seen) -> np.ndarray:
        question = vectors[s.question]
        closest = max(_sentences(s), key=lambda sentence: float(vectors[sentence] @ question))
        sentence = vectors[closest]
        first = vectors[s.leading[0][1]]
        return np.concatenate(
            [question * sentence, np.abs(question - sentence), [sentence @ question, first @ question]]
        )

    model = LogisticRegression(C=1.0, max_iter=4000).fit(
        np.stack([features(s) for s in train]), [s.answerable for s in train]
    )
    return model.predict_proba(np.stack([features(s) for s in test]))[:, 1]


def _sentences(s: Seen) -> list[str]:
    return [part.strip() for _, text, _ in s.leading for part in _SENTENCE.split(text) if len(part.split()) >= 3]


def cross_encoder(train: Sequence[Seen], test: Sequence[Seen], epochs: int, save: Path | None = None) -> np.ndarray:
    """Each test pair's probability that the passage answers, from MiniLM fine-tuned as a cross-encoder."""
    import torch

    model, tokenizer = fine_tune(pairs_of(train), epochs, save)
    test_pairs = pairs_of(test)
    scores: list[float] = []
    with torch.no_grad():
        for start in range(0, len(test_pairs), 32):
            batch = test_pairs[start : start + 32]
            encoded = encode_pairs(tokenizer, batch)
            scores.extend(torch.sigmoid(model(**encoded).logits.squeeze(-1)).tolist())
    return np.asarray(scores)


def fine_tune(
    pairs: Sequence[tuple[str, str, float]],
    epochs: int,
    save: Path | None = None,
    rate: float = 3e-5,
    positive_weight: float | None = None,
    max_tokens: int = MAX_TOKENS,
) -> tuple[Any, Any]:
    """The shipped all-MiniLM-L6-v2 weights fine-tuned as a cross-encoder (a new one-logit head) on
    ``(question, text, label)`` pairs: ``(model, tokenizer)``, the model in eval mode, kept in ``save`` if given.

    Fixed seeds, torch on two threads, AdamW with a linear schedule (a tenth of the steps warming up);
    ``positive_weight`` weighs the positives' loss (``None``: unweighted). Prints each epoch's time and loss.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    from retrieval_kernel.projections.embedding import model_dir

    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    tokenizer = AutoTokenizer.from_pretrained(model_dir())
    model = AutoModelForSequenceClassification.from_pretrained(model_dir(), num_labels=1)
    pairs = list(pairs)
    weight = None if positive_weight is None else torch.tensor(positive_weight)
    per_epoch = (len(pairs) + BATCH - 1) // BATCH
    optimiser = torch.optim.AdamW(model.parameters(), lr=rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimiser, per_epoch * epochs // 10, per_epoch * epochs)
    started = time.time()
    model.train()
    for epoch in range(epochs):
        random.shuffle(pairs)
        total = 0.0
        for step in range(per_epoch):
            batch = pairs[step * BATCH : (step + 1) * BATCH]
            logits = model(**encode_pairs(tokenizer, batch, max_tokens)).logits.squeeze(-1)
            labels = torch.tensor([p[2] for p in batch])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, pos_weight=weight)
            total += loss.item()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
        elapsed = time.time() - started
        print(f"epoch {epoch + 1}: {elapsed:.0f} s, mean loss {total / per_epoch:.4f}", file=sys.stderr, flush=True)
    model.eval()
    if save is not None:
        model.save_pretrained(save)
        tokenizer.save_pretrained(save)
    return model, tokenizer


def encode_pairs(tokenizer: Any, batch: Sequence[tuple[str, str, float]], max_tokens: int = MAX_TOKENS) -> Any:
    """Question and text read together, cut to ``max_tokens`` from the text's end."""
    return tokenizer(
        [p[0] for p in batch], [p[1] for p in batch], truncation="only_second", max_length=max_tokens,
        padding=True, return_tensors="pt",
    )  # fmt: skip


def vetoes(answerable: np.ndarray, answered: np.ndarray, probability: np.ndarray) -> list[dict[str, Any]]:
    """What vetoing answered questions below each bar would do: no-answer questions emptied, answers lost."""
    rows = []
    for bar in (0.1, 0.2, 0.3, 0.5):
        veto = answered & (probability < bar)
        rows.append(
            {
                "bar": bar,
                "no_answer_emptied": int((~answerable & veto).sum()),
                "answerable_lost": int((answerable & veto).sum()),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--save", type=Path, help="keep the fine-tuned cross-encoder in this folder")
    parser.add_argument("--questions", type=Path, help="write each test question's scores here (JSON lines)")
    parser.add_argument(
        "--test", default=",".join(TEST_SUITES), help="comma-separated scored suites to test on (the rest train)"
    )
    args = parser.parse_args(argv)
    suites = scored_suites()
    test_suites = tuple(args.test.split(","))
    unknown = sorted(set(test_suites) - set(suites))
    if unknown:
        parser.error(f"not a scored policy suite: {', '.join(unknown)}")
    seen = collect(suites)
    train = [s for s in seen if s.suite not in test_suites]
    test = [s for s in seen if s.suite in test_suites]
    answerable = np.array([s.answerable for s in test])
    answered = np.array([s.answered for s in test])
    confidence = np.array([s.confidence for s in test])
    pair_labels = np.array([p[2] for p in pairs_of(test)])
    judge_pairs = np.array([probability for s in test for _, _, probability in s.leading])
    head = vector_head(train, test)
    reader_pairs = cross_encoder(train, test, args.epochs, args.save)
    reader = np.array([max(reader_pairs[i : i + len(s.leading)]) for i, s in zip(_offsets(test), test, strict=True)])
    report = {
        "train_suites": [name for name in suites if name not in test_suites],
        "test_suites": list(test_suites),
        "train_questions": len(train),
        "train_pairs": len(pairs_of(train)),
        "test_questions": len(test),
        "test_no_answer": int((~answerable).sum()),
        "epochs": args.epochs,
        "pair_auc": {"judge": _auc(pair_labels, judge_pairs), "cross_encoder": _auc(pair_labels, reader_pairs)},
        "question_auc": {
            "judge": _auc(answerable, confidence),
            "vector_head": _auc(answerable, head),
            "cross_encoder": _auc(answerable, reader),
        },
        "answered_question_auc": {
            "judge": _auc(answerable[answered], confidence[answered]),
            "vector_head": _auc(answerable[answered], head[answered]),
            "cross_encoder": _auc(answerable[answered], reader[answered]),
        },
        "answered": {
            "answerable": int((answerable & answered).sum()),
            "no_answer": int((~answerable & answered).sum()),
        },
        "vetoes": {
            "vector_head": vetoes(answerable, answered, head),
            "cross_encoder": vetoes(answerable, answered, reader),
        },
    }
    if args.questions:
        _write_questions(args.questions, test, head, reader_pairs)
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


def _write_questions(path: Path, test: Sequence[Seen], head: np.ndarray, reader_pairs: np.ndarray) -> None:
    """One JSON line per test question: what the judge said and each reader's scores."""
    with path.open("w", encoding="utf-8") as out:
        for s, offset, vector in zip(test, _offsets(test), head, strict=True):
            row = {
                "suite": s.suite, "question": s.question, "answerable": s.answerable, "answered": s.answered,
                "confidence": s.confidence, "vector_head": float(vector),
                "leading": [
                    {"id": pid, "must": pid in s.must, "judge": judged, "reader": float(reader_pairs[offset + i])}
                    for i, (pid, _, judged) in enumerate(s.leading)
                ],
            }  # fmt: skip
            out.write(json.dumps(row) + "\n")


def _offsets(seen: Sequence[Seen]) -> list[int]:
    return list(np.cumsum([0, *(len(s.leading) for s in seen)])[:-1])


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    return round(float(roc_auc_score(labels, scores)), 3)


if __name__ == "__main__":
    raise SystemExit(main())
