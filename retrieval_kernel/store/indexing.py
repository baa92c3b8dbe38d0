"""Bring the record store in step with the notes on disk.

A file whose size and mtime match the stored row is taken as unchanged without
reading it; otherwise its bytes are hashed and only a changed hash makes a new
revision. A note that cannot be parsed is reported and its last good revision
stays in the store (nothing already indexed is lost). A note is parsed from the
very bytes that were hashed, and read once more afterwards: if it changed while
it was being read, it is read again (a revision is never a mix of two saves).
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from stat import S_ISREG

from ..corpus.notes import (
    DEFAULT_MAX_PASSAGE_CHARS,
    NOTE_SUFFIXES,
    Note,
    NoteScan,
    default_module,
    discover_notes,
    note_from_bytes,
    scan_notes,
)
from ..errors import NoteError, RefreshBusyError, StoreError
from .progress import SILENT, Progress
from .records import RecordStore, StoredDocument, check_deadline, utc_now

LOCK_NAME = "refresh.lock"
STANDING_KEY = "standing_warnings"  # meta key: what is still wrong, by note path ("" for the folder)
READ_ATTEMPTS = 3  # reads of a note that keeps changing while it is read, before it is reported
BATCH_NOTES = 200  # notes committed together: a commit per note cost as much as storing it


@dataclass(frozen=True)
class Problem:
    """A note that could not be (re)indexed, and why."""

    path: str
    message: str
    kept_last_good: bool

    @property
    def warning(self) -> str:
        return f"{self.message} ({'last good revision kept' if self.kept_last_good else 'not indexed'})"


@dataclass(frozen=True)
class SyncReport:
    """What one sync of the notes into the record store did."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged: int = 0
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted)


@contextmanager
def refresh_lock(store_dir: Path, wait: bool = True) -> Iterator[None]:
    """Hold the store's exclusive refresh lock (one publisher at a time, across processes and threads).

    With ``wait=False`` a lock held by someone else raises ``RefreshBusyError`` at once.
    The lock is the kernel's (``flock``): a killed holder releases it.
    """
    try:
        handle = open(store_dir / LOCK_NAME, "a+")  # noqa: SIM115 - closed by the `with` below
    except OSError as exc:
        raise StoreError(f"cannot take the refresh lock in {store_dir}: {exc}") from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RefreshBusyError(f"another refresh of {store_dir} is being published") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sync_notes(
    notes_root: Path,
    records: RecordStore,
    max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
    deadline: float | None = None,
    now: Callable[[], str] = utc_now,
    progress: Progress = SILENT,
    only: Collection[str] | None = None,
) -> SyncReport:
    """Add, update and tombstone documents so the store matches ``notes_root``.

    Each note is written whole (with its change-log entry) and committed with the rest of
    its batch of ``BATCH_NOTES``, so a refresh cut short by ``deadline`` keeps every note it
    finished, a kill every batch it finished, and the next one redoes the rest.
    ``now`` is the index clock (ISO 8601 UTC); a fixed one makes index times reproducible.
    ``progress`` shows a bar while many notes are read. ``only`` (paths relative to the
    root, e.g. the files a change feed named) checks those files instead of walking the
    folder: every other note is taken as unchanged, and ``unchanged`` counts only these.
    """
    stored = records.documents() if only is None else records.documents(only)
    added: list[str] = []
    updated: list[str] = []
    problems: list[Problem] = []
    standing = standing_warnings(records)
    before = standing.to_json()
    if only is None:
        scan = scan_notes(notes_root)
        standing.folder = list(scan.skipped)
        modules = {doc.module: doc.path for doc in stored.values()}
    else:
        scan = NoteScan(tuple(notes_root / rel for rel in sorted(only) if note_stat(notes_root, rel)), ())
        modules = records.modules()
    warnings: list[str] = list(scan.skipped)
    unchanged = 0
    seen: set[str] = set()
    to_read = []
    for path in scan.paths:
        rel = path.relative_to(notes_root).as_posix()
        seen.add(rel)
        previous = stored.get(rel)
        if previous and _same_stat(previous, path.stat()):
            unchanged += 1
        else:
            to_read.append((path, rel, previous))
    with progress.track("reading notes", len(to_read), "note") as step:
        for start in range(0, len(to_read), BATCH_NOTES):
            with records.batch():
                for path, rel, previous in to_read[start : start + BATCH_NOTES]:
                    step(1)
                    check_deadline(deadline, f"reading {rel}")
                    try:
                        note, stat = _read_settled(notes_root, path, modules, max_passage_chars)
                    except NoteError as exc:
                        problems.append(Problem(rel, str(exc), kept_last_good=previous is not None))
                        standing.problems[rel] = [problems[-1].warning]
                        continue
                    except OSError as exc:  # vanished or unreadable between listing and reading
                        message = f"{rel}: cannot be read: {exc}"
                        problems.append(Problem(rel, message, kept_last_good=previous is not None))
                        standing.problems[rel] = [problems[-1].warning]
                        continue
                    standing.problems.pop(rel, None)
                    standing.notes[rel] = list(note.warnings)
                    if previous and previous.sha256 == note.sha256:
                        records.touch(rel, stat.st_size, stat.st_mtime_ns)
                        unchanged += 1
                        continue
                    warnings.extend(note.warnings)
                    modules[note.module] = rel
                    records.upsert(note, stat.st_size, stat.st_mtime_ns, now())
                    (updated if previous else added).append(rel)
    deleted = sorted(set(stored) - seen)
    with records.batch():
        for rel in deleted:
            records.delete(rel, now())
    standing.keep_only(seen if only is None else standing.paths() - set(deleted))
    if standing.to_json() != before:
        records.set_meta(STANDING_KEY, standing.to_json())
    return SyncReport(tuple(added), tuple(updated), tuple(deleted), unchanged, tuple(problems), tuple(warnings))


