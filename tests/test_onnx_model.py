"""The served int8 model: the attention NaN guards dropped, the vectors bit for bit the same."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest

from retrieval_kernel.projections import embedding

TEXTS = [
    "Who may approve a production deployment?",
    "x",
    "The pager rota approves deployments. " * 80,  # past 256 tokens: truncated
    "Ünïcode, numbers 3.14 and p<0.05 in one line.",
]


@pytest.fixture(scope="module")
def served() -> Path:
    return embedding.served_model(embedding.model_dir(), embedding.default_cache_dir())


def test_the_served_model_has_no_nan_guards(served: Path) -> None:
    import onnx

    kinds = [node.op_type for node in onnx.load(str(served)).graph.node]
    assert "IsNaN" not in kinds
    guarded = [
        node.op_type
        for node in onnx.load(str(embedding.quantized_model(embedding.model_dir(), served.parent))).graph.node
    ]
    assert guarded.count("IsNaN") == 6 and guarded.count("Where") - kinds.count("Where") == 6  # one per layer


def test_its_vectors_equal_the_guarded_models_bit_for_bit(served: Path) -> None:
    import onnxruntime

    ours = embedding.OnnxEmbedder(workers=1)
    guarded = copy.copy(ours)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    int8 = embedding.quantized_model(embedding.model_dir(), served.parent)
    guarded._single = onnxruntime.InferenceSession(str(int8), options, providers=["CPUExecutionProvider"])
    guarded._sessions, guarded._free = [guarded._single], [0]
    assert np.array_equal(ours.embed(TEXTS), guarded.embed(TEXTS))
    assert np.array_equal(ours.embed(TEXTS[:1]), guarded.embed(TEXTS[:1]))


def test_its_weights_use_seven_bits_so_no_processor_saturates_their_products(served: Path) -> None:
    # Without VNNI, ONNX Runtime sums pairs of uint8 x int8 products in 16 bits with saturation; full
    # 8-bit weights gave vectors differing by ~1% (cosine 0.99) between processors. |w| <= 64 cannot.
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(served))
    weights = [numpy_helper.to_array(t) for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert len(weights) >= 36  # six layers: q, k, v, out, two feed-forward matrices each
    assert max(int(np.abs(w.astype(np.int16)).max()) for w in weights) <= 64


def test_the_served_model_is_made_once(served: Path) -> None:
    made = served.stat().st_mtime_ns
    assert embedding.served_model(embedding.model_dir(), served.parent) == served
    assert served.stat().st_mtime_ns == made


def test_a_cache_it_cannot_write_to_serves_the_guarded_model(served: Path, tmp_path: Path, monkeypatch) -> None:
    import shutil

    int8 = embedding.quantized_model(embedding.model_dir(), served.parent)
    shutil.copy(int8, tmp_path / int8.name)

    def refuse(source: Path, target: Path) -> None:
        raise PermissionError(f"read-only: {target}")

    monkeypatch.setattr(embedding, "_drop_nan_guards", refuse)
    assert embedding.served_model(embedding.model_dir(), tmp_path) == tmp_path / int8.name


def test_loading_the_served_model_warns_about_nothing(served: Path, capfd) -> None:
    """ONNX Runtime writes to stderr (a notebook shows it) when a model holds initializers nothing reads."""
    import onnxruntime

    capfd.readouterr()
    onnxruntime.InferenceSession(str(served), providers=["CPUExecutionProvider"])
    assert "Removing initializer" not in capfd.readouterr().err


def test_a_new_embedder_loads_one_session_and_the_others_when_many_texts_come() -> None:
    ours = embedding.OnnxEmbedder(workers=2)
    assert ours._sessions == []  # a first query waits for its own session only
    alone = ours.embed(TEXTS[:1])
    assert ours._sessions == []
    together = ours.embed(TEXTS)
    assert len(ours._sessions) == 2 and sorted(ours._free) == [0, 1]
    assert np.array_equal(together[:1], alone)


def test_one_text_on_two_threads_gets_the_vector_one_thread_gives_bit_for_bit(monkeypatch) -> None:
    """The question's session splits rows and columns between two threads, never a sum: a text's vector
    is the same whether it is embedded alone (a question, a one-passage edit) or among many."""
    monkeypatch.setattr(embedding, "SECOND_THREAD_ABOVE_MS", 0.0)  # every processor is "slow"
    ours = embedding.OnnxEmbedder(workers=1)
    assert ours._single.get_session_options().intra_op_num_threads == min(2, os.cpu_count() or 1)
    texts = [*TEXTS, "How long is the refund window for orders placed online?", "word " * 300]
    alone = np.concatenate([ours.embed([text]) for text in texts])
    assert np.array_equal(alone, ours.embed(texts))


def test_the_question_session_takes_a_second_thread_only_where_one_thread_is_slow(monkeypatch) -> None:
    probes: list[float] = []

    def timed(action) -> float:
        action()
        probes.append(0.0)
        return {"fast": 2.0, "slow": 15.0}[speed]

    monkeypatch.setattr(embedding, "_timed", timed)
    threads = {}
    for speed in ("fast", "slow"):
        ours = embedding.OnnxEmbedder(workers=1)
        threads[speed] = ours._single.get_session_options().intra_op_num_threads
    assert threads == {"fast": 1, "slow": min(2, os.cpu_count() or 1)}
    assert len(probes) == (6 if (os.cpu_count() or 1) > 1 else 0)  # three timed runs each, after a first


def test_the_weights_digest_is_remembered_until_the_file_changes(tmp_path: Path, monkeypatch) -> None:
    import hashlib
    import os

    weights, cache = tmp_path / "model.safetensors", tmp_path / "cache"
    weights.write_bytes(b"first weights")
    first = embedding.weights_digest(weights, cache)
    assert first == hashlib.sha256(b"first weights").hexdigest()[:16]

    def no_hashing(_: bytes) -> None:
        raise AssertionError("hashed again")

    monkeypatch.setattr(embedding.hashlib, "sha256", no_hashing)
    assert embedding.weights_digest(weights, cache) == first  # remembered: not hashed
    weights.write_bytes(b"other weights")
    os.utime(weights, ns=(1, 1))  # same size, another modification time
    monkeypatch.undo()
    assert embedding.weights_digest(weights, cache) == hashlib.sha256(b"other weights").hexdigest()[:16]
    (cache / embedding.DIGEST_MEMO).write_text("{not json", encoding="utf-8")
    assert embedding.weights_digest(weights, cache) == hashlib.sha256(b"other weights").hexdigest()[:16]
