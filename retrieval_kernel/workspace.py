"""The pipeline end to end: notes → record store → lanes → fusion → assembly → packet.

Adapters (magics, CLI, evaluation) call :class:`Workspace` and nothing below it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import policy
from .assembly import assemble
from .chroma_client import ChromaSettings, EmbeddedStoreUnreadableError, resolve_chroma
from .config import default_store_dir
from .embedding import DEFAULT_EMBEDDER, go_offline
from .errors import (
    BudgetError,
    CorruptStoreError,
    EmptyQueryError,
    InputError,
    LaneUnavailableError,
    NotesDirError,
    QueryTooLongError,
    RefreshBusyError,
    RefreshTimeoutError,
    StoreError,
)
from .facts import NoteFacts
from .freshness import parse_as_of
from .fusion import reciprocal_rank_fusion
from .indexing import (
    LOCK_NAME,
    StandingWarnings,
    SyncReport,
    pending_stats,
    refresh_lock,
    standing_warnings,
    sync_notes,
)
from .lanes import DENSE_MIN_COSINE, LaneRun, run_dense, run_identity, run_lexical, unavailable
from .lexical import LexicalProjection, LexicalUnreadableError, analyze
from .links import LinkGraph, NoteRef, build_links
from .live import LiveCheck
from .notes import DEFAULT_MAX_PASSAGE_CHARS
from .packet import DEFAULT_BUDGET_LIMIT, DEFAULT_BUDGET_UNIT, Budget, LaneReport, Packet
from .policy import Candidate, Request, Selection
from .records import RecordStore, StoredPassage, utc_now
from .refresh import (
    CONSISTENT,
    FAILED_WITH_LAST_GOOD,
    LAST_REFRESH_KEY,
    REFRESHING,
    STALE,
    Debounce,
    RefreshOutcome,
    RefreshPolicy,
    RefreshRecord,
    Watcher,
)
from .trace import build_trace

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
ABSTAIN_FILTERED_BY_SCOPE = "filtered_by_scope"

# A one-word query is underspecified when the word is this generic, or when it
# occurs in at least GENERIC_PASSAGE_FRACTION of the passages (and there are at least
# GENERIC_MIN_PASSAGES to judge by). An exact identifier is never underspecified.
GENERIC_WORDS = frozenset(
    [
        "info",
        "information",
        "help",
        "notes",
        "note",
        "details",
        "detail",
        "policy",
        "policies",
        "thing",
        "things",
        "stuff",
        "question",
        "questions",
        "update",
        "updates",
        "status",
        "overview",
        "summary",
        "docs",
        "documentation",
    ]
)
LEAD_PASSAGE_MIN_WORDS = 25  # a successor pulled in for a superseded note is shown by its first such passage
GENERIC_PASSAGE_FRACTION = 0.5
GENERIC_MIN_PASSAGES = 8


class Workspace:
    """One notes root and its store: index it, query it, report its state.

    ``lanes`` picks the retrieval lanes (default all three); ``embedder`` picks the
    dense lane's embedder (``onnx-int8`` or ``torch``); ``chroma`` where its vectors
    live (``"embedded"``, ``"http://host:port"`` or :class:`ChromaSettings`; default:
    ``RETRIEVAL_KERNEL_CHROMA_URL``, then pyproject, then embedded). A lane that cannot
    run is reported ``unavailable`` with its reason while the others still answer.
    ``refresh`` (``off``, ``on-query``, ``watch``), ``debounce``, ``refresh_timeout``
    and ``watch_interval`` (seconds) say when the projections catch up with the notes
    (see :mod:`retrieval_kernel.refresh`); ``index_clock`` stamps index times.
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
        live_checks: Sequence[LiveCheck] = (),
        chroma: str | ChromaSettings | None = None,
        refresh: str = "on-query",
        debounce: float = 0.0,
        refresh_timeout: float | None = None,
        watch_interval: float = 1.0,
        index_clock: Callable[[], str] = utc_now,
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
        self.live_checks = tuple(live_checks)
        self.policy = RefreshPolicy.checked(refresh, debounce, refresh_timeout, watch_interval)
        self.index_clock = index_clock  # when notes count as indexed (ISO 8601 UTC); fixed in demos and tests
        # Where the dense vectors live: "embedded", a server URL, or settings (else env var, pyproject, embedded).
        self.chroma = resolve_chroma(chroma)
        try:
            self.records = RecordStore(self.store_dir)
        except CorruptStoreError as exc:
            raise CorruptStoreError(str(exc).replace("NOTES_DIR", str(self.notes_dir))) from exc
        self.lexical = LexicalProjection(self.store_dir, records=self.records)
        self._dense: DenseProjection | None = None
        self.lane_errors: dict[str, str] = {}
        self._views: dict[tuple[int, frozenset[str]], _ScopeView] = {}
        self._debounce = Debounce(self.policy.debounce)
        self._watcher: Watcher | None = None
        self.watched_pending = 0  # notes the watcher last saw changed on disk and not yet indexed
        self.repairs: list[str] = []  # projections found damaged and rebuilt while answering (the next packet says so)
        self.last_refresh: RefreshRecord | None = None
        if self.policy.mode == "watch":
            self.watch()

    def close(self) -> None:
        self.stop_watching()
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
            identity = self.records.store_identity()
            self._dense = DenseProjection(self.store_dir, self.embedder, chroma=self.chroma, store_id=identity)
        return self._dense

    # ------------------------------------------------------------ indexing and refreshing

    def index(self, wait: bool = True) -> SyncReport:
        """Bring the record store and every projection up to date (incrementally).

        Holds the store's refresh lock; with ``wait=False`` a lock held elsewhere raises
        ``RefreshBusyError``. Past the policy's ``timeout`` it raises ``RefreshTimeoutError``
        (every note finished so far is kept; projections keep their last good version).
        A dense-lane failure does not stop indexing: it is kept in ``lane_errors`` and
        the packet reports the lane ``unavailable``.
        """
        deadline = self.policy.deadline()
        with refresh_lock(self.store_dir, wait=wait):
            try:
                report = sync_notes(self.notes_dir, self.records, self.max_passage_chars, deadline, self.index_clock)
                self.lexical.sync(self.records, deadline)
                if "dense" in self.lanes:
                    self._sync_dense()
            except BaseException as exc:
                self._remember(RefreshRecord(self.index_clock(), _result_of(exc), f"{exc}"))
                raise
        rebuilt = [f"lexical: {self.lexical.rebuilt_because}"] if self.lexical.rebuilt_because else []
        if self._dense is not None and self._dense.rebuilt_because:
            rebuilt.append(f"dense: {self._dense.rebuilt_because}")
        self._remember(
            RefreshRecord(
                self.index_clock(),
                "ok",
                self.lane_errors.get("dense"),
                len(report.added),
                len(report.updated),
                len(report.deleted),
                [problem.message for problem in report.problems],
                rebuilt,
            )
        )
        return report

    def _sync_dense(self) -> None:
        try:
            try:
                self.dense.sync(self.records)
            except EmbeddedStoreUnreadableError as exc:  # damaged Chroma files: derived data, so rebuild them
                self.dense.discard_embedded()
                self.dense.sync(self.records)
                self.dense.rebuilt_because = str(exc)
            self.lane_errors.pop("dense", None)
        except StoreError:
            raise
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            self.lane_errors["dense"] = f"{type(exc).__name__}: {exc}"

    def refresh(self, wait: bool = False) -> RefreshOutcome:
        """Like :meth:`index`, but never raises: a failure keeps the last good projections and says so.

        ``wait=False`` (what queries use) answers ``refreshing`` at once when another
        process or thread is publishing a refresh.
        """
        try:
            report = self.index(wait=wait)
        except RefreshBusyError as exc:
            return RefreshOutcome(REFRESHING, None, f"{exc}; answering from the last good index", self._pending())
        except (StoreError, OSError) as exc:
            message = f"refresh failed, serving the last good index: {exc}"
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, message, self._pending())
        self._debounce.reset()
        return RefreshOutcome(CONSISTENT, report)

    def _remember(self, record: RefreshRecord) -> None:
        """Keep the refresh's result for ``status`` (in the store when it can be written)."""
        self.last_refresh = record
        with contextlib.suppress(StoreError):  # a read-only store: the result stays in this process
            self.records.set_meta(LAST_REFRESH_KEY, record.to_json())

    def prepare(self, refresh: bool = True) -> RefreshOutcome:
        """Apply the refresh policy before a query; the outcome is what the packet reports."""
        if not refresh or self.policy.mode == "off":
            return self.observe()
        if self.policy.mode == "watch":  # the watcher's last check (at most one interval old): no stat walk here
            self.watch()
            return self.observe(pending=self.watched_pending)
        return self.refresh_when_due(retry_failed_lanes=True)

    def refresh_when_due(self, retry_failed_lanes: bool = False) -> RefreshOutcome:
        """Look for changed notes (a stat walk) and refresh once they have been quiet for the debounce
        window, or when a projection lags the change log (or, if asked, a lane failed last time)."""
        changes = self._pending_stats()
        pending = len(changes)
        if self._debounce.waiting(tuple(changes)):
            return self._stale(pending)
        if pending or self._behind() or (retry_failed_lanes and "dense" in self.lane_errors):
            return self.refresh()
        return self.observe(pending=0)

    def observe(self, pending: int | None = None) -> RefreshOutcome:
        """The projections' state without refreshing: refreshing, stale (with lag) or consistent."""
        pending = self._pending() if pending is None else pending
        if _lock_is_held(self.store_dir):
            return RefreshOutcome(
                REFRESHING, None, "a refresh is being published; answering from the last good index", pending
            )
        behind = pending or self._behind()
        last = self.last_refresh_record()
        if behind and last is not None and last.result != "ok":  # also a failure another process recorded
            error = f"the last refresh failed ({last.error}); answering from the last good index"
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, error, pending)
        return self._stale(pending) if behind else RefreshOutcome(CONSISTENT, None, None, 0)

    def last_refresh_record(self) -> RefreshRecord | None:
        """The last refresh this process ran, else the last one any process recorded in the store."""
        return self.last_refresh or RefreshRecord.from_json(self.records.meta(LAST_REFRESH_KEY))

    def _stale(self, pending: int) -> RefreshOutcome:
        why = (
            f"{pending} note(s) changed on disk are not indexed yet"
            if pending
            else "a projection is behind the record store"
        )
        return RefreshOutcome(STALE, None, f"{why}; answering from the last good index", pending)

    def _pending(self) -> int:
        """How many notes changed on disk since the change log last heard of them."""
        return len(self._pending_stats())

    def _pending_stats(self) -> list[tuple[str, int, int]]:
        try:
            return pending_stats(self.notes_dir, self.records)
        except OSError:
            return []

    def _behind(self) -> bool:
        """Whether a built projection of this workspace's lanes lags the change log."""
        newest = self.records.high_water()
        names = [lane for lane in ("lexical", "dense") if lane in self.lanes]
        states = [self.records.projection(name) for name in names]
        return any(state is None or state.high_water < newest for state in states)

    def watch(self) -> None:
        """Start the background watcher (idempotent); it refreshes on its own store connections."""
        if self._watcher is not None and self._watcher.running:
            return
        shadow = _Shadow(self)
        self._watcher = Watcher(shadow.poll, self.policy.interval).start()

    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    @property
    def watching(self) -> bool:
        return self._watcher is not None and self._watcher.running

    def lane_availability(self) -> dict[str, str | None]:
        """Each lane of this workspace: ``None`` when it can run, else why not (no query is run).

        A projection not built yet is not a reason: a refreshing query builds it.
        """
        return {lane: self.lane_errors.get(lane) for lane in self.lanes}

    def pending_changes(self) -> bool:
        """Whether the notes differ from the store by path, size or mtime (no hashing)."""
        return bool(self._pending())

    def status(self) -> dict[str, Any]:
        """Each projection's version, high-water mark and lag; the last refresh; the current state."""
        outcome = self.observe()
        newest = self.records.high_water()
        last = self.last_refresh_record()
        projections = []
        for name in [lane for lane in ("lexical", "dense") if lane in self.lanes]:
            state = self.records.projection(name)
            problem = self.lane_errors.get(name)
            if name == "lexical" and state is not None:
                problem = problem or self.lexical.problem()
            projections.append(
                {
                    "name": name,
                    "version": state.version if state else None,
                    "high_water": state.high_water if state else None,
                    "lag": (newest - state.high_water if state else newest) + outcome.pending,
                    "built_at": state.built_at if state else None,
                    "problem": problem if state else problem or "not built yet: index the notes",
                }
            )
        return {
            "notes_dir": str(self.notes_dir),
            "store_dir": str(self.store_dir),
            "state": outcome.state,
            "refresh": {"mode": self.policy.mode, "debounce": self.policy.debounce, "timeout": self.policy.timeout},
            "watching": self.watching,
            "record_store": {
                "path": str(self.records.path),
                "documents": len(self.records.documents()),
                "passages": self.records.passage_count(),
                "high_water": newest,
                "read_only": self.records.read_only,
            },
            "pending_notes": outcome.pending,
            "projections": projections,
            "last_refresh": None if last is None else json.loads(last.to_json()),
            "last_error": (last.error if last is not None and last.result != "ok" else None)
            or (self._watcher.last_error if self._watcher else None),
        }

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
        scopes: Sequence[str] | str | None = None,
        intent: str = policy.DEFAULT_INTENT,
        audit: bool = False,
    ) -> Packet:
        """Answer ``text`` with a cited evidence packet within the budget.

        ``scopes`` are the caller's (a note with a ``scope`` outside them is never
        seen; ``"*"`` sees all); ``intent`` is one of orient, verify, plan, audit;
        ``audit`` also shows excluded items, as history, never as current evidence.
        """
        query = _checked_query(text)
        budget = budget_from(max_bytes, max_chars)
        if not 1 <= top <= MAX_TOP:
            raise BudgetError(f"top must be between 1 and {MAX_TOP}, not {top}")
        chosen = checked_lanes(lanes) if lanes is not None else self.lanes
        request = Request(parse_as_of(as_of), checked_scopes(scopes), checked_intent(intent), audit)
        outcome = self.prepare(refresh)
        view = self._scope_view(request.scopes)
        runs = self.run_lanes(
            query, chosen, stale=outcome.state != CONSISTENT, hidden=view.hidden, pending=outcome.pending
        )
        reports = tuple(run.report for run in runs.values())
        repairs, self.repairs = self.repairs, []
        scope_filtered = len(frozenset().union(*(run.hidden for run in runs.values())))
        abstention = self._abstention(query, runs, view, scope_filtered)
        ranked = [] if abstention == ABSTAIN_UNDERSPECIFIED else self.rank(runs)
        if self.reranker is not None:
            from .rerank import rerank

            ranked = rerank(query, ranked, self.reranker)
        read = {candidate.stored.passage.path for candidate in ranked[:top]}
        shell = Packet(
            query=query,
            as_of=request.as_of.isoformat(),
            budget=budget,
            projection=outcome.state,
            lanes=reports,
            evidence=(),
            abstained=True,
            abstention_reason=abstention,
            exclusions={policy.SCOPE: scope_filtered},
            warnings=(*repairs, *_warnings(outcome, view, standing_warnings(self.records), read)),
            trace_id=_trace_id(query, request, budget, top, reports),
            scopes=tuple(sorted(request.scopes)),
            intent=request.intent,
            source_root=str(self.notes_dir.resolve()),
        )
        selection = policy.select(ranked, request, view.links, view.facts, self._lead_passage(view), top)
        packet = assemble(shell, selection, request.as_of, self.live_checks)
        packet = replace(packet, trace_id=_outcome_id(packet))  # same length: budget.used is unchanged
        self._keep_trace(packet, request, runs, ranked, selection)
        return packet

    def run_lanes(
        self,
        query: str,
        lanes: Sequence[str],
        stale: bool = False,
        hidden: frozenset[str] = frozenset(),
        pending: int = 0,
    ) -> dict[str, LaneRun]:
        """Run each chosen lane on ``query``; a lane that cannot run is reported, not raised.

        ``hidden`` passages (outside the caller's scopes) are dropped inside each lane,
        before counting, thresholds and ranks. ``pending`` notes changed on disk count
        in every lane's lag.
        """
        runs: dict[str, LaneRun] = {}
        if "identity" in lanes:
            runs["identity"] = run_identity(query, self.records, self.candidate_pool, hidden, stale, pending)
        if "lexical" in lanes:
            runs["lexical"] = self._run_lexical(query, stale, hidden, pending)
        if "dense" in lanes:
            runs["dense"] = self._run_dense(query, stale, hidden, pending)
        return runs

    def _run_lexical(self, query: str, stale: bool, hidden: frozenset[str], pending: int) -> LaneRun:
        """The lexical lane; an unreadable index is rebuilt from the record store, else reported."""
        try:
            return run_lexical(query, self.records, self.lexical, self.candidate_pool, stale, hidden, pending)
        except LexicalUnreadableError as exc:
            problem = str(exc)
        try:  # the record store holds every passage: rebuild the projection from it, then answer
            with refresh_lock(self.store_dir, wait=False):
                state = self.records.projection("lexical")
                self.lexical.rebuild(self.records, (state.version if state else 0) + 1, self.policy.deadline())
            self.repairs.append(f"{problem}; rebuilt it from the record store")
            return run_lexical(query, self.records, self.lexical, self.candidate_pool, stale, hidden, pending)
        except (LexicalUnreadableError, LaneUnavailableError, StoreError, OSError) as exc:
            return unavailable("lexical", self.lexical.score_basis, f"{problem}; rebuilding it failed: {exc}")

    def _repair_dense(self) -> None:
        """Rebuild a missing or damaged dense projection from the record store (if nobody else is publishing)."""
        with refresh_lock(self.store_dir, wait=False):
            self._sync_dense()
        if "dense" in self.lane_errors:
            raise LaneUnavailableError(self.lane_errors["dense"])

    def _run_dense(self, query: str, stale: bool, hidden: frozenset[str] = frozenset(), pending: int = 0) -> LaneRun:
        from .dense import NAME, StaleCollectionError, score_basis

        basis = score_basis(f"all-MiniLM-L6-v2:{self.embedder}")
        if "dense" in self.lane_errors:
            return unavailable(NAME, basis, self.lane_errors["dense"])
        state = self.records.projection(NAME)
        if state is None:
            return unavailable(NAME, basis, "the dense projection has not been built: index the notes")
        try:
            try:
                found = self.dense.search(query, self.candidate_pool + len(hidden), state)
            except (StaleCollectionError, EmbeddedStoreUnreadableError) as exc:  # missing or damaged: rebuild, answer
                self._repair_dense()
                self.repairs.append(f"{exc}; rebuilt it from the record store")
                state = self.records.projection(NAME) or state
                found = self.dense.search(query, self.candidate_pool + len(hidden), state)
            basis = score_basis(self.dense.embedder_name)
            hits = [(h.passage_id, h.score) for h in found]
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            return unavailable(NAME, basis, f"{type(exc).__name__}: {exc}")
        return run_dense(
            hits, self.records, NAME, basis, stale, self.dense_min_cosine, hidden, self.candidate_pool, pending
        )

    # ------------------------------------------------------------ scope, links, traces

    def _scope_view(self, scopes: frozenset[str]) -> _ScopeView:
        """The notes a caller with ``scopes`` may see, and their links (cached per change-log state)."""
        key = (self.records.high_water(), scopes)
        if key not in self._views:
            if len(self._views) > 16:
                self._views.clear()
            self._views[key] = _ScopeView.build(self.records, scopes)
        return self._views[key]

    def _lead_passage(self, view: _ScopeView) -> Callable[[str], StoredPassage | None]:
        def lead(path: str) -> StoredPassage | None:
            if path not in view.facts:
                return None
            passages = self.records.passages_of(path)
            # The first passage with substance (an ADR's first section is often only its title and date).
            chosen = next((p for p in passages if len(p.text.split()) >= LEAD_PASSAGE_MIN_WORDS), None)
            chosen = chosen or (passages[0] if passages else None)
            return self.records.passages([chosen.id]).get(chosen.id) if chosen else None

        return lead

    def _keep_trace(
        self,
        packet: Packet,
        request: Request,
        runs: dict[str, LaneRun],
        ranked: list[Candidate],
        selection: Selection,
    ) -> None:
        body = build_trace(packet, request, runs, ranked, selection, self.candidate_pool, self.dense_min_cosine)
        self.records.save_trace(packet.trace_id, body, utc_now())

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """How the packet with ``trace_id`` was built, if this store kept it."""
        return self.records.trace(trace_id)

    def _abstention(self, query: str, runs: dict[str, LaneRun], view: _ScopeView, scope_filtered: int) -> str | None:
        if self.records.passage_count() == 0:
            return ABSTAIN_EMPTY_STORE
        if all(run.report.status == "unavailable" for run in runs.values()):
            return ABSTAIN_UNAVAILABLE
        named = "identity" in runs and bool(runs["identity"].ranking)
        if not named and self._underspecified(query, view):
            return ABSTAIN_UNDERSPECIFIED
        if any(run.ranking for run in runs.values()):
            return None
        if scope_filtered:
            return ABSTAIN_FILTERED_BY_SCOPE
        if any(run.below_threshold for run in runs.values()):
            return ABSTAIN_BELOW_THRESHOLD
        return ABSTAIN_NO_MATCH

    def _underspecified(self, query: str, view: _ScopeView) -> bool:
        """Only stopwords, or one generic word (by the fixed list, or found in most passages)."""
        terms = set(analyze(query))
        if len(terms) != 1:
            return not terms
        words = [word.lower().strip("?!.,;:'\"") for word in query.split()]
        if any(word in GENERIC_WORDS for word in words if analyze(word)):
            return True
        term = terms.pop()
        visible = self.records.passage_count() - len(view.hidden)  # hidden passages never count
        hidden_with = sum(term in analyze(sp.passage.text) for sp in self.records.passages(view.hidden).values())
        with_term = self.lexical.passages_with(term) - hidden_with
        return visible >= GENERIC_MIN_PASSAGES and with_term >= GENERIC_PASSAGE_FRACTION * visible

    def rank(self, runs: dict[str, LaneRun]) -> list[Candidate]:
        """Identity hits first (in identity order), then the rest by reciprocal rank fusion."""
        fused = reciprocal_rank_fusion({name: run.ranking for name, run in runs.items()})
        named = [pid for pid, _ in runs["identity"].ranking] if "identity" in runs else []
        position = {pid: index for index, pid in enumerate(named)}
        fused.sort(key=lambda item: (position.get(item.passage_id, len(named)),))  # stable: RRF order kept
        matched = {pid: words for run in runs.values() for pid, words in run.matched.items()}
        stored = self.records.passages(item.passage_id for item in fused)
        return [
            Candidate(stored[item.passage_id], item.score, item.hits, matched.get(item.passage_id, ()))
            for item in fused
            if item.passage_id in stored
        ]


