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
from bisect import insort
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    return LinkIndex(notes).links()


class LinkIndex:
    """The notes references resolve against, by every name a reference may use, kept up to date note
    by note (:meth:`put`, :meth:`drop`): after a one-note edit only the references are resolved again.

    Each name's paths stay in path order, as a build from all notes in path order lists them.
    """

    def __init__(self, notes: Iterable[NoteRef] = ()) -> None:
        self.notes: dict[str, NoteRef] = {}
        self.by_lower_path: dict[str, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        self.by_number: dict[tuple[str, int], list[str]] = {}
        self.by_bare_number: dict[int, list[str]] = {}
        self.prefixes: Counter[str] = Counter()  # prefix -> record keys with it
        self.referring: set[str] = set()  # the notes that state a reference
        by_path = {note.path: note for note in sorted(notes, key=lambda n: n.path)}  # a path given twice: the last
        for note in by_path.values():
            self._add(note, _append)  # in path order: appending keeps every list sorted

    def put(self, note: NoteRef) -> None:
        """Add ``note`` (replacing the note at its path, if any)."""
        self.drop(note.path)
        self._add(note, _insert)

    def _add(self, note: NoteRef, insert: Callable[[dict[Any, list[str]], Any, str], None]) -> None:
        self.notes[note.path] = note
        insert(self.by_lower_path, note.path.lower(), note.path)
        for name in _names(note):
            insert(self.by_name, name, note.path)
        key = _record_key(posixpath.basename(note.path))
        if key is not None:
            if key not in self.by_number:
                self.prefixes[key[0]] += 1
            insert(self.by_number, key, note.path)
            insert(self.by_bare_number, key[1], note.path)
        if _refers(note.facts):
            self.referring.add(note.path)

    def drop(self, path: str) -> None:
        """Remove the note at ``path`` (nothing when there is none)."""
        note = self.notes.pop(path, None)
        if note is None:
            return
        _remove(self.by_lower_path, path.lower(), path)
        for name in set(_names(note)):
            _remove(self.by_name, name, path)
        key = _record_key(posixpath.basename(path))
        if key is not None:
            _remove(self.by_number, key, path)
            _remove(self.by_bare_number, key[1], path)
            if key not in self.by_number:
                self.prefixes[key[0]] -= 1
                if not self.prefixes[key[0]]:
                    del self.prefixes[key[0]]
        self.referring.discard(path)

    def links(self) -> LinkGraph:
        """Every note's references resolved against the notes held now."""
        resolver = _Resolver(self)
        edges: dict[tuple[str, str], Edge] = {}
        requires: dict[str, tuple[str, ...]] = {}
        for path in sorted(self.referring):  # the first note (by path) to state an edge declares it
            facts = self.notes[path].facts
            for amending, later, earlier in (
                (False, facts.superseded_by, facts.supersedes),
                (True, facts.amended_by, facts.amends),
            ):
                for ref in later:
                    for target in resolver.resolve(path, ref):
                        edges.setdefault((path, target), Edge(path, target, path, partial=amending))
                for ref in earlier:
                    revision = _revision_of(ref)
                    for target in resolver.resolve(path, ref):
                        edges.setdefault((target, path), Edge(target, path, path, revision, amending))
            needed = [target for ref in facts.requires for target in resolver.resolve(path, ref)]
            if needed:
                requires[path] = tuple(dict.fromkeys(needed))
        return _graph(tuple(sorted(edges.values(), key=lambda e: (e.old, e.new))), resolver, requires)


def _graph(ordered: tuple[Edge, ...], resolver: _Resolver, requires: dict[str, tuple[str, ...]]) -> LinkGraph:
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


def _names(note: NoteRef) -> list[str]:
    """The lower-cased names a reference may call ``note`` by (a repeated one repeats, as the index lists it)."""
    return [name.lower() for name in (note.module, *note.facts.aliases)]


def _refers(facts: NoteFacts) -> bool:
    return bool(facts.superseded_by or facts.supersedes or facts.amended_by or facts.amends or facts.requires)


def _insert(index: dict[Any, list[str]], key: Any, path: str) -> None:
    insort(index.setdefault(key, []), path)


def _append(index: dict[Any, list[str]], key: Any, path: str) -> None:
    index.setdefault(key, []).append(path)


def _remove(index: dict[Any, list[str]], key: Any, path: str) -> None:
    kept = [other for other in index.get(key, ()) if other != path]
    if kept:
        index[key] = kept
    else:
        index.pop(key, None)


def _group(edges: tuple[Edge, ...], key: object) -> dict[str, tuple[Edge, ...]]:
    grouped: dict[str, list[Edge]] = {}
    for edge in edges:
        grouped.setdefault(key(edge), []).append(edge)  # type: ignore[operator]
    return {name: tuple(items) for name, items in grouped.items()}


def _revision_of(ref: str) -> str | None:
    name, at, revision = ref.rpartition("@")
    return revision.strip() or None if at and name and not _PATH_LIKE.search(revision) else None


class _Resolver:
    def __init__(self, index: LinkIndex) -> None:
        self.by_lower_path = index.by_lower_path
        self.by_name = index.by_name
        self.by_number = index.by_number
        self.by_bare_number = index.by_bare_number
        self.prefixes = index.prefixes
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
        same = self.by_lower_path.get(target.lower())  # paths equal but for case: the last one, by path
        return (same[-1],) if same else self._as_number(source, posixpath.basename(target))

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
