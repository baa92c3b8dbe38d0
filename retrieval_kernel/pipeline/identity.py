"""The identity lane: exact identifiers resolve before free-text search.

A query (or any word of it, stripped of surrounding punctuation) that names a
passage id, a note id, an alias from front matter ``aliases``, a note's relative
path (with or without its suffix) or a content-hash prefix of at least
``MIN_HASH_PREFIX`` hex digits resolves to those passages. They lead the packet.
"""

from __future__ import annotations

import re
import threading
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
    names = _name_index(records)
    for token in sorted({token.lower() for token in tokens}):
        for path, kind in names.get(token, []):
            hits += [IdentityHit(p.id, token, kind) for p in records.passages_of(path)]
    unique: dict[str, IdentityHit] = {}
    for hit in hits:
        unique.setdefault(hit.passage_id, hit)  # the most specific naming wins
    return list(unique.values())[:limit]


@dataclass(frozen=True)
class _NameIndex:
    """Lower-cased note names → [(path, kind)] in path order, at one change-log position."""

    high_water: int
    names: dict[str, list[tuple[str, str]]]
    of_note: dict[str, dict[str, str]]  # path -> its names and their kinds

    @classmethod
    def build(cls, records: RecordStore, high_water: int) -> _NameIndex:
        names: dict[str, list[tuple[str, str]]] = {}
        of_note: dict[str, dict[str, str]] = {}
        for document in records.documents().values():
            of_note[document.path] = _document_names(document.path, document.module, document.metadata.get("aliases"))
            for name, kind in of_note[document.path].items():
                names.setdefault(name, []).append((document.path, kind))
        return cls(high_water, names, of_note)

    def patched(self, records: RecordStore, changed: set[str], high_water: int) -> _NameIndex:
        """This index with the notes at ``changed`` read again (copied where they change: never in place)."""
        names, of_note = dict(self.names), dict(self.of_note)
        for path in changed:
            for name in of_note.pop(path, {}):
                names[name] = [entry for entry in names[name] if entry[0] != path]
                if not names[name]:
                    del names[name]
        for document in records.documents(changed).values():
            of_note[document.path] = _document_names(document.path, document.module, document.metadata.get("aliases"))
            for name, kind in of_note[document.path].items():
                names[name] = sorted([*names.get(name, ()), (document.path, kind)])
        return _NameIndex(high_water, names, of_note)


_NAME_INDEXES: dict[Path, _NameIndex] = {}
_NAME_INDEXES_LOCK = threading.Lock()


def _name_index(records: RecordStore) -> dict[str, list[tuple[str, str]]]:
    """Lower-cased note names → [(path, kind)], patched for the notes changed when the change log moves."""
    high_water = records.high_water()
    with _NAME_INDEXES_LOCK:
        cached = _NAME_INDEXES.get(records.path)
        if cached is None or cached.high_water != high_water:
            changed = None
            if cached is not None and cached.high_water < high_water:
                changed = records.changed_paths(cached.high_water)
            if cached is None or changed is None:
                cached = _NameIndex.build(records, high_water)
            else:
                cached = cached.patched(records, changed, high_water)
            _NAME_INDEXES[records.path] = cached
        return cached.names


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