@dataclass(frozen=True)
class _ScopeView:
    """What one set of caller scopes can see: note facts by path, hidden passages, links."""

    facts: dict[str, NoteFacts]
    hidden: frozenset[str]
    links: LinkGraph
    hidden_paths: frozenset[str] = frozenset()

    @property
    def all_paths(self) -> frozenset[str]:
        return frozenset(self.facts) | self.hidden_paths

    @classmethod
    def build(cls, records: RecordStore, scopes: frozenset[str]) -> _ScopeView:
        documents = records.documents()
        shown = {path: doc for path, doc in documents.items() if policy.visible(doc.facts, scopes)}
        hidden = frozenset(p.id for path in documents if path not in shown for p in records.passages_of(path))
        links = build_links(NoteRef(doc.path, doc.module, doc.facts) for doc in shown.values())
        hidden_paths = frozenset(documents) - frozenset(shown)
        return cls({path: doc.facts for path, doc in shown.items()}, hidden, links, hidden_paths)


def checked_scopes(scopes: Sequence[str] | str | None) -> frozenset[str]:
    """The caller's scopes: a comma-separated string, a list, or ``None`` for none."""
    if scopes is None:
        return frozenset()
    names = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    if any(not isinstance(name, str) for name in names):
        raise InputError(f"scopes must be names (strings), got {scopes!r}")
    return frozenset(name.strip() for name in names if name.strip())


