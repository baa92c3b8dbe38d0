"""Fusion: combine lane rankings by rank alone (reciprocal rank fusion).

Raw scores of different lanes live on different scales (BM25 is unbounded,
cosine is in [-1, 1]) and are never added. Each passage gets
``sum(1 / (RRF_K + rank))`` over the lanes that found it; ties break by passage id.
``RRF_K = 60`` is the constant of Cormack, Clarke and Buettcher (2009), not tuned here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..output.packet import LaneHit

RRF_K = 60


@dataclass(frozen=True)
class Fused:
    """One passage after fusion: its fused score and every lane's rank for it."""

    passage_id: str
    score: float
    hits: tuple[LaneHit, ...]


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[tuple[str, float]]], k: int = RRF_K) -> list[Fused]:
    """Fuse ``{lane: [(passage_id, raw_score), ...]}`` (each list best first)."""
    hits: dict[str, list[LaneHit]] = {}
    for lane in sorted(rankings):
        for rank, (passage_id, raw_score) in enumerate(rankings[lane], 1):
            hits.setdefault(passage_id, []).append(LaneHit(lane, rank, round(raw_score, 4)))
    fused = [
        Fused(passage_id, round(sum(1.0 / (k + hit.rank) for hit in lane_hits), 6), tuple(lane_hits))
        for passage_id, lane_hits in hits.items()
    ]
    return sorted(fused, key=lambda item: (-item.score, item.passage_id))
