"""The exact search's product shared with a helper thread: the same bits as one product, always."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from retrieval_kernel.projections import split_product
from retrieval_kernel.projections.exact import ExactVectors, blas_controller


def unit_rows(rows: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 384)).astype("float32")
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize(("rows", "seed"), [(4_096, 0), (10_007, 1), (25_000, 2), (3_000, 3)])
def test_the_split_product_is_bit_for_bit_one_product(rows: int, seed: int) -> None:
    matrix = unit_rows(rows, seed)
    vectors = unit_rows(20, seed + 100)
    with blas_controller().limit(limits=1, user_api="blas"):
        for vector in vectors:
            assert np.array_equal(split_product.product(matrix, vector), matrix @ vector)


def test_a_block_the_helper_never_starts_is_computed_by_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper that never runs (the other core busy) must not stall the query: the caller takes its block."""
    handed: list[split_product._Block] = []
    monkeypatch.setattr(split_product._HELPER, "hand", handed.append)
    matrix, vector = unit_rows(8_192, 4), unit_rows(1, 5)[0]
    assert np.array_equal(split_product.product(matrix, vector), matrix @ vector)
    assert len(handed) == 1 and handed[0].done.is_set()
    assert not handed[0].run_if_unclaimed()  # claimed once, by the caller: a late helper does nothing


def test_the_caller_waits_for_a_block_the_helper_has_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_helper(block: split_product._Block) -> None:
        def run() -> None:
            assert block.claim.acquire(blocking=False)
            started.set()
            release.wait(5)
            np.matmul(block.matrix, block.vector, out=block.out)
            block.done.set()

        threading.Thread(target=run, daemon=True).start()
        started.wait(5)

    monkeypatch.setattr(split_product._HELPER, "hand", slow_helper)
    matrix, vector = unit_rows(8_192, 6), unit_rows(1, 7)[0]
    threading.Timer(0.05, release.set).start()
    assert np.array_equal(split_product.product(matrix, vector), matrix @ vector)


def test_an_error_in_the_helpers_block_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(block: split_product._Block) -> None:
        block.claim.acquire()
        block.error = MemoryError("no room for the block")
        block.done.set()

    monkeypatch.setattr(split_product._HELPER, "hand", failing)
    with pytest.raises(MemoryError, match="no room"):
        split_product.product(unit_rows(8_192, 8), unit_rows(1, 9)[0])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_helper() -> None:
    matrix, vector = unit_rows(8_192, 10), unit_rows(1, 11)[0]
    expected = matrix @ vector
    assert np.array_equal(split_product.product(matrix, vector), expected)  # the parent's helper runs
    pid = os.fork()
    if pid == 0:  # the child has no helper thread: a stale one would leave its block to the caller
        ok = np.array_equal(split_product.product(matrix, vector), expected)
        ok = ok and split_product._HELPER._pid == os.getpid()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_exact_search_over_a_large_matrix_ranks_as_one_product_does() -> None:
    matrix = unit_rows(12_000, 12)
    ids = [f"n{i // 4}#p{i % 4}" for i in range(len(matrix))]
    exact = ExactVectors(ids, [pid.split("#")[0] for pid in ids], matrix)
    for vector in unit_rows(10, 13):
        scores = np.round(matrix @ vector, 6)
        expected = sorted((-float(scores[i]), ids[i]) for i in np.argsort(-scores)[:40])
        found = sorted((-score, pid) for pid, score in exact.search(vector, 40))
        assert found[:40] == expected
