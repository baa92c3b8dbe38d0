"""Refresh policy: when the projections catch up with the notes, and what a packet says meanwhile.

Modes
-----
``off``       never refresh on a query; the packet says ``stale`` (with each lane's lag)
              when the notes changed.
``on-query``  before answering, look for changed notes (a stat of every file, no reading,
              and only after the OS reported a change: see :mod:`.changefeed`);
              refresh when there are some, once no note has been saved for ``debounce``
              seconds (each new save restarts the window). Inside that window the packet
              is ``stale`` and answers from the last good projections.
``watch``     a background thread does the looking (every ``interval`` seconds, sleeping
              on an event, never spinning) and the refreshing; queries never wait.

Answer first, persist after: an ``on-query`` refresh writes the changed notes into the record
store (durable, with their change-log entries), brings the in-memory search forms up to it (the
compiled lexical form; the exact-search vectors, each changed passage's new vector taken from the
embedding cache when it is there) and answers. The durable projection writes (the Whoosh commit,
embedding, Chroma's delete and add) wait for the first ``DEFER_IDLE`` seconds without a query
(at most ``DEFER_AT_MOST`` seconds: :class:`IdleRunner`), then run on a thread of their own. Until
they are done the packet says so; a process killed before them loses nothing: the projections'
high-water marks stay behind the change log, and the next refresh (any process's) catches them up.

Whatever the mode, only one process or thread publishes at a time (the store's lock);
a query that finds the lock taken answers from the last good projections as
``refreshing``. A refresh that fails or times out keeps them too, as
``failed-with-last-good``, and says why.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .indexing import SyncReport

MODES = ("off", "on-query", "watch")
DEFAULT_MODE = "on-query"
DEFAULT_DEBOUNCE = 0.0
DEFAULT_INTERVAL = 1.0
DEFER_IDLE = 0.5  # seconds without a query before a refresh's deferred projection writes start
DEFER_AT_MOST = 3.0  # ... or this long after they were first deferred, however busy the queries keep it
LAST_REFRESH_KEY = "last_refresh"
CHANGE_DETECTION = ("notify", "walk")  # how a refreshing query learns that notes changed (store/changefeed.py)

# Projection states, as the packet reports them.
CONSISTENT = "consistent"
STALE = "stale"
REFRESHING = "refreshing"
FAILED_WITH_LAST_GOOD = "failed-with-last-good"


@dataclass(frozen=True)
class RefreshPolicy:
    """How and when a workspace refreshes; ``timeout`` (seconds) bounds one refresh."""

    mode: str = DEFAULT_MODE
    debounce: float = DEFAULT_DEBOUNCE
    timeout: float | None = None
    interval: float = DEFAULT_INTERVAL

    @classmethod
    def checked(
        cls,
        mode: str = DEFAULT_MODE,
        debounce: float = DEFAULT_DEBOUNCE,
        timeout: float | None = None,
        interval: float = DEFAULT_INTERVAL,
    ) -> RefreshPolicy:
        if mode not in MODES:
            raise InputError(f"refresh mode must be one of {', '.join(MODES)}, not {mode!r}")
        if not 0 <= debounce <= 3600:
            raise InputError(f"debounce must be between 0 and 3600 seconds, not {debounce}")
        if timeout is not None and not 0 < timeout <= 86_400:
            raise InputError(f"refresh timeout must be between 0 and 86400 seconds, not {timeout}")
        if not 0.05 <= interval <= 3600:
            raise InputError(f"watch interval must be between 0.05 and 3600 seconds, not {interval}")
        return cls(mode, float(debounce), None if timeout is None else float(timeout), float(interval))

    def deadline(self) -> float | None:
        return None if self.timeout is None else time.monotonic() + self.timeout


def checked_change_detection(value: str) -> str:
    if value not in CHANGE_DETECTION:
        raise InputError(f"change detection must be one of {', '.join(CHANGE_DETECTION)}, not {value!r}")
    return value


@dataclass(frozen=True)
class RefreshOutcome:
    """The projection state after trying to bring it up to date (or deciding not to)."""

    state: str
    report: SyncReport | None
    error: str | None = None
    pending: int = 0  # notes changed on disk that the change log does not hold yet
    deferred: int = 0  # change-log entries the durable projections have yet to write (in memory already)
    lanes_behind: tuple[str, ...] = ()  # lanes still answering behind the change log after this refresh

    @property
    def lanes_stale(self) -> bool:
        """Whether every lane should report stale (else each says its own lag: a refresh that deferred)."""
        return self.state != CONSISTENT and not self.lanes_behind


@dataclass
class RefreshRecord:
    """The last refresh's result, as ``status`` shows it (kept in the store's meta table)."""

    at: str
    result: str  # ok | failed | busy | timeout
    error: str | None = None
    added: int = 0
    updated: int = 0
    deleted: int = 0
    problems: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)  # projections rebuilt, with why

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> RefreshRecord | None:
        if not text:
            return None
        try:
            return cls(**json.loads(text))
        except (TypeError, ValueError):
            return None


class Debounce:
    """A quiet-period timer: refresh once the unpublished changes stopped changing ``seconds`` ago.

    ``waiting(changes)`` takes what is pending (any comparable value, e.g. each changed
    note's path, size and mtime; empty when nothing is): a new save restarts the window.
    ``clock`` is injectable for tests.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._since: float | None = None
        self._seen: object = None

    def waiting(self, changes: object) -> bool:
        """Whether to hold off refreshing: the pending changes were last different less than ``seconds`` ago."""
        if not changes:
            self.reset()
            return False
        now = self.clock()
        if self._since is None or changes != self._seen:
            self._since, self._seen = now, changes
        return now - self._since < self.seconds

    def reset(self) -> None:
        self._since, self._seen = None, None


class Watcher:
    """A stoppable background thread that runs ``poll`` every ``interval`` seconds.

    ``poll`` runs in the thread (which should own its own store connections); its
    exceptions are kept in ``last_error``, never raised into the kernel.
    """

    def __init__(self, poll: Callable[[], Any], interval: float, name: str = "retrieval-kernel-watch") -> None:
        self._poll = poll
        self.interval = interval
        self._stop = threading.Event()
        self.last_error: str | None = None
        self.polls = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._poll()
                self.last_error = None
            except Exception as exc:  # reported by status; the thread keeps watching
                self.last_error = f"{type(exc).__name__}: {exc}"
            self.polls += 1
            self._stop.wait(self.interval)  # sleeps; wakes at once when stopped

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)


