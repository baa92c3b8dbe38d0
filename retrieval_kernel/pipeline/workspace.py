"""The pipeline end to end: notes → record store → lanes → fusion → assembly → packet.

Adapters (magics, CLI, explorer, evaluation) call :class:`Workspace`; its refreshing half is
:class:`~retrieval_kernel.pipeline.upkeep.Upkeep`, its lanes are :class:`~retrieval_kernel.pipeline.lanes.Lane` objects.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.notes import DEFAULT_MAX_PASSAGE_CHARS
from ..errors import CorruptStoreError, NotesDirError
from ..output.packet import Budget, LaneReport, Packet
from ..projections.chroma_client import ChromaSettings
from ..projections.embedding import DEFAULT_EMBEDDER
from ..projections.lexical import LexicalProjection
from ..settings import default_store_dir, resolve_chroma
from ..store.indexing import SyncReport, refresh_lock, standing_warnings
from ..store.progress import Progress
from ..store.records import RecordStore, StoredPassage, utc_now
from ..store.refresh import (
    CONSISTENT,
    STALE,
    Debounce,
    RefreshOutcome,
    RefreshPolicy,
    RefreshRecord,
    Watcher,
    checked_change_detection,
)
from . import policy
from .abstention import (
    ABSTAIN_BELOW_THRESHOLD,
    ABSTAIN_FILTERED_BY_SCOPE,
    ABSTAIN_NO_MATCH,
    ABSTAIN_UNDERSPECIFIED,
    abstention_reason,
)
from .answerability import POOL_JUDGED, Judge, Judgement, Signals
from .assembly import assemble, with_live
from .candidates import DEFAULT_INTENT, SCOPE, Candidate, Request, Selection
from .conflicts import mentions
from .eligibility import Eligibility, split_runs
from .freshness import parse_as_of
from .fusion import reciprocal_rank_fusion
from .lanes import DENSE_MIN_COSINE, DenseLane, IdentityLane, Lane, LaneRun, LexicalLane
from .live import LiveCheck
from .live_policy import apply_live
from .requests import (
    CANDIDATE_POOL,
    DEFAULT_TOP,
    LANES,
    budget_from,
    checked_intent,
    checked_lanes,
    checked_query,
    checked_scopes,
    checked_top,
)
from .scope import ScopeView, ScopeViews, packet_warnings
from .timing import Stages
from .trace import build_trace
from .upkeep import Upkeep
from .validity import Standing
from .versions import component_versions

if TYPE_CHECKING:
    import numpy as np

    from ..projections.dense import DenseProjection
    from .rerank import Reranker

LEAD_PASSAGE_MIN_WORDS = 25  # a successor pulled in for a superseded note is shown by its first such passage
OUTLINE_CACHE_LIMIT = 50_000  # notes whose heading paths are kept between queries (per change-log state)
SENTENCE_VECTORS = 20_000  # value-stating sentences whose vectors are kept for the judge (~30 MB at most)


class Workspace(Upkeep):
    """One notes root and its store: index it, query it, report its state.

    ``lanes`` picks the retrieval lanes (default all three); ``embedder`` picks the
    dense lane's embedder (``onnx-int8`` or ``torch``); ``chroma`` where its vectors
    live (``"embedded"``, ``"http://host:port"`` or :class:`ChromaSettings`; default:
    pyproject, then ``RETRIEVAL_KERNEL_CHROMA_URL``, then embedded). A lane that cannot
    run is reported ``unavailable`` with its reason while the others still answer.
    ``refresh`` (``off``, ``on-query``, ``watch``), ``debounce``, ``refresh_timeout``
    and ``watch_interval`` (seconds) say when the projections catch up with the notes
    (see :mod:`retrieval_kernel.store.refresh`); ``index_clock`` stamps index times.
    ``judge_answers=False`` turns the answerability judgement off (every candidate the lanes
    propose counts as answering; for studying a lane on its own). ``change_detection``
    ``notify`` (default) learns of changed notes from the OS and stats the notes only after
    a change (falling back to ``walk`` where the OS cannot notify); ``walk`` stats every
    note on every refreshing query (for folders whose changes the OS does not report, such
    as some network mounts). ``progress`` shows a bar (tqdm) while a long index or refresh
    reads notes, indexes passages or embeds them. ``defer_writes`` (``on-query`` mode): a query that
    finds changed notes answers from the record store and the in-memory search forms, and writes the
    Whoosh and Chroma projections once the workspace is idle (:mod:`retrieval_kernel.store.refresh`);
    ``index()``, ``refresh()`` and ``close()`` leave them written.
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
        judge_answers: bool = True,
        change_detection: str = "notify",
        progress: bool = False,
        defer_writes: bool = True,
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
        self.change_detection = checked_change_detection(change_detection)
        self.progress = Progress(enabled=progress)
        self.index_clock = index_clock  # when notes count as indexed (ISO 8601 UTC); fixed in demos and tests
        # Where the dense vectors live: "embedded", a server URL, or settings (else env var, pyproject, embedded).
        self.chroma = resolve_chroma(chroma)
        try:
            self.records = RecordStore(self.store_dir)
        except CorruptStoreError as exc:
            raise CorruptStoreError(str(exc).replace("NOTES_DIR", str(self.notes_dir))) from exc
        self.lane_errors: dict[str, str] = {}
        self.identity_lane = IdentityLane(self)
        self.lexical_lane = LexicalLane(self)
        self.lexical_lane.projection.progress = self.progress
        self.dense_lane = DenseLane(self, embedder, self.chroma)
        self._views: dict[frozenset[str], ScopeViews] = {}  # by the caller's scopes
        self._eligibilities: dict[tuple[frozenset[str], dt.date], tuple[ScopeView, Eligibility]] = {}
        self._standings: dict[tuple[frozenset[str], dt.date], tuple[ScopeView, Standing]] = {}
        self.judge = Judge(self.lexical_lane.projection, self._outlines_of, similarity=self._similarity)
        self._sentence_vectors: dict[str, np.ndarray] = {}  # value-stating sentences the judge compared
        self._outlines: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._outlines_at = -1  # the change-log state ``_outlines`` was read at
        self.judge_answers = judge_answers  # off: every candidate counts as answering (the policy alone decides)
        self._debounce = Debounce(self.policy.debounce)
        self._watcher: Watcher | None = None
        self.watched_pending = 0  # notes the watcher last saw changed on disk and not yet indexed
        self.last_refresh: RefreshRecord | None = None
        self.last_timings: dict[str, float] = {}  # where the last query's time went, ms by stage
        self.defer_writes = defer_writes
        self._stop_writes = threading.Event()
        if self.policy.mode == "watch":
            self.watch()

    def close(self) -> None:
        self.stop_watching()
        self.finish_writes()
        self.close_change_feed()
        self.lexical_lane.close()
        self.dense_lane.close()
        self.records.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def dense(self) -> DenseProjection:
        """The dense projection (imports Chroma and the embedder on first use)."""
        return self.dense_lane.projection

    @property
    def lexical(self) -> LexicalProjection:
        """The lexical (Whoosh) projection."""
        return self.lexical_lane.projection

    def lane(self, name: str) -> Lane:
        """The lane called ``name`` (identity, lexical or dense)."""
        lanes: dict[str, Lane] = {
            "identity": self.identity_lane,
            "lexical": self.lexical_lane,
            "dense": self.dense_lane,
        }
        return lanes[checked_lanes([name])[0]]

    def lane_availability(self) -> dict[str, str | None]:
        """Each lane of this workspace: ``None`` when it can run, else why not (no query is run).

        A projection not built yet is not a reason: a refreshing query builds it.
        """
        return {lane: self.lane(lane).problem() for lane in self.lanes}

    def passages(self, ids: Sequence[str] | None = None) -> dict[str, StoredPassage]:
        """Stored passages by id (all when ``ids`` is None)."""
        return self.records.passages(ids)

    def passage_count(self) -> int:
        return self.records.passage_count()

    def note_count(self) -> int:
        return len(self.records.documents())

    def shadow(self) -> Workspace:
        """A second workspace on the same notes and store with refreshing off (the watcher's own)."""
        return Workspace(
            self.notes_dir,
            self.store_dir,
            self.max_passage_chars,
            self.lanes,
            self.embedder,
            self.dense_min_cosine,
            chroma=self.chroma,
            refresh="off",
            debounce=self.policy.debounce,
            refresh_timeout=self.policy.timeout,
            index_clock=self.index_clock,
            change_detection=self.change_detection,
            defer_writes=False,
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
        lanes: Sequence[str] | None = None,
        scopes: Sequence[str] | str | None = None,
        intent: str = DEFAULT_INTENT,
        audit: bool = False,
        live_checks: Sequence[LiveCheck] | None = None,
        only_paths: frozenset[str] | None = None,
    ) -> Packet:
        """Answer ``text`` with a cited evidence packet within the budget.

        ``scopes`` are the caller's (a note with a ``scope`` outside them is never
        seen; ``"*"`` sees all); ``intent`` is one of orient, verify, plan, audit;
        ``audit`` also shows excluded items, as history, never as current evidence.
        ``live_checks`` are the systems of record asked this time (default: the workspace's;
        ``()`` asks none); see :mod:`retrieval_kernel.pipeline.live_policy`.
        ``only_paths`` (applicability selection) keeps only the passages of those notes: a
        selector has already decided what applies, so the answerability judge reports its
        confidence but neither abstains nor drops passages as weak matches; no note at all
        abstains as ``below_threshold``.
        """
        query = checked_query(text)
        budget = budget_from(max_bytes, max_chars)
        top = checked_top(top)
        chosen = checked_lanes(lanes) if lanes is not None else self.lanes
        request = Request(parse_as_of(as_of), checked_scopes(scopes), checked_intent(intent), audit)
        stages = Stages()
        with stages("changes"):
            outcome = self.prepare(refresh)
            view = self._scope_view(request.scopes)
            eligibility = Eligibility() if request.shows_history else self._eligibility(view, request.as_of)
        runs = self.run_lanes(
            query,
            chosen,
            outcome.lanes_stale,
            eligibility.screen(view.hidden),
            outcome.pending,
            stages=stages,
            unseen=view.hidden,
        )
        outcome = _as_answered(outcome, runs, self._projected_lanes())
        stages.start("judge")
        runs, aside_runs = split_runs(runs, view.hidden, eligibility, self.dense_min_cosine)
        reports = tuple(run.report for run in runs.values())
        repairs = [run.repair_note for run in runs.values() if run.repair_note]
        scope_filtered = len(frozenset().union(*(run.hidden for run in runs.values())))
        abstention = abstention_reason(query, runs, view, scope_filtered, self.records, self.lexical)
        ranked = [] if abstention == ABSTAIN_UNDERSPECIFIED else self.rank(runs, query)
        if self.reranker is not None:
            from .rerank import rerank

            ranked = rerank(query, ranked, self.reranker)
        judgement = self._judge(query, ranked, runs, view, request.as_of) if ranked and self.judge_answers else None
        aside = [] if abstention == ABSTAIN_UNDERSPECIFIED else self._set_aside(aside_runs)
        if aside and abstention in (ABSTAIN_NO_MATCH, ABSTAIN_BELOW_THRESHOLD):
            abstention = None  # found, but never current: the policy says so (filtered_by_validity)
        if aside and judgement is not None:
            judgement = self._judge_set_aside(query, judgement, aside, aside_runs, view)
        if only_paths is not None:
            ranked, aside = _only(ranked, only_paths), _only(aside, only_paths)
            if not only_paths and abstention is None:
                abstention = ABSTAIN_BELOW_THRESHOLD
        elif abstention is None and judgement is not None and not judgement.answerable:
            abstention = ABSTAIN_FILTERED_BY_SCOPE if judgement.out_of_scope else ABSTAIN_BELOW_THRESHOLD
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
            exclusions={SCOPE: scope_filtered},
            warnings=(
                *repairs,
                *packet_warnings(outcome, view, standing_warnings(self.records), read),
                *_unstated_warning(judgement, abstention),
            ),
            trace_id=_trace_id(query, request, budget, top, reports),
            scopes=tuple(sorted(request.scopes)),
            intent=request.intent,
            source_root=os.path.abspath(self.notes_dir),  # as the user reached it: links survive symlinks
            confidence=judgement.confidence if judgement is not None else None,
        )
        stages.start("policy")
        decided = judgement if only_paths is None else None  # a selector has decided what applies
        selection = policy.select(
            [*ranked, *aside],
            request,
            view.links,
            view.facts,
            self._lead_passage(view),
            top,
            decided,
            query,
            view.observations,
            self._standing(view, request.as_of),
            self._stating_passage(view),
        )
        stages.start("live")
        live = apply_live(selection.admitted, self.live_checks if live_checks is None else tuple(live_checks))
        selection = with_live(selection, live)
        stages.start("assembly")
        packet = assemble(shell, selection, request.as_of, live)
        packet = replace(packet, trace_id=_outcome_id(packet))  # same length: budget.used is unchanged
        stages.start("trace")
        self._keep_trace(packet, request, runs, [*ranked, *aside], selection)
        self.last_timings = stages.stop()
        return packet

    def _eligibility(self, view: ScopeView, as_of: dt.date) -> Eligibility:
        """The passages never admissible as current for this view and clock: patched for the notes changed
        since the view it was last found for (built from every note the first time or after many changes)."""
        key = (view.scopes, as_of)
        last = self._eligibilities.pop(key, None)  # back once the eligibility below is whole
        if last is not None and last[0] is view:
            eligibility = last[1]
        elif (
            last is not None
            and last[0].high_water <= view.high_water
            and ((changed := self.records.changed_paths(last[0].high_water)) is not None)
        ):
            eligibility = last[1].patched(self.records, last[0], view, changed, as_of)
        else:
            eligibility = Eligibility.build(self.records, view, as_of)
        if len(self._eligibilities) > 16:
            self._eligibilities.clear()
        self._eligibilities[key] = (view, eligibility)
        return eligibility

    def _standing(self, view: ScopeView, as_of: dt.date) -> Standing:
        """Each note's standing at ``as_of`` in ``view``, kept while the view is the change log's (views never
        change once made), so a note's supersession and validity are decided once, not once a query."""
        key = (view.scopes, as_of)
        kept = self._standings.get(key)
        if kept is None or kept[0] is not view:
            if len(self._standings) > 16:
                self._standings.clear()
            kept = self._standings[key] = (view, Standing(as_of, view.links, view.facts, view.observations))
        return kept[1]

    def _set_aside(self, aside_runs: dict[str, LaneRun]) -> list[Candidate]:
        """The lanes' ineligible hits as candidates, fused like the pool and ranked after it."""
        found = self.rank(aside_runs)[: self.candidate_pool]
        return [replace(candidate, set_aside=True) for candidate in found]

    def _judge_set_aside(
        self,
        query: str,
        judgement: Judgement,
        aside: list[Candidate],
        aside_runs: dict[str, LaneRun],
        view: ScopeView,
    ) -> Judgement:
        """The judgement with how likely each set-aside candidate answers (so the policy can say that the
        answer exists but is not current); the question's confidence stays the pool's."""
        passages = [candidate.stored for candidate in aside[:POOL_JUDGED]]
        barred = self.judge.barred(query, passages, aside_runs, view.unseen)
        unstating = frozenset() if judgement.answerable else self.judge.unstating(query, passages, view.unseen)
        return replace(
            judgement,
            probabilities={**barred, **judgement.probabilities},
            unstating=judgement.unstating | unstating,
        )

    def run_lanes(
        self,
        query: str,
        lanes: Sequence[str],
        stale: bool = False,
        hidden: frozenset[str] = frozenset(),
        pending: int = 0,
        stages: Stages | None = None,
        unseen: frozenset[str] = frozenset(),
    ) -> dict[str, LaneRun]:
        """Run each chosen lane on ``query``; a lane that cannot run is reported, not raised.

        ``hidden`` passages (outside the caller's scopes, or ineligible) are dropped inside each
        lane, before counting, thresholds and ranks; ``unseen`` ones (the caller's scope part of
        them) are also left out of the lanes' corpus statistics. ``pending`` notes changed on disk
        count in every lane's lag. ``stages`` (when given) times each lane.
        """
        stages = stages or Stages()
        runs = {}
        for name in checked_lanes(lanes):
            with stages(name):
                runs[name] = self.lane(name).run(query, hidden, stale, pending, unseen)
        return runs

    def signals(
        self, query: str, scopes: Sequence[str] | str | None = None, lanes: Sequence[str] | None = None
    ) -> list[tuple[Candidate, Signals]]:
        """The leading candidates for ``query`` with their answerability signals (for calibration and studies)."""
        runs, view = self._caller_runs(query, lanes, scopes)
        ranked = self.rank(runs, query)[:POOL_JUDGED]
        found = self.judge.signals(query, ranked, runs, view.unseen)
        return [(candidate, found[candidate.id]) for candidate in ranked]

    def _outlines_of(self, paths: Sequence[str]) -> dict[str, tuple[tuple[str, ...], ...]]:
        """The heading paths of the notes at ``paths``, each in order (one read for those not yet cached,
        cached until the note changes)."""
        newest = self.records.high_water()
        if newest != self._outlines_at or len(self._outlines) > OUTLINE_CACHE_LIMIT:
            full = len(self._outlines) > OUTLINE_CACHE_LIMIT
            changed = None if full else self.records.changed_between(self._outlines_at, newest)
            kept = {} if changed is None else {p: outline for p, outline in self._outlines.items() if p not in changed}
            self._outlines, self._outlines_at = kept, newest
        missing = [path for path in dict.fromkeys(paths) if path not in self._outlines]
        if missing:
            self._outlines.update(self.records.outlines(missing))
        return {path: self._outlines[path] for path in paths}

    def _similarity(self, query: str, texts: Sequence[str]) -> list[float]:
        """The dense lane model's cosine of ``query`` to each of ``texts`` (its vectors are unit length).

        The same sentences come back question after question: their vectors are kept (up to
        ``SENTENCE_VECTORS``), so only new ones are embedded.
        """
        projection = self.dense_lane.projection
        kept = self._sentence_vectors
        vectors = {text: kept[text] for text in texts if text in kept}
        missing = [text for text in dict.fromkeys(texts) if text not in vectors]
        if missing:
            new = dict(zip(missing, projection.embedder.embed(missing), strict=True))
            if len(kept) + len(new) > SENTENCE_VECTORS:
                kept.clear()
            kept.update(new)
            vectors.update(new)
        question = projection.embed_query(query)
        return [float(vectors[text] @ question) for text in texts]

    def _judge(
        self, query: str, ranked: list[Candidate], runs: dict[str, LaneRun], view: ScopeView, as_of: dt.date
    ) -> Judgement:
        """How likely the candidates answer, from what the caller may see; passages outside the caller's
        scopes are judged too (only to say that the answer is out of scope), never shown."""
        unseen = view.unseen
        judgement = self.judge.judge(query, ranked, runs, unseen, as_of)
        hidden = sorted(frozenset().union(*(run.hidden for run in runs.values())))
        if not hidden:
            return judgement
        shadowed = list(self.records.passages(hidden[:POOL_JUDGED]).values())
        stating = not judgement.answerable  # out of reach, a passage must state the value a typed question asks
        return replace(judgement, hidden_best=self.judge.hidden_best(query, shadowed, runs, unseen, stating))

    def retrieve(
        self, query: str, lanes: Sequence[str] | None = None, scopes: Sequence[str] | str | None = None
    ) -> list[Candidate]:
        """Candidates for ``query`` from the chosen lanes, fused (no policy, no packet): for selectors and studies."""
        return self.rank(self._caller_runs(query, lanes, scopes)[0], query)

    def _caller_runs(
        self, query: str, lanes: Sequence[str] | None, scopes: Sequence[str] | str | None
    ) -> tuple[dict[str, LaneRun], ScopeView]:
        """The chosen lanes (those this workspace has) run for a caller with ``scopes``, and its view."""
        view = self._scope_view(checked_scopes(scopes))
        chosen = [lane for lane in (checked_lanes(lanes) if lanes is not None else self.lanes) if lane in self.lanes]
        return self.run_lanes(checked_query(query), chosen, hidden=view.hidden, unseen=view.hidden), view

    def _scope_view(self, scopes: frozenset[str]) -> ScopeView:
        """The notes a caller with ``scopes`` may see, and their links (patched as the change log moves)."""
        if scopes not in self._views:
            if len(self._views) > 16:
                self._views.clear()
            self._views[scopes] = ScopeViews(scopes)
        return self._views[scopes].view(self.records)

    def _lead_passage(self, view: ScopeView) -> Callable[[str], StoredPassage | None]:
        def lead(path: str) -> StoredPassage | None:
            if path not in view.facts:
                return None
            passages = self.records.passages_of(path)
            # The first passage with substance (an ADR's first section is often only its title and date).
            chosen = next((p for p in passages if len(p.text.split()) >= LEAD_PASSAGE_MIN_WORDS), None)
            chosen = chosen or (passages[0] if passages else None)
            return self.records.passages([chosen.id]).get(chosen.id) if chosen else None

        return lead

    def _stating_passage(self, view: ScopeView) -> Callable[[str, Any], StoredPassage | None]:
        """A visible note's first passage stating a value (else its lead passage): a conflict's side."""
        lead = self._lead_passage(view)

        def stating(path: str, value: Any) -> StoredPassage | None:
            if path not in view.facts:
                return None
            chosen = next((p for p in self.records.passages_of(path) if mentions(p.text, value)), None)
            return self.records.passages([chosen.id]).get(chosen.id) if chosen else lead(path)

        return stating

    def _keep_trace(
        self,
        packet: Packet,
        request: Request,
        runs: dict[str, LaneRun],
        ranked: list[Candidate],
        selection: Selection,
    ) -> None:
        body = build_trace(packet, request, runs, ranked, selection, self.candidate_pool, self.dense_min_cosine)
        body["versions"] = component_versions(self.embedder)
        self.records.save_trace(packet.trace_id, body, utc_now())

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """How the packet with ``trace_id`` was built, if this store kept it."""
        return self.records.trace(trace_id)

    def rank(self, runs: dict[str, LaneRun], query: str = "") -> list[Candidate]:
        """Identity hits first, then the rest, each by reciprocal rank fusion; a passage named by its own id
        comes before the passages of a note named by its id, alias or path ("Palm House" names the whole
        climate standard: its misting section, which the question is about, leads it)."""
        fused = reciprocal_rank_fusion({name: run.ranking for name, run in runs.items()})
        named = {pid for pid, _ in runs["identity"].ranking} if "identity" in runs else set()
        said = query.casefold() if query else ""

        def tier(pid: str) -> int:
            return (0 if pid.casefold() in said else 1) if pid in named else 2

        fused.sort(key=lambda item: tier(item.passage_id))  # stable: RRF order kept within each tier
        matched = {pid: words for run in runs.values() for pid, words in run.matched.items()}
        stored = self.records.passages(item.passage_id for item in fused)
        return [
            Candidate(stored[item.passage_id], item.score, item.hits, matched.get(item.passage_id, ()))
            for item in fused
            if item.passage_id in stored
        ]


