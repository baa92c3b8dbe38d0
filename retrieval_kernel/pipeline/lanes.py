"""Candidate generation: run each lane and report what it did, honestly.

A :class:`Lane` (identity, lexical, dense) runs on a query, names what stops it from
running (its ``problem``) and repairs its own projection; :class:`Workspace` only
orchestrates them.

Each lane returns a :class:`LaneRun`: its ranking (passage id, raw score in the
lane's own scale), and a :class:`~retrieval_kernel.output.packet.LaneReport` with its
status (``ok``, ``empty``, ``stale``, ``unavailable``), index version,
high-water mark, lag and, when it proposes nothing, the reason. Abstention
thresholds apply to each lane's own raw score, never to a fused score.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import LaneUnavailableError, StoreError
from ..output.packet import LaneReport
from ..projections import lexical
from ..projections.chroma_client import ChromaSettings, EmbeddedStoreUnreadableError
from ..projections.embedding import go_offline
from ..store.indexing import refresh_lock
from ..store.progress import Progress
from ..store.records import RecordStore
from . import identity

if TYPE_CHECKING:
    from ..projections.dense import DenseProjection

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
    repair_note: str | None = None  # a damaged projection rebuilt while answering (the packet says so)
    seen: dict[str, float] = field(default_factory=dict)  # every visible hit's raw score, thresholds not applied
    shadow: dict[str, float] = field(default_factory=dict)  # out-of-scope hits' raw scores: judged, never shown


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
    name: str,
    records: RecordStore,
    basis: str,
    count: int,
    stale: bool,
    reason: str | None = None,
    pending: int = 0,
    answered_at: int | None = None,
) -> LaneReport:
    """``lag``: change-log entries the lane's answer lacks, plus notes changed on disk not yet logged.

    ``answered_at`` is the change-log position the lane answered at when its in-memory form is ahead
    of its durable projection (whose write is deferred); by default, the projection's own.
    """
    state = records.projection(name)
    newest = records.high_water()
    version, high_water = (state.version, state.high_water) if state else (None, None)
    if state is not None and answered_at is not None:
        high_water = answered_at
    lag = (newest - high_water if high_water is not None else newest) + pending
    status = "stale" if stale or lag else "ok" if count else "empty"
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
    unseen: frozenset[str] = frozenset(),
) -> LaneRun:
    """The lexical lane's run: ``hidden`` passages dropped, ``unseen`` ones (outside the caller's scopes)
    also left out of BM25's statistics."""
    found = projection.search(query, limit + len(hidden), unseen)
    hits = [hit for hit in found if hit.passage_id not in hidden][:limit]
    shadow = {hit.passage_id: hit.score for hit in found if hit.passage_id in hidden}
    dropped = frozenset(shadow)
    kept = [hit for hit in hits if hit.score > LEXICAL_MIN_SCORE]
    reason = None if kept else "no passage shares a searchable word with the query"
    answered_at = projection.answering_high_water()
    report = _report(lexical.NAME, records, projection.score_basis, len(kept), stale, reason, pending, answered_at)
    matched = {hit.passage_id: hit.matched_terms for hit in kept}
    ranking = [(hit.passage_id, hit.score) for hit in kept]
    return LaneRun(report, ranking, matched, len(hits) - len(kept), dropped, shadow=shadow)


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
    answered_at: int | None = None,
    lagging: Collection[str] = (),
) -> LaneRun:
    """The dense lane's report for ``hits`` (best first), keeping those at or above ``min_cosine``.

    ``lagging``: notes whose new passages are not embedded yet (left out of ``hits``; the report says so).
    """
    shadow = {pid: score for pid, score in hits if pid in hidden}
    hits, dropped = _visible(hits, hidden, len(hits) if limit is None else limit, min_cosine)
    kept = [(pid, score) for pid, score in hits if score >= min_cosine]
    reason = None
    if hits and not kept:
        reason = f"best cosine {hits[0][1]:.3f} is below the threshold {min_cosine:.2f}"
    if lagging:
        reason = "; ".join(filter(None, [_unembedded_reason(lagging), reason]))
    report = _report(name, records, basis, len(kept), stale, reason, pending, answered_at)
    return LaneRun(report, kept, below_threshold=len(hits) - len(kept), hidden=dropped, seen=dict(hits), shadow=shadow)