class IdleRunner:
    """Runs ``work`` on a thread of its own once ``idle`` seconds passed since the last :meth:`schedule`
    or :meth:`postpone` (a query), or ``at_most`` seconds after it was first scheduled: deferred writes
    do not compete with a burst of queries, nor wait for it forever.

    ``work`` runs in the thread (which should own its own store connections); its exceptions
    are kept in ``last_error``. The thread waits on a condition, never spinning.
    """

    def __init__(
        self,
        work: Callable[[], Any],
        idle: float,
        finish: Callable[[], Any] | None = None,
        at_most: float = DEFER_AT_MOST,
        name: str = "retrieval-kernel-deferred",
    ) -> None:
        self._work = work
        self.at_most = at_most
        self._latest: float | None = None  # when a scheduled run is due however busy it is kept
        self._finish = finish  # run in the thread as it ends (closes what the work opened there)
        self.idle = idle
        self._name = name
        self._due: float | None = None
        self._busy = False
        self._stopped = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.runs = 0

    def schedule(self) -> None:
        """Run the work once ``idle`` seconds pass without another call (starts the thread if needed)."""
        with self._cond:
            now = time.monotonic()
            if self._due is None or self._latest is None:
                self._latest = now + self.at_most
            self._due = min(now + self.idle, self._latest)
            if self._thread is None or not self._thread.is_alive():
                self._stopped = False
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def postpone(self) -> None:
        """Push a scheduled run ``idle`` seconds further (a query came)."""
        with self._cond:
            if self._due is not None and self._latest is not None:
                self._due = min(time.monotonic() + self.idle, self._latest)

    def cancel(self, wait: bool = True) -> None:
        """Drop a scheduled run; with ``wait``, let a running one finish first."""
        with self._cond:
            self._due = None
            while wait and self._busy:
                self._cond.wait()

    @property
    def scheduled(self) -> bool:
        return self._due is not None

    @property
    def busy(self) -> bool:
        return self._busy

    def stop(self, timeout: float = 60.0) -> None:
        """Cancel what is scheduled, let a running work finish, end the thread."""
        with self._cond:
            self._due, self._stopped = None, True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _next(self) -> bool:
        """Wait until the work is due (``True``) or the runner is stopped (``False``); holds the condition."""
        while not self._stopped:
            now = time.monotonic()
            if self._due is not None and now >= self._due:
                self._due, self._busy = None, True
                return True
            self._cond.wait(None if self._due is None else self._due - now)
        return False

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._next():
                    break
            try:
                self._work()
                self.last_error = None
            except Exception as exc:  # reported by status; the next schedule tries again
                self.last_error = f"{type(exc).__name__}: {exc}"
            finally:
                with self._cond:
                    self._busy = False
                    self.runs += 1
                    self._cond.notify_all()
        if self._finish is not None:
            with contextlib.suppress(Exception):  # closing only
                self._finish()


