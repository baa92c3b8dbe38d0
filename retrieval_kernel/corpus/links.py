"""Links between notes: resolve ``supersedes`` / ``superseded_by`` (full), ``amends`` / ``amended_by``
(partial supersession) and ``requires`` references to notes.

A reference is tried, in order, as a relative link target (``0012-foo.md``), a
note id or alias (``refund-policy-a``, optionally ``@revision``), and a record
number (``ADR025``, ``ADR-0012``, ``DR8``, ``0019``, ``RFC 1234``) matched against the leading
number of note file names, preferring the referring note's own folder; a bare number
(``141``) also matches a prefixed file name (``eip-141.md``) of the series. A link
whose target file is missing falls back to the record number of its file name.
A number that matches several notes links to all of them and is reported.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .facts import NoteFacts

_PATH_LIKE = re.compile(r"(/|\.(md|markdown)$)", re.IGNORECASE)
_RECORD_KEY = re.compile(r"^(?P<prefix>[A-Za-z]{0,5})[-_ ]?0*(?P<number>\d{1,5})(?![\d])")


@dataclass(frozen=True)
class NoteRef:
    """What the link resolver needs to know of one note."""

    path: str
    module: str
    facts: NoteFacts


@dataclass(frozen=True)
class Edge:
    """``old`` is superseded by ``new`` (paths); ``revision`` limits it to that revision of ``old``."""

    old: str
    new: str
    declared_by: str  # the path of the note that states the link
    revision: str | None = None
    partial: bool = False  # ``new`` amends ``old``: old stays in force, new governs where they differ


@dataclass(frozen=True)
class LinkGraph:
    """Every resolved supersession edge, and the references that resolved to no note."""

    edges: tuple[Edge, ...]
    unresolved: tuple[tuple[str, str], ...] = ()  # (path, reference)
    ambiguous: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    successors: Mapping[str, tuple[Edge, ...]] = field(default_factory=dict)  # full supersession only
    predecessors: Mapping[str, tuple[Edge, ...]] = field(default_factory=dict)
    amenders: Mapping[str, tuple[Edge, ...]] = field(default_factory=dict)  # partial: old path -> its edges
    amended: Mapping[str, tuple[Edge, ...]] = field(default_factory=dict)  # partial: new path -> its edges
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # path -> the paths it requires


def build_links(notes: Iterable[NoteRef]) -> LinkGraph:
    """Resolve every note's supersession references against the whole collection."""
    by_path = {note.path: note for note in sorted(notes, key=lambda n: n.path)}
    resolver = _Resolver(by_path)
    edges: dict[tuple[str, str], Edge] = {}
    requires: dict[str, tuple[str, ...]] = {}
    for note in by_path.values():
        facts = note.facts
        for amending, later, earlier in (
            (False, facts.superseded_by, facts.supersedes),
            (True, facts.amended_by, facts.amends),
        ):
            for ref in later:
                for target in resolver.resolve(note.path, ref):
                    edges.setdefault((note.path, target), Edge(note.path, target, note.path, partial=amending))
            for ref in earlier:
                revision = _revision_of(ref)
                for target in resolver.resolve(note.path, ref):
                    edges.setdefault((target, note.path), Edge(target, note.path, note.path, revision, amending))
        needed = [target for ref in facts.requires for target in resolver.resolve(note.path, ref)]
        if needed:
            requires[note.path] = tuple(dict.fromkeys(needed))
    ordered = tuple(sorted(edges.values(), key=lambda e: (e.old, e.new)))
    full = tuple(edge for edge in ordered if not edge.partial)
    partial = tuple(edge for edge in ordered if edge.partial)
    return LinkGraph(
        edges=ordered,
        unresolved=tuple(resolver.unresolved),
        ambiguous=tuple(resolver.ambiguous),
        successors=_group(full, lambda e: e.old),
        predecessors=_group(full, lambda e: e.new),
        amenders=_group(partial, lambda e: e.old),
        amended=_group(partial, lambda e: e.new),
        requires=requires,
    )


def _group(edges: tuple[Edge, ...], key: object) -> dict[str, tuple[Edge, ...]]:
    grouped: dict[str, list[Edge]] = {}
    for edge in edges:
        grouped.setdefault(key(edge), []).append(edge)  # type: ignore[operator]
    return {name: tuple(items) for name, items in grouped.items()}


def _revision_of(ref: str) -> str | None:
    name, at, revision = ref.rpartition("@")
    return revision.strip() or None if at and name and not _PATH_LIKE.search(revision) else None


class _Resolver:
    def __init__(self, by_path: Mapping[str, NoteRef]) -> None:
        self.by_path = by_path
        self.by_lower_path = {path.lower(): path for path in by_path}
        self.by_name: dict[str, list[str]] = {}
        self.by_number: dict[tuple[str, int], list[str]] = {}
        self.by_bare_number: dict[int, list[str]] = {}
        for note in by_path.values():
            for name in (note.module, *note.facts.aliases):
                self.by_name.setdefault(name.lower(), []).append(note.path)
            key = _record_key(posixpath.basename(note.path))
            if key is not None:
                self.by_number.setdefault(key, []).append(note.path)
                self.by_bare_number.setdefault(key[1], []).append(note.path)
        self.prefixes = {prefix for prefix, _ in self.by_number}
        self.unresolved: list[tuple[str, str]] = []
        self.ambiguous: list[tuple[str, str, tuple[str, ...]]] = []

    def resolve(self, source: str, ref: str) -> tuple[str, ...]:
        name = ref.rpartition("@")[0] if _revision_of(ref) else ref
        name = name.strip()
        found = (
            self._as_path(source, name) or tuple(self.by_name.get(name.lower(), ())) or self._as_number(source, name)
        )
        found = tuple(path for path in found if path != source)
        if not found:
            self.unresolved.append((source, ref))
        elif len(found) > 1:
            self.ambiguous.append((source, ref, found))
        return found

    def _as_path(self, source: str, name: str) -> tuple[str, ...]:
        if not _PATH_LIKE.search(name):
            return ()
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), name.split("#")[0]))
        exact = self.by_lower_path.get(target.lower())
        return (exact,) if exact else self._as_number(source, posixpath.basename(target))

    def _as_number(self, source: str, name: str) -> tuple[str, ...]:
        key = _record_key(name)
        if key is None:
            return ()
        matches = self.by_number.get(key, [])
        if not matches and key[0] not in self.prefixes:  # "ADR-19" in an adr-tools folder of 0019-x.md files
            matches = self.by_number.get(("", key[1]), [])
        folder = posixpath.dirname(source)
        near = [path for path in matches if posixpath.dirname(path) == folder]
        if not near and not key[0]:  # "141" beside eip-141.md: the number 141 of the referring note's series
            series = self.by_bare_number.get(key[1], [])
            near = [path for path in series if posixpath.dirname(path) == folder]
            matches = matches or series
        return tuple(near or matches)


def _record_key(name: str) -> tuple[str, int] | None:
    """``("adr", 25)`` for ``ADR025-remove-papertrail.md`` or ``ADR-0025``; ``None`` without a number."""
    match = _RECORD_KEY.match(name.strip())
    return (match["prefix"].lower(), int(match["number"])) if match else None
