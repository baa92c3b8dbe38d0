"""Keeping a workspace's projections caught up with its notes: index, refresh, watch, and report state.

:class:`Upkeep` is the refreshing half of :class:`~retrieval_kernel.pipeline.workspace.Workspace`;
the refresh modes, debounce and states themselves live in :mod:`retrieval_kernel.store.refresh`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import RefreshBusyError, RefreshTimeoutError, StoreError
from ..store.changefeed import ChangeFeed
from ..store.indexing import LOCK_NAME, SyncReport, pending_stats, pending_stats_of, refresh_lock, sync_notes
from ..store.progress import Progress
from ..store.records import RecordStore
from ..store.refresh import (
    CONSISTENT,
    DEFER_IDLE,
    FAILED_WITH_LAST_GOOD,
    LAST_REFRESH_KEY,
    REFRESHING,
    STALE,
    Debounce,
    IdleRunner,
    RefreshOutcome,
    RefreshPolicy,
    RefreshRecord,
    Watcher,
)
from .lanes import DenseLane, LexicalLane

PROJECTED_LANES = ("lexical", "dense")  # the lanes with a projection to keep caught up
# A refresh a query starts stops here unless the policy sets its own limit: what it finished is kept
# (notes, cached vectors) and the next query carries on, so a first question on a big folder is never
# stuck behind an unbounded job. An explicit index() has no limit unless one is given.
QUERY_REFRESH_TIMEOUT = 600.0
# A query defers the projection writes of at most this many changed notes (counting those still unwritten):
# more (a checkout, a bulk edit) are written before it answers, as before, so the writer's runs stay short.
DEFER_NOTES = 16


class Upkeep:
    """Index, refresh (never lying about the result), watch, and report each projection's state."""

    notes_dir: Path
    store_dir: Path
    records: RecordStore
    lanes: tuple[str, ...]
    policy: RefreshPolicy
    max_passage_chars: int
    index_clock: Callable[[], str]
    lane_errors: dict[str, str]
    last_refresh: RefreshRecord | None
    watched_pending: int
    lexical_lane: LexicalLane
    dense_lane: DenseLane
    _debounce: Debounce
    _watcher: Watcher | None
    progress: Progress
    change_detection: str  # "notify" (OS change notifications, walk only after one) or "walk" (stat every note)
    _feed: ChangeFeed | None = None
    _feed_opened = False
    # The notes that may differ from the store: none after a walk found none, then whatever the change
    # feed names; None (walk) until the first walk and whenever the feed cannot name every change.
    _suspects: frozenset[str] | None = None
    _named = False  # the last check read the suspects' stats only (no walk), so a refresh may sync only them
    defer_writes = False  # a refreshing query answers first and writes the projections when idle (on-query mode)
    _writer: IdleRunner | None = None  # the deferred projection writes, on a thread of their own
    _stop_writes: threading.Event  # set while a query waits for the writer: it stops at its next step

    def deadline(self) -> float | None:
        return self.policy.deadline()

    def index(
        self,
        wait: bool = True,
        timeout: float | None = None,
        only: frozenset[str] | None = None,
        defer: bool = False,
    ) -> SyncReport:
        """Bring the record store and every projection up to date (incrementally).

        Holds the store's refresh lock; with ``wait=False`` a lock held elsewhere raises
        ``RefreshBusyError``. Past ``timeout`` (default: the policy's; none unless set) it raises
        ``RefreshTimeoutError`` (every note finished so far is kept; projections keep their last good version).
        A dense-lane failure does not stop indexing: it is kept in ``lane_errors`` and
        the packet reports the lane ``unavailable``. ``only`` syncs those notes (paths relative to
        the folder) instead of walking it: what the change feed named. ``defer`` (a refreshing
        query) brings the in-memory search forms up to the record store and leaves the durable
        projection writes to :meth:`write_projections` once the workspace is idle; without it
        everything is durable on return.
        """
        limit = timeout if timeout is not None else self.policy.timeout
        deadline = None if limit is None else time.monotonic() + limit
        lexical = self.lexical_lane.projection
        if not defer:
            self._cancel_writes()  # written below, under the lock
        with refresh_lock(self.store_dir, wait=wait):
            try:
                report = sync_notes(
                    self.notes_dir,
                    self.records,
                    self.max_passage_chars,
                    deadline,
                    self.index_clock,
                    self.progress,
                    only,
                )
                deferred = defer and self._advance_in_memory()
                if not deferred:
                    self._write_projections(deadline)
            except BaseException as exc:
                self._remember(RefreshRecord(self.index_clock(), _result_of(exc), f"{exc}"))
                raise
        if deferred:
            self._schedule_writes()
        rebuilt = [f"lexical: {lexical.rebuilt_because}"] if lexical.rebuilt_because and not deferred else []
        if self.dense_lane.built and self.dense_lane.projection.rebuilt_because and not deferred:
            rebuilt.append(f"dense: {self.dense_lane.projection.rebuilt_because}")
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

    def refresh(self, wait: bool = False, only: frozenset[str] | None = None, defer: bool = False) -> RefreshOutcome:
        """Like :meth:`index`, but never raises: a failure keeps the last good projections and says so.

        ``wait=False`` (what queries use) answers ``refreshing`` at once when another
        process or thread is publishing a refresh. ``defer``: see :meth:`index`; a lane whose
        in-memory form still lacks some changes (passages not embedded yet) makes it ``stale``.
        """
        try:
            timeout = self.policy.timeout or QUERY_REFRESH_TIMEOUT
            report = self.index(wait=wait, timeout=timeout, only=only, defer=defer)
        except RefreshBusyError as exc:
            return RefreshOutcome(REFRESHING, None, f"{exc}; answering from the last good index", self._pending())
        except (StoreError, OSError) as exc:
            message = f"refresh failed, serving the last good index: {exc}"
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, message, self._pending())
        self._debounce.reset()
        return self._current(report)

    def _current(self, report: SyncReport | None) -> RefreshOutcome:
        """The outcome once the record store holds every change: consistent, unless a lane's in-memory
        form still lacks some (stale, saying which); either way, how much is not yet written durably."""
        behind = tuple(name for name in self._projected_lanes() if self._answers_behind(name))
        deferred = self._deferred_writes()
        if not behind:
            return RefreshOutcome(CONSISTENT, report, deferred=deferred)
        why = f"the {', '.join(behind)} lane(s) answer behind the notes (their reports say why)"
        return RefreshOutcome(STALE, report, f"{why}; the others answer from the current notes", 0, deferred, behind)

    def _remember(self, record: RefreshRecord) -> None:
        """Keep the refresh's result for ``status`` (in the store when it can be written)."""
        self.last_refresh = record
        with contextlib.suppress(StoreError):  # a read-only store: the result stays in this process
            self.records.set_meta(LAST_REFRESH_KEY, record.to_json())

    def prepare(self, refresh: bool = True) -> RefreshOutcome:
        """Apply the refresh policy before a query; the outcome is what the packet reports."""
        if self._writer is not None:
            self._writer.postpone()  # deferred writes wait for a quiet moment
        if not refresh or self.policy.mode == "off":
            return self.observe()
        if self.policy.mode == "watch":  # the watcher's last check (at most one interval old): no stat walk here
            self.watch()
            return self.observe(pending=self.watched_pending)
        return self.refresh_when_due(retry_failed_lanes=True, defer=self.defer_writes)

    def refresh_when_due(self, retry_failed_lanes: bool = False, defer: bool = False) -> RefreshOutcome:
        """Look for changed notes (a stat walk) and refresh once they have been quiet for the debounce
        window, or when a lane answers behind the change log (or, if asked, a lane failed last time).
        ``defer``: see :meth:`index`."""
        changes = self._pending_stats()
        pending = len(changes)
        if self._debounce.waiting(tuple(changes)):
            return self._stale(pending)
        if pending or self._behind() or (retry_failed_lanes and "dense" in self.lane_errors):
            if pending and self._writer is not None and self._writer.busy:
                self._cancel_writes()  # our own deferred writes hold the lock: the edit waits for one step
            return self.refresh(only=self._suspects if self._named else None, defer=defer)
        return self.observe(pending=0)

    def observe(self, pending: int | None = None) -> RefreshOutcome:
        """The projections' state without refreshing: refreshing, stale (with lag) or consistent."""
        pending = self._pending() if pending is None else pending
        writing = self._writer is not None and self._writer.busy  # our own deferred writes hold the lock
        if _lock_is_held(self.store_dir) and not (writing and not pending and not self._behind()):
            return RefreshOutcome(
                REFRESHING, None, "a refresh is being published; answering from the last good index", pending
            )
        behind = pending or self._behind()
        last = self.last_refresh_record()
        if behind and last is not None and last.result != "ok":  # also a failure another process recorded
            error = f"the last refresh failed ({last.error}); answering from the last good index"
            return RefreshOutcome(FAILED_WITH_LAST_GOOD, None, error, pending)
        return self._stale(pending) if behind else self._current(None)

    def last_refresh_record(self) -> RefreshRecord | None:
        """The last refresh this process ran, else the last one any process recorded in the store."""
        return self.last_refresh or RefreshRecord.from_json(self.records.meta(LAST_REFRESH_KEY))

    def _stale(self, pending: int) -> RefreshOutcome:
        why = (
            f"{pending} note(s) changed on disk are not indexed yet"
            if pending
            else "a projection is behind the record store"
        )
        return RefreshOutcome(
            STALE, None, f"{why}; answering from the last good index", pending, self._deferred_writes()
        )

    def _pending(self) -> int:
        """How many notes changed on disk since the change log last heard of them."""
        return len(self._pending_stats())

    def _pending_stats(self) -> list[tuple[str, int, int]]:
        """The notes changed on disk: a stat of the files the change feed named since the last look
        (none: nothing to do), or a stat walk when there is no feed or it cannot name them."""
        feed = self._change_feed()
        if feed is not None:
            named = feed.changes()  # drained before the stats: they see everything these events were about
            self._suspects = None if named is None or self._suspects is None else self._suspects | named
        self._named = self._suspects is not None
        try:
            if self._suspects is None:
                changes = pending_stats(self.notes_dir, self.records)
            else:
                changes = pending_stats_of(self.notes_dir, self.records, self._suspects) if self._suspects else []
        except OSError:
            return []
        self._suspects = frozenset(path for path, _, _ in changes) if feed is not None else None
        return changes

    def _change_feed(self) -> ChangeFeed | None:
        """The notes folder's change feed, opened on first use (``None``: walk every time)."""
        if not self._feed_opened and self.change_detection == "notify":
            self._feed_opened = True
            self._feed = ChangeFeed.open(self.notes_dir)
        return self._feed

    @property
    def detecting_changes_by(self) -> str:
        """How changed notes are found: ``notify`` (OS notifications) or ``walk`` (a stat of every note)."""
        return "notify" if self._change_feed() is not None else "walk"

    def close_change_feed(self) -> None:
        if self._feed is not None:
            self._feed.close()
        self._feed, self._feed_opened, self._suspects = None, False, None

    def _projected_lanes(self) -> list[str]:
        return [lane for lane in PROJECTED_LANES if lane in self.lanes]

    def _behind(self) -> bool:
        """Whether a lane of this workspace answers behind the change log (from its projection, or from
        its in-memory form when that was brought forward and the projection's write deferred)."""
        return any(self._answers_behind(name) for name in self._projected_lanes())

    def _answers_behind(self, name: str) -> bool:
        state = self.records.projection(name)
        if state is None:
            return True
        if name == "lexical":
            answered = self.lexical_lane.projection.answering_high_water()
        else:  # its in-memory vectors may lack notes even once the projection is written
            answered = self.dense_lane.projection.answering_high_water(state) if self.dense_lane.built else None
        return (state.high_water if answered is None else answered) < self.records.high_water()

    def _deferred_writes(self) -> int:
        """Change-log entries this workspace answered from memory and has yet to write (its writer's work)."""
        return self._durable_lag() if self._writer is not None else 0

    def _durable_lag(self) -> int:
        """Change-log entries the durable projections of this workspace's lanes have yet to write."""
        newest = self.records.high_water()
        states = [self.records.projection(name) for name in self._projected_lanes()]
        return max([newest - state.high_water for state in states if state is not None], default=0)

    # ------------------------------------------------------------ deferred projection writes

    def _advance_in_memory(self) -> bool:
        """Bring the lanes' in-memory search forms up to the record store (the projections' writes wait);
        ``False`` when they cannot answer for it (a projection not built or unreadable, vectors past the
        exact-search limit) or too many notes wait: then the projections are written at once, which
        repairs and reports."""
        states = [self.records.projection(name) for name in {"lexical", *self._projected_lanes()}]
        if any(state is None for state in states):
            return False
        oldest = min(state.high_water for state in states if state is not None)
        if self.records.changed_paths(oldest, DEFER_NOTES) is None:
            return False
        try:
            self.lexical_lane.projection.advance()
            return "dense" not in self.lanes or self.dense_lane.advance()
        except Exception:  # written synchronously instead, where a failure is handled and reported
            return False

    def _write_projections(self, deadline: float | None) -> None:
        """Bring Whoosh and Chroma up to the change log (the caller holds the refresh lock)."""
        if "dense" in self.lanes:
            self.dense_lane.embed_early()  # a one-note edit's passages embed while Whoosh commits
        self.lexical_lane.projection.sync(self.records, deadline)
        if "dense" in self.lanes:
            self.dense_lane.sync()

    def write_projections(self, wait: bool = True, stop: Callable[[], bool] | None = None) -> None:
        """Write what a deferring refresh left to write (the deferred writer's work; safe to call anytime).

        With ``stop`` (the writer's), the lock is held for one projection at a time and the new
        passages are embedded outside it; ``stop()`` is asked between the steps, so a query with an
        edit of its own waits for one step at most (it schedules the rest again).
        """
        if stop is None:
            with refresh_lock(self.store_dir, wait=wait):
                if self._durable_lag():
                    self._write_projections(self.deadline())
            return
        if stop():
            return
        with refresh_lock(self.store_dir, wait=wait):
            self.lexical_lane.projection.sync(self.records, self.deadline())
        if "dense" not in self.lanes or stop():
            return
        self.dense_lane.embed_changes()  # into the embedding cache: no lock needed
        if stop():
            return
        with refresh_lock(self.store_dir, wait=wait):
            self.dense_lane.sync()

    def _schedule_writes(self) -> None:
        if self._writer is None:
            writes = _DeferredWrites(self)
            self._writer = IdleRunner(writes.run, DEFER_IDLE, finish=writes.close)
        self._writer.schedule()

    def _cancel_writes(self) -> None:
        """Drop scheduled deferred writes; a running one stops at its next step (this thread waits for that)."""
        if self._writer is not None:
            self._stop_writes.set()
            try:
                self._writer.cancel(wait=True)
            finally:
                self._stop_writes.clear()

    @property
    def writes_pending(self) -> bool:
        """Whether deferred projection writes are scheduled or running."""
        return self._writer is not None and (self._writer.scheduled or self._writer.busy)

    def flush_writes(self) -> None:
        """Write the deferred projection writes now, in this thread, and wait for it (tests, benchmarks, close)."""
        self._cancel_writes()
        if self._durable_lag():
            self.write_projections(wait=True)

    def finish_writes(self) -> None:
        """Stop the deferred writer; what it had left is written here unless another publisher holds the
        lock (then that publisher, or the next refresh of any process, writes it: nothing is lost)."""
        if self._writer is None:
            return
        self._writer.stop()
        self._writer = None
        if not self.records.read_only and self._durable_lag():
            with contextlib.suppress(RefreshBusyError, StoreError, OSError):
                self.write_projections(wait=False)

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

    def pending_changes(self) -> bool:
        """Whether the notes differ from the store by path, size or mtime (no hashing)."""
        return bool(self._pending())

    def status(self) -> dict[str, Any]:
        """Each projection's version, high-water mark and lag; the last refresh; the current state."""
        outcome = self.observe()
        newest = self.records.high_water()
        last = self.last_refresh_record()
        return {
            "notes_dir": str(self.notes_dir),
            "store_dir": str(self.store_dir),
            "state": outcome.state,
            "refresh": {
                "mode": self.policy.mode,
                "debounce": self.policy.debounce,
                "timeout": self.policy.timeout,
                "change_detection": self.detecting_changes_by,
            },
            "watching": self.watching,
            "record_store": {
                "path": str(self.records.path),
                "documents": len(self.records.documents()),
                "passages": self.records.passage_count(),
                "high_water": newest,
                "read_only": self.records.read_only,
            },
            "pending_notes": outcome.pending,
            "deferred_writes": outcome.deferred,  # changes in memory, not yet written to Whoosh and Chroma
            "projections": [self._projection_status(name, newest, outcome.pending) for name in self._projected_lanes()],
            "last_refresh": None if last is None else json.loads(last.to_json()),
            "last_error": (last.error if last is not None and last.result != "ok" else None)
            or self._background_error(),
        }

    def _background_error(self) -> str | None:
        """What the watcher's or the deferred writer's last run failed with (``None``: nothing)."""
        if self._watcher is not None and self._watcher.last_error:
            return self._watcher.last_error
        if self._writer is not None and self._writer.last_error:
            return f"deferred projection writes: {self._writer.last_error}"
        return None

    def _projection_status(self, name: str, newest: int, pending: int) -> dict[str, Any]:
        state = self.records.projection(name)
        problem = self.lane_errors.get(name)
        if name == "lexical" and state is not None:
            problem = problem or self.lexical_lane.projection.problem()
        return {
            "name": name,
            "version": state.version if state else None,
            "high_water": state.high_water if state else None,
            "lag": (newest - state.high_water if state else newest) + pending,
            "built_at": state.built_at if state else None,
            "problem": problem if state else problem or "not built yet: index the notes",
        }


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


class _DeferredWrites:
    """The deferred writer's work: its own workspace on the same notes and store (its own connections,
    in its thread) writes the projections up to the change log."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner
        self._workspace: Any = None

    def run(self) -> None:
        if self._workspace is None:
            self._workspace = self._owner.shadow()
        self._workspace.write_projections(wait=True, stop=self._owner._stop_writes.is_set)

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None


class _Shadow:
    """The watcher's own workspace on the same notes and store (its own connections, in its thread)."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner
        self._workspace: Any = None

    def poll(self) -> None:
        owner = self._owner
        if self._workspace is None:
            self._workspace = owner.shadow()
        workspace = self._workspace
        outcome = workspace.refresh_when_due()
        if outcome.report is not None:  # it refreshed: look again for notes saved meanwhile
            owner.last_refresh = workspace.last_refresh
            owner.watched_pending = workspace._pending()
        else:
            owner.last_refresh = workspace.last_refresh or owner.last_refresh
            owner.watched_pending = outcome.pending
