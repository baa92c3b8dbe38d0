"""Build the shipped answer reader from a fine-tuned folder: ONNX, int8 in 7 bits, NaN guards dropped.

    .venv/bin/python scripts/reader_experiment.py --epochs 3 --save /tmp/reader
    .venv/bin/python scripts/build_reader.py /tmp/reader

The first command fine-tunes all-MiniLM-L6-v2 (the shipped weights) as a cross-encoder on the
policy suites up to policy-holdout22 (fixed seeds, about 35 minutes on two cores); this one
exports it to ``retrieval_kernel/pipeline/answer_reader.onnx`` the way the embedder's model is
made: weights int8 per output channel in 7 bits (the same score on every processor), the
attention NaN guards dropped (one unpadded pair per run never masks a key).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_kernel.pipeline.reader import READER_FILE
from retrieval_kernel.projections.embedding import _drop_nan_guards, _quantize


def export(source: Path, target: Path) -> None:
    """The fine-tuned sequence classifier at ``source`` as fp32 ONNX (one logit per pair)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(source), local_files_only=True).eval()

    class Logit(torch.nn.Module):
        def __init__(self, classifier: Any) -> None:
            super().__init__()
            self.classifier = classifier

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.classifier(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    example = torch.ones((1, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        Logit(model),
        (example, example, torch.zeros_like(example)),
        str(target),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logit"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "logit": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the folder reader_experiment.py --save wrote")
    parser.add_argument("--output", type=Path, default=READER_FILE)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        fp32, int8 = Path(work) / "fp32.onnx", Path(work) / "int8.onnx"
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            export(args.source, fp32)
            _quantize(fp32, int8)
        _drop_nan_guards(int8, args.output)
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
