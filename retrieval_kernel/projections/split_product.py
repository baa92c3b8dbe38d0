"""A matrix-vector product on two cores without waking BLAS's own threads.

Exact search runs its product on one BLAS thread: OpenBLAS's second thread spins after each
product and, on a busy two-core machine, cost a real query 5-6 ms. Yet one thread leaves half the
machine idle for the longest single step of a dense search. So a large product is cut in two row
blocks: a helper thread of ours (which sleeps, never spins, between questions) takes the first,
the caller the second. If the helper has not started its block by the time the caller is done (the
other core is busy), the caller takes that block back and computes it itself, so a query never
waits on a thread that is not running.

The blocks are cut at a multiple of :data:`ALIGN` rows and each row's dot product is the same BLAS
kernel's either way, so the scores are bit for bit those of one product (a test checks it).
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass, field

import numpy as np

SPLIT_FROM = 4096  # rows; below this one thread's product takes a fraction of a millisecond
ALIGN = 64  # the first block's rows are a multiple of this


@dataclass
class _Block:
    """The first row block of one product, claimed by whichever thread gets to it first."""

    matrix: np.ndarray
    vector: np.ndarray
    out: np.ndarray
    claim: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run_if_unclaimed(self) -> bool:
        """Compute the block unless another thread has claimed it; whether this call computed it."""
        if not self.claim.acquire(blocking=False):
            return False
        try:
            np.matmul(self.matrix, self.vector, out=self.out)
        except BaseException as error:  # handed to the caller, which raises it
            self.error = error
        finally:
            self.done.set()
        return True


class _Helper:
    """One daemon thread that computes blocks handed to it (started on first use, again after a fork)."""

    def __init__(self) -> None:
        self._blocks: queue.SimpleQueue[_Block] = queue.SimpleQueue()
        self._pid: int | None = None
        self._lock = threading.Lock()

    def hand(self, block: _Block) -> None:
        with self._lock:
            if self._pid != os.getpid():  # never started, or this is a forked child without the thread
                self._blocks = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(self._blocks,), name="exact-product", daemon=True).start()
                self._pid = os.getpid()
        self._blocks.put(block)

    @staticmethod
    def _serve(blocks: queue.SimpleQueue[_Block]) -> None:
        while True:
            blocks.get().run_if_unclaimed()


_HELPER = _Helper()


def product(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` (float32), the first rows on the helper thread when the matrix is large."""
    rows = matrix.shape[0]
    if rows < SPLIT_FROM:
        return matrix @ vector
    cut = rows // 2 // ALIGN * ALIGN
    out = np.empty(rows, dtype=np.result_type(matrix, vector))
    block = _Block(matrix[:cut], vector, out[:cut])
    _HELPER.hand(block)
    np.matmul(matrix[cut:], vector, out=out[cut:])
    if not block.run_if_unclaimed():
        block.done.wait()
    if block.error is not None:
        raise block.error
    return out
