"""Candidate generation: run each lane and report what it did, honestly.

Each lane returns a :class:`LaneRun`: its ranking (passage id, raw score in the
lane's own scale), and a :class:`~retrieval_kernel.packet.LaneReport` with its
status (``ok``, ``empty``, ``stale``, ``unavailable``), index version,
high-water mark, lag and, when it proposes nothing, the reason. Abstention
thresholds apply to each lane's own raw score, never to a fused score.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from . import identity, lexical
from .packet import LaneReport
from .records import RecordStore

LEXICAL_MIN_SCORE = 0.0  # any shared term; BM25 scores do not transfer between corpora
# Cosine below which a dense hit is not evidence. Calibrated on SciFact *train* queries
# (scripts/calibrate_dense.py: the 5th percentile of query-to-relevant-abstract cosine).
DENSE_MIN_COSINE = 0.32


@dataclass(frozen=True)
class LaneRun:
    """One lane's ranking (best first, thresholds applied) and its report."""

    report: LaneReport
    ranking: list[tuple[str, float]] = field(default_factory=list)
    matched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    below_threshold: int = 0
    hidden: frozenset[str] = frozenset()  # out-of-scope passages the lane found and dropped


def _visible(
    hits: list[tuple[str, float]], hidden: Collection[str], limit: int, min_score: float
) -> tuple[list[tuple[str, float]], frozenset[str]]:
    """Drop out-of-scope hits before anything is counted, thresholded or ranked.

    Only hidden hits that would have passed the lane's threshold are counted as dropped, so
    the count says how many out-of-scope passages matched, not how many exist.
    """
    if not hidden:
        return hits[:limit], frozenset()
    dropped = frozenset(pid for pid, score in hits if pid in hidden and score >= min_score)
    return [hit for hit in hits if hit[0] not in hidden][:limit], dropped


def unavailable(name: str, basis: str, reason: str) -> LaneRun:
    return LaneRun(LaneReport(name, "unavailable", 0, None, None, basis, reason=reason))


def _report(
    name: str, records: RecordStore, basis: str, count: int, stale: bool, reason: str | None = None, pending: int = 0
) -> LaneReport:
    """``lag``: change-log entries the projection has not applied, plus notes changed on disk not yet logged."""
    state = records.projection(name)
    newest = records.high_water()
    lag = (newest - state.high_water if state else newest) + pending
    status = "stale" if stale or lag else "ok" if count else "empty"
    version, high_water = (state.version, state.high_water) if state else (None, None)
    return LaneReport(name, status, count, version, high_water, basis, lag=lag, reason=reason)  # type: ignore[arg-type]


def run_identity(
    query: str,
    records: RecordStore,
    limit: int,
    hidden: Collection[str] = (),
    stale: bool = False,
    pending: int = 0,
) -> LaneRun:
    """Names resolved against the record store itself (no projection: its lag is the notes not yet logged)."""
    found = identity.resolve(query, records, limit + len(hidden))
    dropped = frozenset(hit.passage_id for hit in found if hit.passage_id in hidden)
    hits = [hit for hit in found if hit.passage_id not in hidden][:limit]
    high_water = records.high_water()
    report = LaneReport(
        identity.NAME,
        "stale" if stale and pending else "ok" if hits else "empty",
        len(hits),
        None,
        high_water,
        identity.SCORE_BASIS,
        lag=pending,
        reason=None if hits else "the query names no known identifier",
    )
    return LaneRun(report, [(hit.passage_id, 1.0) for hit in hits], hidden=dropped)


def run_lexical(
    query: str,
    records: RecordStore,
    projection: lexical.LexicalProjection,
    limit: int,
    stale: bool,
    hidden: Collection[str] = (),
    pending: int = 0,
) -> LaneRun:
    found = projection.search(query, limit + len(hidden))
    hits = [hit for hit in found if hit.passage_id not in hidden][:limit]
    dropped = frozenset(hit.passage_id for hit in found if hit.passage_id in hidden)
    kept = [hit for hit in hits if hit.score > LEXICAL_MIN_SCORE]
    reason = None if kept else "no passage shares a searchable word with the query"
    report = _report(lexical.NAME, records, projection.score_basis, len(kept), stale, reason, pending)
    matched = {hit.passage_id: hit.matched_terms for hit in kept}
    return LaneRun(report, [(hit.passage_id, hit.score) for hit in kept], matched, len(hits) - len(kept), dropped)


def run_dense(
    hits: list[tuple[str, float]],
    records: RecordStore,
    name: str,
    basis: str,
    stale: bool,
    min_cosine: float = DENSE_MIN_COSINE,
    hidden: Collection[str] = (),
    limit: int | None = None,
    pending: int = 0,
) -> LaneRun:
    """The dense lane's report for ``hits`` (best first), keeping those at or above ``min_cosine``."""
    hits, dropped = _visible(hits, hidden, len(hits) if limit is None else limit, min_cosine)
    kept = [(pid, score) for pid, score in hits if score >= min_cosine]
    reason = None
    if hits and not kept:
        reason = f"best cosine {hits[0][1]:.3f} is below the threshold {min_cosine:.2f}"
    report = _report(name, records, basis, len(kept), stale, reason, pending)
    return LaneRun(report, kept, below_threshold=len(hits) - len(kept), hidden=dropped)
