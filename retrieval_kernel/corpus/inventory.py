"""The note inventory: every note as parsed, so a user can audit what the tool believes.

Read straight from the files (no index needed). A note that cannot be parsed is
listed with its error instead of its facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import NoteError
from .links import NoteRef, build_links
from .notes import Note, discover_notes, read_note


def inventory(notes_dir: str | Path) -> dict[str, Any]:
    """Every note under ``notes_dir`` as parsed (sorted by path), notes that failed to parse,
    and supersession references that resolved to no note or to several."""
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
        "notes": [_entry(note, links.successors, links.predecessors) for note in parsed],
        "problems": problems,
        "unresolved_links": [{"path": path, "reference": ref} for path, ref in links.unresolved],
        "ambiguous_links": [{"path": path, "reference": ref, "matches": list(m)} for path, ref, m in links.ambiguous],
    }


def _entry(note: Note, successors: Any, predecessors: Any) -> dict[str, Any]:
    facts = note.facts
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
        "supersedes": [edge.old for edge in predecessors.get(note.path, ())],
        "superseded_by": [edge.new for edge in successors.get(note.path, ())],
        "authority": facts.authority,
        "scope": list(facts.scope),
        "asserts": dict(facts.asserts),
        "fresh_for": facts.fresh_for,
        "kind": facts.kind,
        "aliases": list(facts.aliases),
        "passages": len(note.passages),
        "warnings": list(note.warnings),
    }