def checked_intent(intent: str) -> str:
    if intent not in policy.INTENTS:
        raise InputError(f"intent must be one of {', '.join(policy.INTENTS)}, not {intent!r}")
    return intent


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
    if text is not None and not isinstance(text, str):
        raise InputError(f"the query must be text, not {type(text).__name__}")
    query = (text or "").strip()
    if not query:
        raise EmptyQueryError("the query is empty: ask a question or give key words")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query has {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. Shorten it to its key words"
        )
    return query


def _warnings(outcome: RefreshOutcome, view: _ScopeView, standing: StandingWarnings, read: set[str]) -> tuple[str, ...]:
    """The warnings this packet carries: the refresh's state, what is wrong in the folder, notes that
    cannot be read (their last good revision serves), and warnings about the notes it draws on.

    When some notes are outside the caller's scopes, a warning is shown only if it names
    a note the caller can see and none it cannot; the rest are counted, never quoted.
    """
    warnings = [outcome.error] if outcome.error else []
    folder = [(text, ()) for text in standing.folder]
    problems = [(text, (path,)) for path, texts in sorted(standing.problems.items()) for text in texts]
    about = [text for path in sorted(read & standing.notes.keys()) for text in standing.notes[path]]
    notes = [(text, tuple(path for path in view.all_paths if path in text)) for text in about]
    withheld = 0
    for text, paths in [*folder, *problems, *notes]:
        if not view.hidden_paths or (paths and all(path in view.facts for path in paths)):
            warnings.append(text)
        else:
            withheld += 1
    if withheld:
        warnings.append(f"{withheld} indexing warning(s) about notes outside your scopes are not shown")
    return tuple(warnings)


