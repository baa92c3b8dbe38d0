"""Writing a compiled lexicon as a Whoosh index: the bytes Whoosh's own writer would write.

A rebuild has already analysed every passage into :class:`~.compiled.CompiledLexicon` (term
frequencies by passage, sorted by passage within each term). Whoosh's writer would analyse the
text again, put every posting through its in-memory pool, sort them, and then spend tens of
Python calls per term writing them. Here Whoosh's own segment writer is opened and committed as
usual; each passage's stored fields and lengths go to its per-document writer, and each term's
postings are laid out as its field writer lays them out (``W3FieldWriter``, ``W3PostingsWriter``,
``OrderedHashWriter``) and appended in large chunks. A test compares every file of the segment
with the one Whoosh writes from the same passages, byte for byte, so Whoosh opens, searches and
updates the index as its own.

Blocks are stored uncompressed (the codec's ``compression=0``): zlib's set-up for each small
block cost more than writing the rest of the term, for a file a quarter to a third smaller.
Only the field formats the lexical schema uses are written this way: term frequencies for the
text fields, existence for the id fields, stored values for the rest.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from pickle import dumps
from typing import Any, NamedTuple

import numpy as np
from whoosh import index as whoosh_index
from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec
from whoosh.fields import Schema
from whoosh.formats import Existence, Frequency
from whoosh.system import pack_int, pack_long, pack_ushort

from .compiled import CompiledLexicon, length_bytes

BLOCK_LIMIT = 128  # postings per block: W3Codec's default blocklimit
FLUSH_AT = 1 << 24  # bytes of postings or term rows buffered before they are written
_TERM_INFO = np.dtype(  # W3TermInfo's "!BfIBBfII", unpadded
    [
        ("flags", "u1"),
        ("weight", ">f4"),
        ("df", ">u4"),
        ("shortest", "u1"),
        ("longest", "u1"),
        ("heaviest", ">f4"),
        ("first_id", ">u4"),
        ("last_id", ">u4"),
    ]
)
_ROW_LENGTHS = struct.Struct("!ii")  # a hash-table row: key and value lengths


def write_index(
    folder: Path, schema: Schema, compiled: CompiledLexicon, stored: dict[str, Sequence[Any]], compound: bool = True
) -> None:
    """Create a Whoosh index in ``folder`` holding ``compiled``'s passages as one segment.

    ``compiled`` must be freshly built (every passage live, no delta); ``stored`` gives each
    stored-only field's value by passage. The text fields are the compiled fields, ``id`` and
    ``path`` the passages' ids and paths. ``compound``: Whoosh's option (one file per segment).
    """
    _check_schema(schema, compiled, stored)
    writer = whoosh_index.create_in(folder, schema).writer(codec=W3Codec(compression=0), compound=compound)
    try:
        lengths = {name: compiled.exact[name].astype(np.int64).tolist() for name in compiled.matrices}
        _write_documents(writer.perdocwriter, schema, compiled, lengths, stored)
        writer.docnum = compiled.size
        _write_postings(writer.fieldwriter, schema, compiled)
    except BaseException:
        writer.cancel()
        raise
    writer._added = compiled.size > 0  # what add_document sets: commit then finishes the segment and lists it
    writer.commit(merge=False)


def _check_schema(schema: Schema, compiled: CompiledLexicon, stored: dict[str, Sequence[Any]]) -> None:
    """Refuse a schema this writer would not reproduce exactly."""
    for name in schema.names():
        field = schema[name]
        if name in compiled.matrices:
            ok = type(field.format) is Frequency and field.scorable
        elif name in ("id", "path"):
            ok = type(field.format) is Existence and not field.scorable
        else:
            ok = name in stored and not field.indexed
        if field.indexed:
            ok = ok and field.format.field_boost == 1.0 and not field.vector  # weights are the counts themselves
        if not ok or field.column_type or field.separate_spelling():
            raise ValueError(f"cannot write field {name!r} ({field!r}) without Whoosh's writer")


def _write_documents(
    perdoc: Any,
    schema: Schema,
    compiled: CompiledLexicon,
    lengths: dict[str, list[int]],
    stored: dict[str, Sequence[Any]],
) -> None:
    """Each passage's stored fields and field lengths, field by field in name order as add_document adds them."""
    columns = {"id": compiled.ids, **stored}
    fields = [
        (name, schema[name], columns.get(name) if schema[name].stored else None, lengths.get(name))
        for name in sorted(schema.names())
    ]
    for docnum in range(compiled.size):
        perdoc.start_doc(docnum)
        for name, field, values, counts in fields:
            perdoc.add_field(name, field, None if values is None else values[docnum], counts[docnum] if counts else 0)
        perdoc.finish_doc()


