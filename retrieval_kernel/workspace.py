"""The pipeline end to end: notes → record store → lanes → fusion → assembly → packet.

Adapters (magics, CLI, evaluation) call :class:`Workspace` and nothing below it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import policy
from .assembly import assemble
from .chroma_client import ChromaSettings, resolve_chroma
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
from .facts import NoteFacts
from .freshness import parse_as_of
from .fusion import reciprocal_rank_fusion
from .indexing import SyncReport, pending_changes, refresh_lock, sync_notes
from .lanes import DENSE_MIN_COSINE, LaneRun, run_dense, run_identity, run_lexical, unavailable
from .lexical import LexicalProjection, analyze
from .links import LinkGraph, NoteRef, build_links
from .live import LiveCheck
from .notes import DEFAULT_MAX_PASSAGE_CHARS
from .packet import DEFAULT_BUDGET_LIMIT, DEFAULT_BUDGET_UNIT, Budget, LaneReport, Packet
from .policy import Candidate, Request, Selection
from .records import RecordStore, StoredPassage, utc_now
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
    dense lane's embedder (``onnx-int8`` or ``torch``); ``chroma`` where its vectors
    live (``"embedded"``, ``"http://host:port"`` or :class:`ChromaSettings`; default:
    ``RETRIEVAL_KERNEL_CHROMA_URL``, then pyproject, then embedded). A lane that cannot
    run is reported ``unavailable`` with its reason while the others still answer.
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
        # Where the dense vectors live: "embedded", a server URL, or settings (else env var, pyproject, embedded).
        self.chroma = resolve_chroma(chroma)
        self.records = RecordStore(self.store_dir)
        self.lexical = LexicalProjection(self.store_dir)
        self._dense: DenseProjection | None = None
        self.lane_errors: dict[str, str] = {}
        self._views: dict[tuple[int, frozenset[str]], _ScopeView] = {}

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
            identity = self.records.store_identity()
            self._dense = DenseProjection(self.store_dir, self.embedder, chroma=self.chroma, store_id=identity)
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

    def lane_availability(self) -> dict[str, str | None]:
        """Each lane of this workspace: ``None`` when it can run, else why not (no query is run).

        A projection not built yet is not a reason: a refreshing query builds it.
        """
        return {lane: self.lane_errors.get(lane) for lane in self.lanes}

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
        outcome = self.refresh() if refresh else self._unrefreshed()
        view = self._scope_view(request.scopes)
        runs = self.run_lanes(query, chosen, stale=outcome.state == STALE, hidden=view.hidden)
        reports = tuple(run.report for run in runs.values())
        scope_filtered = len(frozenset().union(*(run.hidden for run in runs.values())))
        abstention = self._abstention(query, runs, view, scope_filtered)
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
            warnings=_warnings(outcome, view),
            trace_id=_trace_id(query, request, budget, top, reports),
            scopes=tuple(sorted(request.scopes)),
            intent=request.intent,
            source_root=str(self.notes_dir.resolve()),
        )
        ranked = [] if abstention == ABSTAIN_UNDERSPECIFIED else self.rank(runs)
        if self.reranker is not None:
            from .rerank import rerank

            ranked = rerank(query, ranked, self.reranker)
        selection = policy.select(ranked, request, view.links, view.facts, self._lead_passage(view), top)
        packet = assemble(shell, selection, request.as_of, self.live_checks)
        packet = replace(packet, trace_id=_outcome_id(packet))  # same length: budget.used is unchanged
        self._keep_trace(packet, request, runs, ranked, selection)
        return packet

    def _unrefreshed(self) -> RefreshOutcome:
        return RefreshOutcome(STALE if self.pending_changes() else CONSISTENT, None)

    def run_lanes(
        self, query: str, lanes: Sequence[str], stale: bool = False, hidden: frozenset[str] = frozenset()
    ) -> dict[str, LaneRun]:
        """Run each chosen lane on ``query``; a lane that cannot run is reported, not raised.

        ``hidden`` passages (outside the caller's scopes) are dropped inside each lane,
        before counting, thresholds and ranks.
        """
        runs: dict[str, LaneRun] = {}
        if "identity" in lanes:
            runs["identity"] = run_identity(query, self.records, self.candidate_pool, hidden)
        if "lexical" in lanes:
            runs["lexical"] = run_lexical(query, self.records, self.lexical, self.candidate_pool, stale, hidden)
        if "dense" in lanes:
            runs["dense"] = self._run_dense(query, stale, hidden)
        return runs

    def _run_dense(self, query: str, stale: bool, hidden: frozenset[str] = frozenset()) -> LaneRun:
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
            found = dense.search(query, self.candidate_pool + len(hidden), state)
            hits = [(h.passage_id, h.score) for h in found]
        except Exception as exc:  # the model or Chroma failed: the lane is unavailable, say why
            return unavailable(NAME, basis, f"{type(exc).__name__}: {exc}")
        return run_dense(hits, self.records, NAME, basis, stale, self.dense_min_cosine, hidden, self.candidate_pool)

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
    query = (text or "").strip()
    if not query:
        raise EmptyQueryError("the query is empty: ask a question or give key words")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query has {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. Shorten it to its key words"
        )
    return query


def _warnings(outcome: RefreshOutcome, view: _ScopeView) -> tuple[str, ...]:
    """The refresh's warnings this caller may see.

    When some notes are outside the caller's scopes, a warning is shown only if it names
    a note the caller can see and none it cannot; the rest are counted, never quoted.
    """
    warnings = [outcome.error] if outcome.error else []
    if outcome.report is None:
        return tuple(warnings)
    problems = [
        (f"{p.message} ({'last good revision kept' if p.kept_last_good else 'not indexed'})", (p.path,))
        for p in outcome.report.problems
    ]
    notes = [(text, tuple(path for path in view.all_paths if path in text)) for text in outcome.report.warnings]
    withheld = 0
    for text, paths in [*problems, *notes]:
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