def _unembedded_reason(paths: Collection[str], shown: int = 3) -> str:
    named = ", ".join(sorted(paths)[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
    return f"{len(paths)} changed note(s) not embedded yet ({named}): their passages are left out until they are"


# ---------------------------------------------------------------- the lanes a workspace runs


class LaneHost(Protocol):
    """What a lane needs from the workspace that runs it (the record store, its folder, its limits)."""

    records: RecordStore
    store_dir: Path
    candidate_pool: int
    dense_min_cosine: float
    lane_errors: dict[str, str]
    progress: Progress

    def deadline(self) -> float | None: ...


class Lane(Protocol):
    """One way of proposing candidates: it runs, says what stops it from running, and repairs itself."""

    name: str

    def run(
        self, query: str, hidden: frozenset[str], stale: bool, pending: int, unseen: frozenset[str] = frozenset()
    ) -> LaneRun:
        """Candidates for ``query`` without the ``hidden`` passages (outside the caller's scopes, or not
        eligible at the clock); ``unseen`` (the scope part of them) is also left out of any corpus
        statistics the lane scores with, so notes a caller may not see never move its scores."""
        ...

    def problem(self) -> str | None: ...

    def repair(self) -> None: ...


class IdentityLane:
    """Exact names (passage id, note id, alias, path, hash prefix) resolved in the record store itself."""

    name = identity.NAME

    def __init__(self, host: LaneHost) -> None:
        self.host = host

    def run(
        self, query: str, hidden: frozenset[str], stale: bool, pending: int, unseen: frozenset[str] = frozenset()
    ) -> LaneRun:
        return run_identity(query, self.host.records, self.host.candidate_pool, hidden, stale, pending)

    def problem(self) -> str | None:
        return self.host.lane_errors.get(self.name)

    def repair(self) -> None:
        """Nothing to repair: the record store is the source."""


class LexicalLane:
    """BM25F over the Whoosh projection; an unreadable index is rebuilt from the record store while answering."""

    name = lexical.NAME

    def __init__(self, host: LaneHost) -> None:
        self.host = host
        self.projection = lexical.LexicalProjection(host.store_dir, records=host.records)

    def run(
        self, query: str, hidden: frozenset[str], stale: bool, pending: int, unseen: frozenset[str] = frozenset()
    ) -> LaneRun:
        host = self.host
        try:
            return run_lexical(
                query, host.records, self.projection, host.candidate_pool, stale, hidden, pending, unseen
            )
        except lexical.LexicalUnreadableError as exc:
            problem = str(exc)
        try:
            self.repair()
            run = run_lexical(query, host.records, self.projection, host.candidate_pool, stale, hidden, pending, unseen)
            return replace(run, repair_note=f"{problem}; rebuilt it from the record store")
        except (lexical.LexicalUnreadableError, LaneUnavailableError, StoreError, OSError) as exc:
            return unavailable(self.name, self.projection.score_basis, f"{problem}; rebuilding it failed: {exc}")

    def problem(self) -> str | None:
        return self.host.lane_errors.get(self.name)

    def repair(self) -> None:
        """Rebuild from the record store (which holds every passage), if nobody else is publishing."""
        with refresh_lock(self.host.store_dir, wait=False):
            self.rebuild()

    def rebuild(self) -> None:
        """Build the next version from the record store, check it, then switch to it."""
        state = self.host.records.projection(self.name)
        self.projection.rebuild(self.host.records, (state.version if state else 0) + 1, self.host.deadline())

    def close(self) -> None:
        self.projection.close()


class DenseLane:
    """Cosine over the Chroma projection; Chroma and the embedder are imported on first use.

    A failure of the model or of Chroma makes the lane ``unavailable`` (kept in the host's
    ``lane_errors``, with its reason) while the other lanes still answer.
    """

    name = "dense"

    def __init__(self, host: LaneHost, embedder: str, chroma: ChromaSettings) -> None:
        self.host = host
        self.embedder = embedder
        self.chroma = chroma
        self._projection: DenseProjection | None = None

    @property
    def built(self) -> bool:
        return self._projection is not None

    @property
    def projection(self) -> DenseProjection:
        if self._projection is None:
            go_offline()  # before chromadb is imported: no telemetry, no hub downloads
            if importlib.util.find_spec("chromadb") is None:  # imported only when Chroma is opened
                raise LaneUnavailableError("the dense lane needs chromadb: pip install chromadb")
            from ..projections.dense import DenseProjection

            identity_of_store = self.host.records.store_identity()
            self._projection = DenseProjection(
                self.host.store_dir, self.embedder, chroma=self.chroma, store_id=identity_of_store
            )
            self._projection.progress = self.host.progress
        return self._projection

    def sync(self) -> None:
        """Bring the projection up to the record store; a failure is kept as the lane's problem, not raised."""
        errors = self.host.lane_errors
        try:
            try:
                self.projection.sync(self.host.records)
            except EmbeddedStoreUnreadableError as exc:  # damaged Chroma files: derived data, so rebuild them
                self.projection.discard_embedded()
                self.projection.sync(self.host.records)
                self.projection.rebuilt_because = str(exc)
            errors.pop(self.name, None)
        except StoreError:
            raise
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            errors[self.name] = f"{type(exc).__name__}: {exc}"

    def advance(self) -> bool:
        """Bring the in-memory exact-search vectors up to the record store (Chroma's write deferred);
        ``False`` when they cannot be (the lane failed, or has no in-memory form): write it now instead."""
        if self.problem():
            return False
        return self.projection.advance(self.host.records)

    def embed_changes(self) -> None:
        """Embed the passages the next :meth:`sync` adds into the embedding cache (no projection write);
        never raises: the sync embeds what is missing and reports what fails."""
        if self.problem():
            return
        with contextlib.suppress(Exception):
            self.projection.embed_changes(self.host.records)

    def embed_early(self) -> None:
        """Start embedding what the coming sync adds (a few passages) beside the work before it; never raises."""
        if self._projection is None or self.problem():
            return  # the sync itself imports Chroma and loads the model, and reports what fails
        with contextlib.suppress(Exception):  # the sync embeds them itself and reports what fails
            self._projection.embed_early(self.host.records)

    def problem(self) -> str | None:
        return self.host.lane_errors.get(self.name)

    def repair(self) -> None:
        """Rebuild a missing or damaged projection from the record store (if nobody else is publishing)."""
        with refresh_lock(self.host.store_dir, wait=False):
            self.sync()
        if self.problem():
            raise LaneUnavailableError(self.host.lane_errors[self.name])

    def rebuild(self) -> None:
        """Embed every passage again into the next version of the collection, then switch to it."""
        state = self.host.records.projection(self.name)
        self.projection.rebuild(self.host.records, (state.version if state else 0) + 1)

    def run(
        self, query: str, hidden: frozenset[str], stale: bool, pending: int, unseen: frozenset[str] = frozenset()
    ) -> LaneRun:
        go_offline()
        from ..projections.dense import StaleCollectionError, score_basis  # chromadb: only if Chroma is opened

        host = self.host
        basis = score_basis(f"all-MiniLM-L6-v2:{self.embedder}")
        if self.problem():
            return unavailable(self.name, basis, host.lane_errors[self.name])
        state = host.records.projection(self.name)
        if state is None:
            return unavailable(self.name, basis, "the dense projection has not been built: index the notes")
        repaired = None
        try:
            try:
                found = self.projection.search(query, host.candidate_pool + len(hidden), state, host.records)
            except (StaleCollectionError, EmbeddedStoreUnreadableError) as exc:  # missing or damaged: rebuild, answer
                self.repair()
                repaired = f"{exc}; rebuilt it from the record store"
                state = host.records.projection(self.name) or state
                found = self.projection.search(query, host.candidate_pool + len(hidden), state, host.records)
            basis = score_basis(self.projection.embedder_name)
            hits = [(h.passage_id, h.score) for h in found]
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            return unavailable(self.name, basis, f"{type(exc).__name__}: {exc}")
        floor = host.dense_min_cosine
        answered_at = self.projection.answering_high_water(state)
        lagging = self.projection.lagging()
        pool = host.candidate_pool
        run = run_dense(hits, host.records, self.name, basis, stale, floor, hidden, pool, pending, answered_at, lagging)
        return replace(run, repair_note=repaired)

    def close(self) -> None:
        if self._projection is not None:
            self._projection.close()