def _write_postings(fieldwriter: Any, schema: Schema, compiled: CompiledLexicon) -> None:
    """Every field's terms in byte order, each with its postings in passage order."""
    terms = _Terms(fieldwriter)
    for name in sorted(schema.names()):
        if not schema[name].indexed:
            continue
        if name in compiled.matrices:
            field = _text_field(compiled, name)
        else:
            field = _id_field(compiled.ids if name == "id" else compiled.paths)
        if not len(field.docnums):
            continue  # as in Whoosh, a field without postings gets no number
        fieldwriter.start_field(name, schema[name])  # numbers the field in the term table's field map
        blocks = _Blocks(field)
        for text, term in field.terms:
            if term in blocks.info:
                terms.add(fieldwriter._fieldid, text, blocks, term)
        terms.flush()
        fieldwriter.finish_field()


class _Field(NamedTuple):
    """One field's postings by term (a CSC layout: term ``t`` holds ``docnums[indptr[t]:indptr[t + 1]]``)."""

    terms: list[tuple[bytes, int]]  # each term's bytes and index, in byte order
    indptr: np.ndarray
    docnums: np.ndarray
    weights: np.ndarray
    values: bytes | None  # fixed-size values, one after another (``None``: the format keeps none)
    codes: np.ndarray | None  # each passage's length byte (``None``: the field keeps no lengths)


def _text_field(compiled: CompiledLexicon, name: str) -> _Field:
    """A text field: its term frequencies as weights and as Frequency's values (big-endian uints)."""
    matrix = compiled.matrices[name]
    terms = sorted((term.encode(), column) for term, column in compiled.terms.items())
    values = matrix.data.astype(">u4").tobytes()
    return _Field(terms, matrix.indptr, matrix.indices, matrix.data, values, length_bytes(compiled.exact[name]))


def _id_field(values: list[str]) -> _Field:
    """An untokenized field: one term per distinct value, holding the passages with that value."""
    holders: dict[bytes, list[int]] = {}
    for docnum, value in enumerate(values):
        holders.setdefault(value.encode(), []).append(docnum)
    texts = sorted(holders)
    indptr = np.cumsum([0, *(len(holders[text]) for text in texts)])
    docnums = np.asarray([docnum for text in texts for docnum in holders[text]], dtype=np.int64)
    return _Field([(text, n) for n, text in enumerate(texts)], indptr, docnums, np.ones(len(docnums)), None, None)


