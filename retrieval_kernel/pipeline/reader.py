"""The answer reader: does this passage state the answer to this question, read together with it?

The judge's signals look at words and one cosine, each side embedded alone. Its misses are near
ones: notes that talk about the asked thing and never state it. A cross-encoder reads the question
and the passage (with its heading path) in one pass and gives the probability that the passage
answers. The shipped one is all-MiniLM-L6-v2 (the dense lane's own weights) fine-tuned with a
one-logit head on the older scored policy suites, built by ``scripts/build_reader.py`` from the
folder ``scripts/reader_experiment.py --save`` writes, and shipped as int8 ONNX beside this module
(7-bit weights, like the embedder's, so every processor computes the same scores).

It reads one pair per run, unpadded, so a score never depends on its neighbours. No file, no
onnxruntime or a broken file: the reader is unavailable and the judge decides without it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LaneUnavailableError
from ..projections.embedding import go_offline, model_dir

if TYPE_CHECKING:
    from ..store.records import StoredPassage

READER_FILE = Path(__file__).with_name("answer_reader.onnx")
MAX_TOKENS = 160  # question and passage together, cut from the passage's end (as in training)


def read_as(passage: StoredPassage) -> str:
    """What the reader reads of a passage: its heading path, then its text (as in training)."""
    heading = " / ".join(passage.passage.heading_path)
    return f"{heading}: {passage.passage.text}" if heading else passage.passage.text


class AnswerReader:
    """The shipped cross-encoder on one single-threaded ONNX Runtime session."""

    def __init__(self, model_file: Path = READER_FILE) -> None:
        if not model_file.is_file():
            raise LaneUnavailableError(f"the answer reader's model {model_file} is missing; build it with "
                                       "scripts/build_reader.py")  # fmt: skip
        go_offline()
        try:
            import onnxruntime
            from tokenizers import Tokenizer

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            self._session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        except Exception as exc:  # a corrupt model file or a missing runtime: decide without the reader
            raise LaneUnavailableError(f"the answer reader could not load {model_file}: {exc}") from exc
        tokenizer.enable_truncation(MAX_TOKENS, strategy="only_second")
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # one session, asked by one question at a time
        self._scores: dict[tuple[str, str], float] = {}

    def probabilities(self, question: str, texts: Sequence[str]) -> list[float]:
        """Each text's probability of answering ``question`` (kept per pair: a question asked again is free)."""
        return [self._probability(question, text) for text in texts]

    def _probability(self, question: str, text: str) -> float:
        import numpy as np

        key = (question, text)
        if key in self._scores:
            return self._scores[key]
        encoding = self._tokenizer.encode(question, text)
        feeds = {
            "input_ids": np.array([encoding.ids], dtype="int64"),
            "attention_mask": np.array([encoding.attention_mask], dtype="int64"),
            "token_type_ids": np.array([encoding.type_ids], dtype="int64"),
        }
        with self._lock:
            logit = float(self._session.run(None, feeds)[0].reshape(-1)[0])
        probability = round(1.0 / (1.0 + float(np.exp(-max(-60.0, min(60.0, logit))))), 4)
        if len(self._scores) > 20_000:
            self._scores.clear()
        self._scores[key] = probability
        return probability


_LOADED: dict[Path, AnswerReader] = {}
_LOADING = threading.Lock()


def load_reader(model_file: Path = READER_FILE) -> AnswerReader:
    """The reader for ``model_file``, loaded once per process; ``LaneUnavailableError`` if it cannot load."""
    with _LOADING:
        if model_file not in _LOADED:
            _LOADED[model_file] = AnswerReader(model_file)
        return _LOADED[model_file]