def _outcome_id(packet: Packet) -> str:
    """The trace id, extended with what was decided (so a changed live verdict gets its own trace)."""
    decided = [[item.id, item.role, item.live_verified, item.line_end] for item in packet.evidence]
    material = [packet.trace_id, decided, packet.abstention_reason, [c.resolution for c in packet.conflicts]]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]


def _trace_id(query: str, request: Request, budget: Budget, top: int, lanes: tuple[LaneReport, ...]) -> str:
    """A deterministic id for this query, caller and clock against this exact projection state."""
    states = [[lane.name, lane.status, lane.index_version, lane.high_water] for lane in lanes]
    caller = [request.as_of.isoformat(), sorted(request.scopes), request.intent, request.audit]
    material = [query, caller, budget.unit, budget.limit, top, states]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]


def rebuild(notes_dir: str | Path, store_dir: str | Path | None = None, **options: Any) -> SyncReport:
    """Set the record store aside (kept as ``records.sqlite3.damaged-<time>``), drop every projection,
    and build everything again from the notes. The recovery for a damaged store."""
    from .refresh import set_aside

    notes = Path(notes_dir)
    if not notes.is_dir():
        raise NotesDirError(f"notes directory {notes} does not exist or is not a directory")
    store = Path(store_dir) if store_dir is not None else default_store_dir(notes)
    store.mkdir(parents=True, exist_ok=True)
    with refresh_lock(store, wait=True):
        set_aside(store, utc_now().replace(":", ""))
    with Workspace(notes, store, **options) as workspace:
        return workspace.index()