def _as_answered(outcome: RefreshOutcome, runs: dict[str, LaneRun], kept: Sequence[str]) -> RefreshOutcome:
    """The outcome, stale after all when a lane this workspace keeps up (``kept``) says it answered behind
    the notes (the packet never claims more than its lanes)."""
    behind = tuple(name for name, run in runs.items() if name in kept and run.report.status == "stale")
    if outcome.state != CONSISTENT or not behind:
        return outcome
    why = f"the {', '.join(behind)} lane(s) answered behind the notes (their reports say why)"
    return replace(outcome, state=STALE, error=why, lanes_behind=behind)


def _outcome_id(packet: Packet) -> str:
    """The trace id, extended with what was decided (so a changed live verdict gets its own trace)."""
    decided = [[item.id, item.role, item.live_status, item.line_end] for item in packet.evidence]
    material = [packet.trace_id, decided, packet.abstention_reason, [c.resolution for c in packet.conflicts]]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]


def _unstated_warning(judgement: Judgement | None, abstention: str | None) -> tuple[str, ...]:
    """Why a confident judgement still abstained: the value (or the week) asked about is nowhere near, or
    the best passage says it is not decided yet."""
    if judgement is None or abstention != ABSTAIN_BELOW_THRESHOLD or not judgement.overruled:
        return ()
    return (judgement.why_not(),)


