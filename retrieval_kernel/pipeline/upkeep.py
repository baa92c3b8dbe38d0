"""Keeping a workspace's projections caught up with its notes: index, refresh, watch, and report state.

:class:`Upkeep` is the refreshing half of :class:`~retrieval_kernel.pipeline.workspace.Workspace`;
the refresh modes, debounce and states themselves live in :mod:`retrieval_kernel.store.refresh`.
"""

from __future__ import annotations

import contextlib
import json
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
from .lanes import DenseLane, LexicalLane

PROJECTED_LANES = ("lexical", "dense")  # the lanes with a projection to keep caught up
# A refresh a query starts stops here unless the policy sets its own limit: what it finished is kept
# (notes, cached vectors) and the next query carries on, so a first question on a big folder is never
# stuck behind an unbounded job. An explicit index() has no limit unless one is given.
QUERY_REFRESH_TIMEOUT = 600.0


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

    def deadline(self) -> float | None:
        return self.policy.deadline()

    def index(self, wait: bool = True, timeout: float | None = None, only: frozenset[str] | None = None) -> SyncReport:
        """Bring the record store and every projection up to date (incrementally).

        Holds the store's refresh lock; with ``wait=False`` a lock held elsewhere raises
        ``RefreshBusyError``. Past ``timeout`` (default: the policy's; none unless set) it raises
        ``RefreshTimeoutError`` (every note finished so far is kept; projections keep their last good version).
        A dense-lane failure does not stop indexing: it is kept in ``lane_errors`` and
        the packet reports the lane ``unavailable``. ``only`` syncs those notes (paths relative to
        the folder) instead of walking it: what the change feed named.
        """
        limit = timeout if timeout is not None else self.policy.timeout
        deadline = None if limit is None else time.monotonic() + limit
        lexical = self.lexical_lane.projection
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
                if "dense" in self.lanes:
                    self.dense_lane.embed_early()  # a one-note edit's passages embed while Whoosh commits
                lexical.sync(self.records, deadline)
                if "dense" in self.lanes:
                    self.dense_lane.sync()
            except BaseException as exc:
                self._remember(RefreshRecord(self.index_clock(), _result_of(exc), f"{exc}"))
                raise
        rebuilt = [f"lexical: {lexical.rebuilt_because}"] if lexical.rebuilt_because else []
        if self.dense_lane.built and self.dense_lane.projection.rebuilt_because:
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

    def refresh(self, wait: bool = False, only: frozenset[str] | None = None) -> RefreshOutcome:
        """Like :meth:`index`, but never raises: a failure keeps the last good projections and says so.

        ``wait=False`` (what queries use) answers ``refreshing`` at once when another
        process or thread is publishing a refresh.
        """
        try:
            report = self.index(wait=wait, timeout=self.policy.timeout or QUERY_REFRESH_TIMEOUT, only=only)
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
            return self.refresh(only=self._suspects if self._named else None)
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
        """Whether a built projection of this workspace's lanes lags the change log."""
        newest = self.records.high_water()
        states = [self.records.projection(name) for name in self._projected_lanes()]
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
            "projections": [self._projection_status(name, newest, outcome.pending) for name in self._projected_lanes()],
            "last_refresh": None if last is None else json.loads(last.to_json()),
            "last_error": (last.error if last is not None and last.result != "ok" else None)
            or (self._watcher.last_error if self._watcher else None),
        }

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