def set_aside(store_dir: Path, stamp: str) -> list[Path]:
    """Move the record store file (and its journal) aside and delete every derived projection.

    Returns the files kept aside (``records.sqlite3.damaged-<stamp>``): nothing is deleted
    that cannot be derived again from the notes.
    """
    from .records import DATABASE_NAME

    kept: list[Path] = []
    for suffix in ("", "-wal", "-shm"):
        source = store_dir / f"{DATABASE_NAME}{suffix}"
        if source.exists():
            target = store_dir / f"{DATABASE_NAME}{suffix}.damaged-{stamp}"
            source.rename(target)
            kept.append(target)
    for derived in ("lexical", "dense", "embeddings.sqlite3"):
        path = store_dir / derived
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return kept


def status_text(status: dict[str, Any]) -> str:
    """``Workspace.status()`` as a short plain-text report."""
    store = status["record_store"]
    refresh = status["refresh"]
    lines = [
        f"notes {status['notes_dir']}  ·  store {status['store_dir']}",
        f"state {status['state']}  ·  refresh {refresh['mode']} (debounce {refresh['debounce']:g} s"
        + (f", timeout {refresh['timeout']:g} s" if refresh["timeout"] else "")
        + (", watching" if status["watching"] else "")
        + (f", changes found by {refresh['change_detection']}" if refresh.get("change_detection") else "")
        + ")",
        f"record store: {store['documents']} notes, {store['passages']} passages, change log at {store['high_water']}"
        + (" (read-only)" if store["read_only"] else "")
        + (f"; {status['pending_notes']} note(s) changed on disk, not yet indexed" if status["pending_notes"] else ""),
    ]
    if status.get("deferred_writes"):
        lines.append(f"  {status['deferred_writes']} change(s) answered from memory, written to disk once idle")
    for projection in status["projections"]:
        version = "not built" if projection["version"] is None else f"v{projection['version']}"
        line = f"  {projection['name']:<8} {version}  high-water {projection['high_water']}  lag {projection['lag']}"
        if projection["problem"]:
            line += f"  ! {projection['problem']}"
        lines.append(line)
    last = status["last_refresh"]
    if last is None:
        lines.append("last refresh: none recorded")
    else:
        counts = f"+{last['added']} ~{last['updated']} -{last['deleted']}"
        lines.append(f"last refresh: {last['result']} at {last['at']} ({counts})")
        lines.extend(f"  rebuilt {why}" for why in last["rebuilt"])
        lines.extend(f"  problem: {problem}" for problem in last["problems"])
    if status["last_error"]:
        lines.append(f"last error: {status['last_error']}")
    return "\n".join(lines)


def outcome_text(outcome: RefreshOutcome) -> str:
    """One refresh's outcome in a sentence or two."""
    if outcome.report is None:
        return f"{outcome.state}: {outcome.error}"
    report = outcome.report
    text = (
        f"{outcome.state}: {len(report.added)} added, {len(report.updated)} updated, "
        f"{len(report.deleted)} deleted, {report.unchanged} unchanged"
    )
    problems = [f"\n  problem: {problem.message}" for problem in report.problems]
    return text + "".join(problems)
