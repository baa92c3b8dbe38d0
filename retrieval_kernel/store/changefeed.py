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
        changed = False
        for _ in range(_GIVE_UP_AFTER_READS):
            events = self._notify.read(timeout=0)
            if not events:
                return changed
            for event in events:
                changed = self._note(event) or changed
        return True

    def _note(self, event: Any) -> bool:
        """Whether ``event`` may be a change to a note; keeps the watches in step with the folders."""
        if event.mask & flags.Q_OVERFLOW:
            return True
        if event.mask & (flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF):
            self._folders.pop(event.wd, None)
            return True
        if event.name.startswith("."):
            return False  # hidden: never a note (the store lives in .retrieval_kernel/)
        if event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO):
            folder = self._folders.get(event.wd)
            if folder is not None:
                with contextlib.suppress(OSError):  # gone again, or out of watches: the walk still sees it
                    self._watch_tree(folder / event.name)
        return True

    def _watch_tree(self, top: Path) -> None:
        for folder, subfolders, _ in os.walk(top):
            subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
            wd = self._notify.add_watch(folder, _watched_mask())
            self._folders[wd] = Path(folder)

    def close(self) -> None:
        self._notify.close()