def _trace_id(query: str, request: Request, budget: Budget, top: int, lanes: tuple[LaneReport, ...]) -> str:
    """A deterministic id for this query, caller and clock against this exact projection state."""
    states = [[lane.name, lane.status, lane.index_version, lane.high_water] for lane in lanes]
    caller = [request.as_of.isoformat(), sorted(request.scopes), request.intent, request.audit]
    material = [query, caller, budget.unit, budget.limit, top, states]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]


def rebuild(notes_dir: str | Path, store_dir: str | Path | None = None, **options: Any) -> SyncReport:
    """Set the record store aside (kept as ``records.sqlite3.damaged-<time>``), drop every projection,
    and build everything again from the notes. The recovery for a damaged store."""
    from ..store.refresh import set_aside

    notes = Path(notes_dir)
    if not notes.is_dir():
        raise NotesDirError(f"notes directory {notes} does not exist or is not a directory")
    store = Path(store_dir) if store_dir is not None else default_store_dir(notes)
    store.mkdir(parents=True, exist_ok=True)
    with refresh_lock(store, wait=True):
        set_aside(store, utc_now().replace(":", ""))
    with Workspace(notes, store, **options) as workspace:
        return workspace.index()


def _only(candidates: list[Candidate], paths: frozenset[str]) -> list[Candidate]:
    """The candidates whose note is one of ``paths``, in order."""
    return [candidate for candidate in candidates if candidate.stored.passage.path in paths]
