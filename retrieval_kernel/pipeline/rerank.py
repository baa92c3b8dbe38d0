"""Optional reranking: reorder the head of the fused list with a model the user points at.

Off by default: no cross-encoder ships its weights on PyPI, and nothing here may
download one. :class:`CrossEncoderReranker` loads a sentence-transformers
``CrossEncoder`` from a local folder; any object with ``name`` and ``score`` can
stand in (the tests use a deterministic fake). Reranked items record a
``rerank`` lane hit beside the lanes that found them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..errors import LaneUnavailableError
from ..output.packet import LaneHit
from ..projections.embedding import go_offline
from .candidates import Candidate

DEFAULT_DEPTH = 20


class Reranker(Protocol):
    """Scores (query, passage text) pairs; higher is more relevant."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded from a local folder, never downloaded."""

    def __init__(self, model_dir: str | Path) -> None:
        folder = Path(model_dir)
        if not folder.is_dir():
            raise LaneUnavailableError(
                f"reranker model folder {folder} does not exist; point it at a local CrossEncoder model"
            )
        go_offline()
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{folder.name}"
        self.model = CrossEncoder(str(folder), device="cpu", local_files_only=True)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in self.model.predict([(query, text) for text in texts])]


def rerank(query: str, candidates: list[Candidate], reranker: Reranker, depth: int = DEFAULT_DEPTH) -> list[Candidate]:
    """Reorder the first ``depth`` candidates by the reranker's scores (ties keep fused order)."""
    head, tail = candidates[:depth], candidates[depth:]
    if not head:
        return candidates
    scores = reranker.score(query, [c.stored.passage.text for c in head])
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    reranked = [
        replace(head[i], retrieved_by=(*head[i].retrieved_by, LaneHit("rerank", rank, round(scores[i], 4))))
        for rank, i in enumerate(order, 1)
    ]
    return reranked + tail
