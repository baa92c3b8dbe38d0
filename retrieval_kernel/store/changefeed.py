"""Whether the notes may have changed, without a stat walk: the operating system's change notifications.

A query used to stat every note to learn whether anything changed (on a folder of 7,425 notes
that was most of a query's time). :class:`ChangeFeed` asks Linux inotify instead: the kernel
queues an event for every create, write, rename or delete under the watched folders, in the
same system call that changes the file, so a query that finds the queue empty knows that
nothing changed since the last look, with no race against a save that just returned.

Only visible folders are watched (hidden files and folders, such as the store in
``.retrieval_kernel/``, are not notes). Anything the feed cannot vouch for (an overflowed
queue, a watched folder removed or moved) counts as a change, so the caller walks once more.
Where inotify is unavailable (another OS, no free inotify instances) :meth:`ChangeFeed.open`
returns ``None`` and the caller falls back to the walk.

:meth:`ChangeFeed.changes` also names the files the events were about, so a caller can check
only those instead of walking. It names nothing (``None``: walk) for what names cannot cover:
an event about a folder (created, moved or removed with its notes), a folder that could not be
watched, and symbolic links to notes (an edit of the target names the target, not the link).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

try:  # Linux only; elsewhere the caller walks
    from inotify_simple import INotify, flags
except ImportError:  # pragma: no cover - depends on the platform
    INotify = None
    flags = None

_GIVE_UP_AFTER_READS = 64  # a queue still not empty after this many reads: report a change and stop reading


def _watched_mask() -> int:
    return int(
        flags.CREATE
        | flags.DELETE
        | flags.MODIFY
        | flags.CLOSE_WRITE
        | flags.ATTRIB
        | flags.MOVED_FROM
        | flags.MOVED_TO
        | flags.DELETE_SELF
        | flags.MOVE_SELF
        | flags.ONLYDIR
    )


class ChangeFeed:
    """An inotify watch on a notes folder and its visible subfolders."""

    def __init__(self, root: Path, notify: Any) -> None:
        self.root = root
        self._notify = notify
        self._folders: dict[int, Path] = {}
        self._nameable = True  # every note is a plain file in a watched folder: events name every change

    @classmethod
    def open(cls, root: Path) -> ChangeFeed | None:
        """A feed on ``root``, or ``None`` where the platform or its limits do not allow one."""
        if INotify is None:
            return None
        try:
            feed = cls(root, INotify())
        except OSError:  # e.g. no inotify instance left (fs.inotify.max_user_instances)
            return None
        try:
            feed._watch_tree(root)
        except OSError:  # e.g. fs.inotify.max_user_watches reached
            feed.close()
            return None
        return feed

    def changed(self) -> bool:
        """Whether anything under the root may have changed since the last call (empties the queue)."""
        return self.changes() != frozenset()

    def changes(self) -> frozenset[str] | None:
        """The files (relative to the root) the events since the last call were about (empties the
        queue); ``None`` when the events cannot name every change (then walk)."""
        named: set[str] | None = set()
        for _ in range(_GIVE_UP_AFTER_READS):
            events = self._notify.read(timeout=0)
            if not events:
                return frozenset(named) if named is not None and self._nameable else None
            for event in events:
                path = self._note(event)
                if path is None:
                    named = None
                elif named is not None and path:
                    named.add(path)
        return None

    def _note(self, event: Any) -> str | None:
        """The file ``event`` may have changed (``""``: no note; ``None``: cannot say); keeps the
        watches in step with the folders."""
        if event.mask & flags.Q_OVERFLOW:
            return None
        if event.mask & (flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF):
            self._folders.pop(event.wd, None)
            return None
        if event.name.startswith("."):
            return ""  # hidden: never a note (the store lives in .retrieval_kernel/)
        folder = self._folders.get(event.wd)
        if event.mask & flags.ISDIR:
            if folder is not None and event.mask & (flags.CREATE | flags.MOVED_TO):
                with contextlib.suppress(OSError):  # gone again, or out of watches: the walk still sees it
                    self._watch_tree(folder / event.name)
            return None
        if folder is None:
            return None
        if os.path.islink(folder / event.name):
            self._nameable = False
        return (folder / event.name).relative_to(self.root).as_posix()

    def _watch_tree(self, top: Path) -> None:
        try:
            for folder, subfolders, files in os.walk(top):
                subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
                wd = self._notify.add_watch(folder, _watched_mask())
                self._folders[wd] = Path(folder)
                if any(os.path.islink(os.path.join(folder, name)) for name in files):
                    self._nameable = False  # links are rare in notes: walk rather than follow their targets
        except OSError:
            self._nameable = False  # a folder left unwatched: its changes have no events
            raise

    def close(self) -> None:
        self._notify.close()