def _lock_is_held(store_dir: Path) -> bool:
    """Whether someone holds the store's refresh lock right now (probed without waiting)."""
    if not (store_dir / LOCK_NAME).exists():
        return False
    try:
        with refresh_lock(store_dir, wait=False):
            return False
    except RefreshBusyError:
        return True
    except StoreError:
        return False  # a read-only store: nobody can be publishing into it


def _result_of(exc: BaseException) -> str:
    if isinstance(exc, RefreshBusyError):
        return "busy"
    if isinstance(exc, RefreshTimeoutError):
        return "timeout"
    return "failed"


class _Shadow:
    """The watcher's own workspace on the same notes and store (its own connections, in its thread)."""

    def __init__(self, owner: Workspace) -> None:
        self._owner = owner
        self._workspace: Workspace | None = None

    def poll(self) -> None:
        if self._workspace is None:
            owner = self._owner
            self._workspace = Workspace(
                owner.notes_dir,
                owner.store_dir,
                owner.max_passage_chars,
                owner.lanes,
                owner.embedder,
                owner.dense_min_cosine,
                chroma=owner.chroma,
                refresh="off",
                debounce=owner.policy.debounce,
                refresh_timeout=owner.policy.timeout,
                index_clock=owner.index_clock,
            )
        workspace = self._workspace
        outcome = workspace.refresh_when_due()
        if outcome.report is not None:  # it refreshed: look again for notes saved meanwhile
            self._owner.last_refresh = workspace.last_refresh
            self._owner.watched_pending = workspace._pending()
        else:
            self._owner.last_refresh = workspace.last_refresh or self._owner.last_refresh
            self._owner.watched_pending = outcome.pending