@dataclass
class StandingWarnings:
    """What the last refreshes found still wrong, kept in the store so every later packet can say it.

    ``folder``: entries discovery did not follow (links out of the folder, loops);
    ``problems``: notes that cannot be read (their last good revision serves), by path;
    ``notes``: warnings about notes that were read (an id already taken, an unknown status), by path.
    A note's entries last until it is read again or deleted.
    """

    folder: list[str] = field(default_factory=list)
    problems: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def paths(self) -> set[str]:
        return set(self.problems) | set(self.notes)

    def keep_only(self, paths: set[str]) -> None:
        self.problems = {path: texts for path, texts in self.problems.items() if texts and path in paths}
        self.notes = {path: texts for path, texts in self.notes.items() if texts and path in paths}

    def to_json(self) -> str:
        return json.dumps({"folder": self.folder, "problems": self.problems, "notes": self.notes}, sort_keys=True)


def standing_warnings(records: RecordStore) -> StandingWarnings:
    """The standing warnings of this store (empty when none were recorded)."""
    text = records.meta(STANDING_KEY)
    data = json.loads(text) if text else {}
    return StandingWarnings(list(data.get("folder", [])), dict(data.get("problems", {})), dict(data.get("notes", {})))


def _read_settled(root: Path, path: Path, modules: dict[str, str], max_chars: int) -> tuple[Note, os.stat_result]:
    """The note parsed from one read of its bytes, and the file's stat from before that read.

    The bytes are hashed again after parsing; a note that changed meanwhile is read
    again (``READ_ATTEMPTS`` in all), then reported as still changing.
    """
    rel = path.relative_to(root).as_posix()
    for _ in range(READ_ATTEMPTS):
        stat = path.stat()
        raw = path.read_bytes()
        note = _parse_unique(rel, raw, modules, max_chars)
        if hashlib.sha256(path.read_bytes()).hexdigest() == note.sha256:
            return note, stat
    raise NoteError(rel, f"{rel}: kept changing while it was read ({READ_ATTEMPTS} tries); it is read again next time")


def pending_stats(notes_root: Path, records: RecordStore) -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of each pending note (``-1, -1`` for a deleted one), by path.

    Equal lists mean nothing was saved in between: what a debounce window watches.
    """
    stored = records.documents()
    on_disk = {p.relative_to(notes_root).as_posix(): p.stat() for p in discover_notes(notes_root)}
    changed = [
        (path, stat.st_size, stat.st_mtime_ns)
        for path, stat in on_disk.items()
        if path not in stored or not _same_stat(stored[path], stat)
    ]
    return sorted([*changed, *((path, -1, -1) for path in set(stored) - set(on_disk))])


def pending_stats_of(notes_root: Path, records: RecordStore, paths: Collection[str]) -> list[tuple[str, int, int]]:
    """What :func:`pending_stats` says of ``paths`` alone (relative to the root): a stat of each, no walk."""
    stored = records.documents(paths)
    changed = []
    for rel in sorted(paths):
        stat, previous = note_stat(notes_root, rel), stored.get(rel)
        if stat is None:
            if previous is not None:
                changed.append((rel, -1, -1))
        elif previous is None or not _same_stat(previous, stat):
            changed.append((rel, stat.st_size, stat.st_mtime_ns))
    return changed


def note_stat(notes_root: Path, rel: str) -> os.stat_result | None:
    """The stat of the file at ``rel`` if the walk would take it for a note (``None``: it would not)."""
    parts = rel.split("/")
    if any(part.startswith(".") for part in parts) or Path(parts[-1]).suffix.lower() not in NOTE_SUFFIXES:
        return None
    path = notes_root / rel
    try:
        if path.is_symlink():
            return None  # the change feed stops naming files once links exist: a walk judges them
        stat = path.stat()
    except OSError:
        return None
    return stat if S_ISREG(stat.st_mode) else None


def _same_stat(document: StoredDocument, stat: os.stat_result) -> bool:
    """A file whose size and mtime match its stored row is taken as unchanged without reading it."""
    return (document.size, document.mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def _parse_unique(rel: str, raw: bytes, modules: dict[str, str], max_chars: int) -> Note:
    """Parse a note; if its id is taken by another file, fall back to its path (then the path with suffix)."""
    note = note_from_bytes(rel, raw, max_chars)
    owner = modules.get(note.module)
    if owner is None or owner == note.path:
        return note
    free = next(name for name in _fallback_ids(note.path) if modules.get(name) in (None, note.path))
    fallback = note_from_bytes(rel, raw, max_chars, module=free)
    message = f"{note.path}: id {note.module!r} is already used by {owner}; using {free!r} as its id"
    return replace(fallback, warnings=(*fallback.warnings, message))


def _fallback_ids(rel_path: str) -> Iterator[str]:
    yield default_module(rel_path)
    yield rel_path
    yield from (f"{rel_path}~{n}" for n in itertools.count(2))
