"""The note inventory: every note as parsed, so a user can audit what the tool believes.

Read straight from the files (no index needed). A note that cannot be parsed is
listed with its error instead of its facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import NoteError
from .links import LinkGraph, NoteRef, build_links
from .notebooks import is_notebook
from .notes import Note, discover_notes, read_note


def inventory(notes_dir: str | Path) -> dict[str, Any]:
    """Every note under ``notes_dir`` as parsed (sorted by path), notes that failed to parse,
    and references (supersession, amendment, requires) that resolved to no note or to several.

    ``status`` is normalised by the vocabulary of :mod:`~retrieval_kernel.corpus.status`;
    ``status_as_written`` keeps the words; ``partly_superseded_by`` names the notes that amend
    this one (it stays current; they govern where they differ)."""
    root = Path(notes_dir)
    parsed: list[Note] = []
    problems: list[dict[str, Any]] = []
    for path in discover_notes(root):
        try:
            parsed.append(read_note(root, path))
        except NoteError as exc:
            problems.append({"path": path.relative_to(root).as_posix(), "error": str(exc)})
    links = build_links(NoteRef(note.path, note.module, note.facts) for note in parsed)
    return {
        "notes": [_entry(note, links) for note in parsed],
        "problems": problems,
        "unresolved_links": [{"path": path, "reference": ref} for path, ref in links.unresolved],
        "ambiguous_links": [{"path": path, "reference": ref, "matches": list(m)} for path, ref, m in links.ambiguous],
    }


def _entry(note: Note, links: LinkGraph) -> dict[str, Any]:
    facts = note.facts
    path = note.path
    return {
        "id": note.module,
        "path": note.path,
        "title": note.title,
        "observed": note.observed_at,
        "date_line": facts.date_line,
        "valid_from": facts.valid_from,
        "valid_to": facts.valid_to,
        "revision": facts.revision,
        "status": facts.status,
        "status_as_written": facts.status_text,
        "status_source": facts.status_source,
        "supersedes": [edge.old for edge in links.predecessors.get(path, ())],
        "superseded_by": [edge.new for edge in links.successors.get(path, ())],
        "amends": [edge.old for edge in links.amended.get(path, ())],
        "partly_superseded_by": [edge.new for edge in links.amenders.get(path, ())],
        "requires": list(links.requires.get(path, ())),
        "authority": facts.authority,
        "scope": list(facts.scope),
        "asserts": dict(facts.asserts),
        "fresh_for": facts.fresh_for,
        "kind": facts.kind,
        "aliases": list(facts.aliases),
        "passages": len(note.passages),
        "cells": _cells(note) if is_notebook(path) else None,
        "warnings": list(note.warnings),
    }


def _cells(note: Note) -> list[int]:
    """The indexes of a notebook's cells that gave passages."""
    return sorted({p.cell_index for p in note.passages if p.cell_index is not None})