class _Blocks:
    """Every block of a field (up to ``BLOCK_LIMIT`` postings of one term) with the statistics
    ``W3PostingsWriter`` keeps for it, and each term's ``W3TermInfo`` bytes, computed at once.

    Term ``t`` has blocks ``first[t]:first[t + 1]``; ``info`` holds the terms with postings.
    """

    def __init__(self, field: _Field) -> None:
        docnums, size = field.docnums, len(field.docnums)
        counts = np.diff(field.indptr)
        within = np.arange(size) - np.repeat(field.indptr[:-1], counts)  # each posting's place in its term
        starts = np.flatnonzero(within % BLOCK_LIMIT == 0)
        ends = np.append(starts[1:], size).astype(np.int64)
        first = np.concatenate([[0], np.cumsum(-(-counts // BLOCK_LIMIT))])
        deltas = np.diff(docnums, prepend=0)
        deltas[starts] = docnums[starts]  # each block's first id is whole, the rest are gaps
        stored = field.weights.astype(np.float32)  # as the block keeps them
        codes = field.codes[docnums] if field.codes is not None else np.zeros(size, dtype=np.int64)
        blocks = {
            "heaviest": np.maximum.reduceat(field.weights, starts),
            "sums": np.add.reduceat(stored.astype(float), starts),
            "shortest": _nonzero_minimum(codes, starts),  # 0: no length
            "longest": np.maximum.reduceat(codes, starts),
        }
        self.info = _term_infos(field, counts, first, blocks)
        self.first, self.starts, self.ends = first.tolist(), starts.tolist(), ends.tolist()
        self.deltas, self.stored, self.values = deltas.tolist(), stored.tolist(), field.values
        self.last_ids = docnums[ends - 1].tolist()
        self.heaviest, self.shortest = blocks["heaviest"].tolist(), blocks["shortest"].tolist()
        self.longest = blocks["longest"].tolist()
        self.uniform = (np.minimum.reduceat(stored, starts) == np.maximum.reduceat(stored, starts)).tolist()

    def data(self, block: int) -> bytes:
        """The block uncompressed: its info tuple, then its ids, weights and values tuple, both pickled."""
        start, end = self.starts[block], self.ends[block]
        stored = self.stored[start:end]
        weights = (None if stored[0] == 1.0 else stored[0]) if self.uniform[block] else tuple(stored)
        values = None if self.values is None else self.values[4 * start : 4 * end]
        data = dumps((tuple(self.deltas[start:end]), weights, values), 2)
        lengths = (self.shortest[block], self.longest[block])
        info = dumps((end - start, self.last_ids[block], self.heaviest[block], 0, *lengths), 2)
        return info + data


def _nonzero_minimum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The smallest non-zero value from each start to the next (0 where all are 0), as ``min_length`` keeps it."""
    smallest = np.minimum.reduceat(np.where(values > 0, values, 256), starts)
    return np.where(smallest == 256, 0, smallest)


def _term_infos(
    field: _Field, counts: np.ndarray, first: np.ndarray, blocks: dict[str, np.ndarray]
) -> dict[int, bytes]:
    """Each term's ``W3TermInfo.to_bytes`` without its extent: its blocks' statistics gathered, packed at once."""
    held = np.flatnonzero(counts)
    infos = np.zeros(len(held), dtype=_TERM_INFO)
    if len(held):
        runs = first[held]  # each term's first block
        infos["weight"] = np.add.reduceat(blocks["sums"], runs)
        infos["df"] = counts[held]
        infos["shortest"] = _nonzero_minimum(blocks["shortest"], runs)
        infos["longest"] = np.maximum.reduceat(blocks["longest"], runs)
        infos["heaviest"] = np.maximum.reduceat(blocks["heaviest"], runs)
        infos["first_id"] = field.docnums[field.indptr[held]]
        infos["last_id"] = field.docnums[field.indptr[held + 1] - 1]
    packed, size = infos.tobytes(), _TERM_INFO.itemsize
    return dict(zip(held.tolist(), [packed[at : at + size] for at in range(0, len(packed), size)], strict=True))


class _Terms:
    """A field writer's postings file and term table, appended to as its writers would, a chunk at a time."""

    def __init__(self, fieldwriter: Any) -> None:
        self.postfile, self.table = fieldwriter._postfile, fieldwriter._tindex
        self.posts, self.rows = bytearray(), bytearray()
        self.posts_at, self.rows_at = self.postfile.tell(), self.table.dbfile.tell()

    def add(self, field_id: int, text: bytes, blocks: _Blocks, term: int) -> None:
        """One term: its blocks (``W3PostingsWriter``), then its row (``W3TermInfo``, ``OrderedHashWriter.add``)."""
        start = self.posts_at + len(self.posts)
        self.posts += WHOOSH3_HEADER_MAGIC
        last = blocks.first[term + 1] - 1
        for block in range(blocks.first[term], last + 1):
            data = blocks.data(block)
            self.posts += pack_int(-len(data) if block == last else len(data))  # the last one is negative
            self.posts += data
        extent = pack_long(start) + pack_int(self.posts_at + len(self.posts) - start)
        self._row(pack_ushort(field_id) + text, blocks.info[term] + extent)
        if len(self.posts) > FLUSH_AT or len(self.rows) > FLUSH_AT:
            self.flush()

    def _row(self, key: bytes, value: bytes) -> None:
        table = self.table
        if key <= table.lastkey:
            raise ValueError(f"term keys must increase: {table.lastkey!r}..{key!r}")
        position = self.rows_at + len(self.rows)
        table.index.append(position)
        self.rows += _ROW_LENGTHS.pack(len(key), len(value))
        self.rows += key
        self.rows += value
        hashed = table.hashfn(key)
        table.buckets[hashed & 255].append((hashed, position))
        table.lastkey = key

    def flush(self) -> None:
        self.postfile.write(bytes(self.posts))
        self.table.dbfile.write(bytes(self.rows))
        self.posts_at += len(self.posts)
        self.rows_at += len(self.rows)
        self.posts.clear()
        self.rows.clear()
