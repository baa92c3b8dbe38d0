"""The identity lane: exact identifiers resolve before free-text search.

A query (or any word of it, stripped of surrounding punctuation) that names a
passage id, a note id, an alias from front matter ``aliases``, a note's relative
path (with or without its suffix) or a content-hash prefix of at least
``MIN_HASH_PREFIX`` hex digits resolves to those passages. They lead the packet.
"""

from __future__ import annotations

import re
import threading
from bisect import insort
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..corpus.notes import default_module
from ..store.records import RecordStore

NAME = "identity"
SCORE_BASIS = "exact identifier (passage id, note id, alias, path, content-hash prefix)"
MIN_HASH_PREFIX = 8
_HEX = re.compile(r"^[0-9a-f]+$")
_EDGE_PUNCTUATION = "\"'`()[]{}<>,;:!?."


@dataclass(frozen=True)
class IdentityHit:
    """A passage named exactly by the query, and how it was named."""

    passage_id: str
    matched: str
    kind: str


def resolve(query: str, records: RecordStore, limit: int) -> list[IdentityHit]:
    """Passages the query names exactly, most specific first, at most ``limit``."""
    tokens = _tokens(query)
    if not tokens:
        return []
    hits: list[IdentityHit] = []
    hits += [IdentityHit(pid, pid, "passage id") for pid in records.passages(tokens)]
    hits += [
        IdentityHit(pid, prefix, "content hash")
        for prefix in tokens
        if _is_hash_prefix(prefix)
        for pid in records.passage_ids_with_hash_prefix(prefix)
    ]
    names = _named(records, sorted({token.lower() for token in tokens}))
    for token, named in names.items():
        for path, kind in named:
            hits += [IdentityHit(p.id, token, kind) for p in records.passages_of(path)]
    unique: dict[str, IdentityHit] = {}
    for hit in hits:
        unique.setdefault(hit.passage_id, hit)  # the most specific naming wins
    return list(unique.values())[:limit]


class _NameIndex:
    """Lower-cased note names → [(path, kind)] in path order, at one change-log position (``high_water``;
    -1 while it is being patched), patched in place note by note."""

    def __init__(self) -> None:
        self.high_water = -1
        self.names: dict[str, list[tuple[str, str]]] = {}
        self.of_note: dict[str, dict[str, str]] = {}  # path -> its names and their kinds

    @classmethod
    def build(cls, records: RecordStore, high_water: int) -> _NameIndex:
        index = cls()
        for document in records.documents().values():  # in path order: each name's list comes out sorted
            index._add(document.path, _document_names(document.path, document.module, document.metadata.get("aliases")))
        index.high_water = high_water
        return index

    def patch(self, records: RecordStore, changed: set[str], high_water: int) -> None:
        """Read the notes at ``changed`` again."""
        self.high_water = -1  # until the patch is whole
        for path in changed:
            for name in self.of_note.pop(path, {}):
                self.names[name] = [entry for entry in self.names[name] if entry[0] != path]
                if not self.names[name]:
                    del self.names[name]
        for doc in records.documents(changed).values():
            self._add(doc.path, _document_names(doc.path, doc.module, doc.metadata.get("aliases")), keep_order=True)
        self.high_water = high_water

    def _add(self, path: str, names: dict[str, str], keep_order: bool = False) -> None:
        self.of_note[path] = names
        for name, kind in names.items():
            if keep_order:
                insort(self.names.setdefault(name, []), (path, kind))
            else:
                self.names.setdefault(name, []).append((path, kind))


_NAME_INDEXES: dict[Path, _NameIndex] = {}
_NAME_INDEXES_LOCK = threading.Lock()  # the indexes are patched in place: read and patched under it


def _named(records: RecordStore, names: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """The notes each of ``names`` (lower-cased) names, as [(path, kind)] in path order; the index is
    patched for the notes changed since the change log last moved (built from every note the first time)."""
    high_water = records.high_water()
    with _NAME_INDEXES_LOCK:
        index = _NAME_INDEXES.get(records.path)
        changed = None
        if index is not None and 0 <= index.high_water < high_water:
            changed = records.changed_paths(index.high_water)
        if index is None or (index.high_water != high_water and changed is None):
            index = _NAME_INDEXES[records.path] = _NameIndex.build(records, high_water)
        elif changed is not None:
            index.patch(records, changed, high_water)
        return {name: list(index.names.get(name, ())) for name in names}


def _tokens(query: str) -> list[str]:
    whole = query.strip().strip(_EDGE_PUNCTUATION)
    words = [word.strip(_EDGE_PUNCTUATION) for word in query.split()]
    return [token for token in dict.fromkeys([whole, *words]) if token]


def _is_hash_prefix(token: str) -> bool:
    return len(token) >= MIN_HASH_PREFIX and _HEX.match(token) is not None


def _document_names(path: str, module: str, aliases: object) -> dict[str, str]:
    """Lower-cased names of one note, each with the kind of identifier it is."""
    names = {path.lower(): "path", default_module(path).lower(): "path", module.lower(): "note id"}
    alias_list = [aliases] if isinstance(aliases, str) else aliases if isinstance(aliases, list) else []
    names.update({str(alias).lower(): "alias" for alias in alias_list if str(alias).strip()})
    return names
