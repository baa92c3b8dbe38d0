"""The pipeline end to end: notes → record store → lanes → fusion → assembly → packet.

Adapters (magics, CLI, evaluation) call :class:`Workspace` and nothing below it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .assembly import RankedCandidate, assemble
from .config import default_store_dir
from .errors import BudgetError, EmptyQueryError, NotesDirError, QueryTooLongError, StoreError
from .freshness import parse_as_of
from .fusion import reciprocal_rank_fusion
from .indexing import SyncReport, refresh_lock, sync_notes
from .lexical import NAME as LEXICAL
from .lexical import SCORE_BASIS, LexicalHit, LexicalProjection, analyze
from .notes import DEFAULT_MAX_PASSAGE_CHARS, discover_notes
from .packet import DEFAULT_BUDGET_LIMIT, DEFAULT_BUDGET_UNIT, Budget, LaneReport, Packet
from .records import RecordStore

MAX_QUERY_CHARS = 4_000
DEFAULT_TOP = 8
MAX_TOP = 100
CANDIDATE_POOL = 50

# Abstention reason codes.
ABSTAIN_EMPTY_STORE = "empty_store"
ABSTAIN_UNDERSPECIFIED = "underspecified_query"
ABSTAIN_NO_MATCH = "no_match"

# Projection states.
CONSISTENT = "consistent"
STALE = "stale"
FAILED_WITH_LAST_GOOD = "failed-with-last-good"


@dataclass(frozen=True)
class RefreshOutcome:
    """The projection state after trying to bring it up to date."""

    state: str
    report: SyncReport | None
    error: str | None = None


class Workspace:
    """One notes root and its store: index it, query it, report its state."""

    def __init__(
        self,
        notes_dir: str | Path,
        store_dir: str | Path | None = None,
        max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
    ) -> None:
        self.notes_dir = Path(notes_dir)
        if not self.notes_dir.is_dir():
            raise NotesDirError(f"notes directory {self.notes_dir} does not exist or is not a directory")
        self.store_dir = Path(store_dir) if store_dir is not None else default_store_dir(self.notes_dir)
        self.max_passage_chars = max_passage_chars
        self.records = RecordStore(self.store_dir)
        self.lexical = LexicalProjection(self.store_dir)

    def close(self) -> None:
        self.lexical.close()
        self.records.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ indexing

    def index(self) -> SyncReport:
        """Bring the record store and every projection up to date (incrementally)."""
        with refresh_lock(self.store_dir):
            report = sync_notes(self.notes_dir, self.records, self.max_passage_chars)
            self.lexical.sync(self.records)
        return report

    def refresh(self) -> RefreshOutcome:
        """Like :meth:`index`, but a failure keeps the last good projection and says so."""
        try:
            report = self.index()
        except (StoreError, OSError) as exc:
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, f"refresh failed, serving the last good index: {exc}")
        return RefreshOutcome(CONSISTENT, report)

    def pending_changes(self) -> bool:
        """Whether the notes differ from the store by path, size or mtime (no hashing)."""
        stored = self.records.documents()
        on_disk = {p.relative_to(self.notes_dir).as_posix(): p.stat() for p in discover_notes(self.notes_dir)}
        if set(stored) != set(on_disk):
            return True
        return any(
            (doc.size, doc.mtime_ns) != (on_disk[path].st_size, on_disk[path].st_mtime_ns)
            for path, doc in stored.items()
        )

    # ------------------------------------------------------------ querying

    def query(
        self,
        text: str,
        as_of: str | dt.date | None = None,
        max_bytes: int | None = None,
        max_chars: int | None = None,
        top: int = DEFAULT_TOP,
        refresh: bool = True,
    ) -> Packet:
        """Answer ``text`` with a cited evidence packet within the budget."""
        query = _checked_query(text)
        budget = budget_from(max_bytes, max_chars)
        if not 1 <= top <= MAX_TOP:
            raise BudgetError(f"top must be between 1 and {MAX_TOP}, not {top}")
        clock = parse_as_of(as_of)
        outcome = self.refresh() if refresh else self._unrefreshed()
        hits, abstention = self._lexical_hits(query)
        lane = self._lexical_report(hits, outcome.state)
        candidates = self._ranked({LEXICAL: hits})
        shell = Packet(
            query=query,
            as_of=clock.isoformat(),
            budget=budget,
            projection=outcome.state,
            lanes=(lane,),
            evidence=(),
            abstained=True,
            abstention_reason=abstention,
            warnings=_warnings(outcome),
            trace_id=_trace_id(query, clock, budget, top, lane),
        )
        return assemble(shell, candidates, clock, top)

    def _unrefreshed(self) -> RefreshOutcome:
        return RefreshOutcome(STALE if self.pending_changes() else CONSISTENT, None)

    def _lexical_hits(self, query: str) -> tuple[list[LexicalHit], str | None]:
        if self.records.passage_count() == 0:
            return [], ABSTAIN_EMPTY_STORE
        if not analyze(query):
            return [], ABSTAIN_UNDERSPECIFIED
        hits = self.lexical.search(query, CANDIDATE_POOL)
        return hits, None if hits else ABSTAIN_NO_MATCH

    def _lexical_report(self, hits: list[LexicalHit], projection_state: str) -> LaneReport:
        state = self.records.projection(LEXICAL)
        lag = self.records.high_water() - state.high_water if state else self.records.high_water()
        status = "stale" if projection_state == STALE or lag else "ok" if hits else "empty"
        return LaneReport(
            name=LEXICAL,
            status=status,  # type: ignore[arg-type]
            candidates=len(hits),
            index_version=state.version if state else None,
            high_water=state.high_water if state else None,
            score_basis=SCORE_BASIS,
            lag=lag,
        )

    def _ranked(self, lane_hits: dict[str, list[LexicalHit]]) -> list[RankedCandidate]:
        rankings = {lane: [(hit.passage_id, hit.score) for hit in hits] for lane, hits in lane_hits.items()}
        matched = {hit.passage_id: hit.matched_terms for hits in lane_hits.values() for hit in hits}
        fused = reciprocal_rank_fusion(rankings)
        stored = self.records.passages(item.passage_id for item in fused)
        return [
            RankedCandidate(stored[item.passage_id], item.score, item.hits, matched.get(item.passage_id, ()))
            for item in fused
            if item.passage_id in stored
        ]


def budget_from(max_bytes: int | None, max_chars: int | None) -> Budget:
    """The budget named by at most one of ``max_bytes`` / ``max_chars`` (default 20,000 chars)."""
    if max_bytes is not None and max_chars is not None:
        raise BudgetError("give either max_bytes or max_chars, not both")
    if max_bytes is not None:
        return Budget.checked("bytes", max_bytes)
    if max_chars is not None:
        return Budget.checked("chars", max_chars)
    return Budget.checked(DEFAULT_BUDGET_UNIT, DEFAULT_BUDGET_LIMIT)


def _checked_query(text: str) -> str:
    query = (text or "").strip()
    if not query:
        raise EmptyQueryError("the query is empty: ask a question or give key words")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query has {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. Shorten it to its key words"
        )
    return query


def _warnings(outcome: RefreshOutcome) -> tuple[str, ...]:
    warnings: list[str] = []
    if outcome.error:
        warnings.append(outcome.error)
    if outcome.report:
        warnings += [
            f"{p.message} ({'last good revision kept' if p.kept_last_good else 'not indexed'})"
            for p in outcome.report.problems
        ]
        warnings += outcome.report.warnings
    return tuple(warnings)


def _trace_id(query: str, clock: dt.date, budget: Budget, top: int, lane: LaneReport) -> str:
    """A deterministic id for this query against this exact projection state."""
    material = [
        query,
        clock.isoformat(),
        budget.unit,
        budget.limit,
        top,
        lane.name,
        lane.index_version,
        lane.high_water,
    ]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]
