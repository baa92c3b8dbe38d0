"""Bring the record store in step with the notes on disk.

A file whose size and mtime match the stored row is taken as unchanged without
reading it; otherwise its bytes are hashed and only a changed hash makes a new
revision. A note that cannot be parsed is reported and its last good revision
stays in the store (nothing already indexed is lost).
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import NoteError, StoreError
from .notes import DEFAULT_MAX_PASSAGE_CHARS, Note, default_module, discover_notes, read_note
from .records import RecordStore, StoredDocument, utc_now

LOCK_NAME = "refresh.lock"


@dataclass(frozen=True)
class Problem:
    """A note that could not be (re)indexed, and why."""

    path: str
    message: str
    kept_last_good: bool


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
def refresh_lock(store_dir: Path) -> Iterator[None]:
    """Hold the store's exclusive refresh lock (one publisher at a time)."""
    try:
        handle = open(store_dir / LOCK_NAME, "a+")  # noqa: SIM115 - closed by the `with` below
    except OSError as exc:
        raise StoreError(f"cannot take the refresh lock in {store_dir}: {exc}") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sync_notes(
    notes_root: Path, records: RecordStore, max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS
) -> SyncReport:
    """Add, update and tombstone documents so the store matches ``notes_root``."""
    stored = records.documents()
    added: list[str] = []
    updated: list[str] = []
    problems: list[Problem] = []
    warnings: list[str] = []
    unchanged = 0
    seen: set[str] = set()
    modules = {doc.module: doc.path for doc in stored.values()}
    for path in discover_notes(notes_root):
        rel = path.relative_to(notes_root).as_posix()
        seen.add(rel)
        stat = path.stat()
        previous = stored.get(rel)
        if previous and _same_stat(previous, stat):
            unchanged += 1
            continue
        raw_hash = hashlib.sha256(path.read_bytes()).hexdigest()
        if previous and previous.sha256 == raw_hash:
            records.touch(rel, stat.st_size, stat.st_mtime_ns)
            unchanged += 1
            continue
        try:
            note = _read_unique(notes_root, path, modules, max_passage_chars)
        except NoteError as exc:
            problems.append(Problem(rel, str(exc), kept_last_good=previous is not None))
            continue
        warnings.extend(note.warnings)
        modules[note.module] = rel
        records.upsert(note, stat.st_size, stat.st_mtime_ns, utc_now())
        (updated if previous else added).append(rel)
    deleted = sorted(set(stored) - seen)
    for rel in deleted:
        records.delete(rel, utc_now())
    return SyncReport(tuple(added), tuple(updated), tuple(deleted), unchanged, tuple(problems), tuple(warnings))


def pending_changes(notes_root: Path, records: RecordStore) -> bool:
    """Whether the notes differ from the store by path, size or mtime (no reading, no hashing)."""
    stored = records.documents()
    on_disk = {p.relative_to(notes_root).as_posix(): p.stat() for p in discover_notes(notes_root)}
    return set(stored) != set(on_disk) or not all(_same_stat(doc, on_disk[path]) for path, doc in stored.items())


def _same_stat(document: StoredDocument, stat: os.stat_result) -> bool:
    """A file whose size and mtime match its stored row is taken as unchanged without reading it."""
    return (document.size, document.mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def _read_unique(root: Path, path: Path, modules: dict[str, str], max_chars: int) -> Note:
    """Read a note; if its id is taken by another file, fall back to its path (then the path with suffix)."""
    note = read_note(root, path, max_chars)
    owner = modules.get(note.module)
    if owner is None or owner == note.path:
        return note
    free = next(name for name in _fallback_ids(note.path) if modules.get(name) in (None, note.path))
    fallback = read_note(root, path, max_chars, module=free)
    message = f"{note.path}: id {note.module!r} is already used by {owner}; using {free!r} as its id"
    return replace(fallback, warnings=(*fallback.warnings, message))


def _fallback_ids(rel_path: str) -> Iterator[str]:
    yield default_module(rel_path)
    yield rel_path
    yield from (f"{rel_path}~{n}" for n in itertools.count(2))
