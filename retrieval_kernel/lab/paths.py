"""Where a note is, as the Jupyter server sees it: inside its root (Lab opens it), or outside (read-only view).

Paths are joined and normalised lexically (``os.path.normpath``), never resolved through symlinks:
a note reached through a symlinked folder keeps the path the user reached it by, so a link made
from it stays inside the root when that folder is, and stays the same wherever the checkout sits.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from ..corpus.notes import NOTE_SUFFIXES
from ..errors import InputError, OutsideRootError


def lexical(path: str | Path) -> str:
    """``path`` absolute and normalised without resolving symlinks."""
    return os.path.normpath(os.path.abspath(path))


def within(path: str, folder: str) -> bool:
    """Whether lexical absolute ``path`` is ``folder`` or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def root_relative(root: str | Path, file: str | Path) -> str | None:
    """``file`` as a Lab path (posix, relative to ``root``), or ``None`` when it lies outside the root."""
    top, target = lexical(root), lexical(file)
    if not within(target, top):
        return None
    return PurePosixPath(Path(os.path.relpath(target, top))).as_posix()


def from_root(root: str | Path, lab_path: str) -> str:
    """The lexical absolute file a Lab path (relative to ``root``, ``..`` allowed) names."""
    if not isinstance(lab_path, str) or not lab_path.strip():
        raise InputError("path is empty: pass the note's path relative to the Jupyter root")
    if "\x00" in lab_path or os.path.isabs(lab_path):
        raise InputError(f"path {lab_path!r} must be relative to the Jupyter root")
    return lexical(os.path.join(lexical(root), lab_path))


def served_note(root: str | Path, lab_path: str, folders: list[Path]) -> tuple[Path, Path]:
    """The note a Lab path names and the served folder holding it; ``OutsideRootError`` otherwise.

    A note is readable only when it is a Markdown note inside one of ``folders`` (the root, the
    configured notes folder, any extra ones) both by the path it was reached by and by its real path:
    a folder reached through a symlink is fine, a symlinked file pointing out of the folder is not.
    """
    target = from_root(root, lab_path)
    for folder in folders:
        top = lexical(folder)
        if within(target, top) and within(os.path.realpath(target), os.path.realpath(top)):
            if Path(target).suffix.lower() not in NOTE_SUFFIXES:
                raise OutsideRootError(f"{lab_path} is not a Markdown note; only notes are served")
            return Path(target), Path(top)
    raise OutsideRootError(
        f"{lab_path} is outside the Jupyter root and outside the notes folders this server serves; "
        "open notes inside the root, or add their folder to RetrievalKernel.notes_dir / extra_notes_dirs"
    )
