"""The pipeline end to end: notes → record store → lanes → fusion → assembly → packet.

Adapters (magics, CLI, evaluation) call :class:`Workspace` and nothing below it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .assembly import RankedCandidate, assemble
from .config import default_store_dir
from .embedding import DEFAULT_EMBEDDER, go_offline
from .errors import (
    BudgetError,
    EmptyQueryError,
    InputError,
    LaneUnavailableError,
    NotesDirError,
    QueryTooLongError,
    StoreError,
)
from .freshness import parse_as_of
from .fusion import reciprocal_rank_fusion
from .indexing import SyncReport, pending_changes, refresh_lock, sync_notes
from .lanes import DENSE_MIN_COSINE, LaneRun, run_dense, run_identity, run_lexical, unavailable
from .lexical import LexicalProjection, analyze
from .notes import DEFAULT_MAX_PASSAGE_CHARS
from .packet import DEFAULT_BUDGET_LIMIT, DEFAULT_BUDGET_UNIT, Budget, LaneReport, Packet
from .records import RecordStore

if TYPE_CHECKING:
    from .dense import DenseProjection
    from .rerank import Reranker

MAX_QUERY_CHARS = 4_000
DEFAULT_TOP = 8
MAX_TOP = 100
CANDIDATE_POOL = 50
LANES = ("identity", "lexical", "dense")

# Abstention reason codes.
ABSTAIN_EMPTY_STORE = "empty_store"
ABSTAIN_UNDERSPECIFIED = "underspecified_query"
ABSTAIN_NO_MATCH = "no_match"
ABSTAIN_BELOW_THRESHOLD = "below_threshold"
ABSTAIN_UNAVAILABLE = "index_unavailable"

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
    """One notes root and its store: index it, query it, report its state.

    ``lanes`` picks the retrieval lanes (default all three); ``embedder`` picks the
    dense lane's embedder (``onnx-int8`` or ``torch``). A lane that cannot run is
    reported ``unavailable`` with its reason while the others still answer.
    """

    def __init__(
        self,
        notes_dir: str | Path,
        store_dir: str | Path | None = None,
        max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
        lanes: Sequence[str] = LANES,
        embedder: str = DEFAULT_EMBEDDER,
        dense_min_cosine: float = DENSE_MIN_COSINE,
        reranker: Reranker | None = None,
    ) -> None:
        self.notes_dir = Path(notes_dir)
        if not self.notes_dir.is_dir():
            raise NotesDirError(f"notes directory {self.notes_dir} does not exist or is not a directory")
        self.store_dir = Path(store_dir) if store_dir is not None else default_store_dir(self.notes_dir)
        self.max_passage_chars = max_passage_chars
        self.lanes = checked_lanes(lanes)
        self.embedder = embedder
        self.dense_min_cosine = dense_min_cosine
        self.candidate_pool = CANDIDATE_POOL
        self.reranker = reranker
        self.records = RecordStore(self.store_dir)
        self.lexical = LexicalProjection(self.store_dir)
        self._dense: DenseProjection | None = None
        self.lane_errors: dict[str, str] = {}

    def close(self) -> None:
        self.lexical.close()
        if self._dense is not None:
            self._dense.close()
        self.records.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def dense(self) -> DenseProjection:
        """The dense projection (imports Chroma and the embedder on first use)."""
        if self._dense is None:
            go_offline()  # before chromadb is imported: no telemetry, no hub downloads
            try:
                from .dense import DenseProjection
            except ImportError as exc:
                raise LaneUnavailableError(f"the dense lane needs chromadb: pip install chromadb ({exc})") from exc
            self._dense = DenseProjection(self.store_dir, self.embedder)
        return self._dense

    # ------------------------------------------------------------ indexing

    def index(self) -> SyncReport:
        """Bring the record store and every projection up to date (incrementally).

        A dense-lane failure does not stop indexing: it is kept in ``lane_errors``
        and the packet reports the lane ``unavailable``.
        """
        with refresh_lock(self.store_dir):
            report = sync_notes(self.notes_dir, self.records, self.max_passage_chars)
            self.lexical.sync(self.records)
            if "dense" in self.lanes:
                self._sync_dense()
        return report

    def _sync_dense(self) -> None:
        try:
            self.dense.sync(self.records)
            self.lane_errors.pop("dense", None)
        except StoreError:
            raise
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            self.lane_errors["dense"] = f"{type(exc).__name__}: {exc}"

    def refresh(self) -> RefreshOutcome:
        """Like :meth:`index`, but a failure keeps the last good projection and says so."""
        try:
            report = self.index()
        except (StoreError, OSError) as exc:
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, f"refresh failed, serving the last good index: {exc}")
        return RefreshOutcome(CONSISTENT, report)

    def pending_changes(self) -> bool:
        """Whether the notes differ from the store by path, size or mtime (no hashing)."""
        return pending_changes(self.notes_dir, self.records)

    # ------------------------------------------------------------ querying

    def query(
        self,
        text: str,
        as_of: str | dt.date | None = None,
        max_bytes: int | None = None,
        max_chars: int | None = None,
        top: int = DEFAULT_TOP,
        refresh: bool = True,
        lanes: Sequence[str] | None = None,
    ) -> Packet:
        """Answer ``text`` with a cited evidence packet within the budget."""
        query = _checked_query(text)
        budget = budget_from(max_bytes, max_chars)
        if not 1 <= top <= MAX_TOP:
            raise BudgetError(f"top must be between 1 and {MAX_TOP}, not {top}")
        chosen = checked_lanes(lanes) if lanes is not None else self.lanes
        clock = parse_as_of(as_of)
        outcome = self.refresh() if refresh else self._unrefreshed()
        runs = self.run_lanes(query, chosen, stale=outcome.state == STALE)
        reports = tuple(run.report for run in runs.values())
        shell = Packet(
            query=query,
            as_of=clock.isoformat(),
            budget=budget,
            projection=outcome.state,
            lanes=reports,
            evidence=(),
            abstained=True,
            abstention_reason=self._abstention(query, runs),
            warnings=_warnings(outcome),
            trace_id=_trace_id(query, clock, budget, top, reports),
        )
        ranked = self.rank(runs)
        if self.reranker is not None:
            from .rerank import rerank

            ranked = rerank(query, ranked, self.reranker)
        return assemble(shell, ranked, clock, top)

    def _unrefreshed(self) -> RefreshOutcome:
        return RefreshOutcome(STALE if self.pending_changes() else CONSISTENT, None)

    def run_lanes(self, query: str, lanes: Sequence[str], stale: bool = False) -> dict[str, LaneRun]:
        """Run each chosen lane on ``query``; a lane that cannot run is reported, not raised."""
        runs: dict[str, LaneRun] = {}
        if "identity" in lanes:
            runs["identity"] = run_identity(query, self.records, self.candidate_pool)
        if "lexical" in lanes:
            runs["lexical"] = run_lexical(query, self.records, self.lexical, self.candidate_pool, stale)
        if "dense" in lanes:
            runs["dense"] = self._run_dense(query, stale)
        return runs

    def _run_dense(self, query: str, stale: bool) -> LaneRun:
        from .dense import NAME, score_basis

        basis = score_basis(f"all-MiniLM-L6-v2:{self.embedder}")
        if "dense" in self.lane_errors:
            return unavailable(NAME, basis, self.lane_errors["dense"])
        state = self.records.projection(NAME)
        if state is None:
            return unavailable(NAME, basis, "the dense projection has not been built: index the notes")
        try:
            dense = self.dense
            basis = score_basis(dense.embedder_name)
            hits = [(h.passage_id, h.score) for h in dense.search(query, self.candidate_pool, state)]
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            return unavailable(NAME, basis, f"{type(exc).__name__}: {exc}")
        return run_dense(hits, self.records, NAME, basis, stale, self.dense_min_cosine)

    def _abstention(self, query: str, runs: dict[str, LaneRun]) -> str | None:
        if self.records.passage_count() == 0:
            return ABSTAIN_EMPTY_STORE
        if all(run.report.status == "unavailable" for run in runs.values()):
            return ABSTAIN_UNAVAILABLE
        if any(run.ranking for run in runs.values()):
            return None
        if not analyze(query):
            return ABSTAIN_UNDERSPECIFIED
        if any(run.below_threshold for run in runs.values()):
            return ABSTAIN_BELOW_THRESHOLD
        return ABSTAIN_NO_MATCH

    def rank(self, runs: dict[str, LaneRun]) -> list[RankedCandidate]:
        """Identity hits first (in identity order), then the rest by reciprocal rank fusion."""
        fused = reciprocal_rank_fusion({name: run.ranking for name, run in runs.items()})
        named = [pid for pid, _ in runs["identity"].ranking] if "identity" in runs else []
        position = {pid: index for index, pid in enumerate(named)}
        fused.sort(key=lambda item: (position.get(item.passage_id, len(named)),))  # stable: RRF order kept
        matched = {pid: words for run in runs.values() for pid, words in run.matched.items()}
        stored = self.records.passages(item.passage_id for item in fused)
        return [
            RankedCandidate(stored[item.passage_id], item.score, item.hits, matched.get(item.passage_id, ()))
            for item in fused
            if item.passage_id in stored
        ]


def checked_lanes(lanes: Sequence[str] | str) -> tuple[str, ...]:
    """Lane names in canonical order; ``InputError`` for an unknown or empty choice."""
    names = [lane.strip() for lane in (lanes.split(",") if isinstance(lanes, str) else lanes) if lane.strip()]
    unknown = sorted(set(names) - set(LANES))
    if unknown or not names:
        raise InputError(f"lanes must be a non-empty subset of {', '.join(LANES)}; got {', '.join(names) or 'none'}")
    return tuple(lane for lane in LANES if lane in names)


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


def _trace_id(query: str, clock: dt.date, budget: Budget, top: int, lanes: tuple[LaneReport, ...]) -> str:
    """A deterministic id for this query against this exact projection state."""
    states = [[lane.name, lane.status, lane.index_version, lane.high_water] for lane in lanes]
    material = [query, clock.isoformat(), budget.unit, budget.limit, top, states]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]
