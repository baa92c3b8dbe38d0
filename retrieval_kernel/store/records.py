"""The record store: the durable SQLite record every projection derives from.

Tables
------
``documents``   one row per note path: identity, content hash, metadata, revision.
``passages``    the citable passages of the current revision of each document.
``changes``     append-only change log; ``seq`` orders every add/update/delete.
``projections`` each derived index's version and high-water mark (last ``seq`` it holds).
``traces``      how each packet was built (ids, scores, decisions; no note text), by trace id.

A document's passages are replaced in the same transaction as its change-log
entry, so a reader never sees half of an old revision and half of a new one.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
import uuid
from bisect import insort
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.notes import Note, Passage
from ..errors import CorruptStoreError, RefreshTimeoutError, StoreError

SCHEMA_VERSION = 3  # 2: note facts; 3: a notebook passage's cell
DATABASE_NAME = "records.sqlite3"
MAX_TRACES = 1_000  # the newest traces kept; older ones are pruned on write

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    path TEXT PRIMARY KEY,
    module TEXT NOT NULL,
    title TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    observed_at TEXT,
    revision INTEGER NOT NULL,
    indexed_at TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    facts TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS passages (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL REFERENCES documents(path),
    ordinal INTEGER NOT NULL,
    module TEXT NOT NULL,
    heading TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    cell TEXT
);
CREATE INDEX IF NOT EXISTS passages_by_path ON passages(path);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('add', 'update', 'delete')),
    sha256 TEXT,
    revision INTEGER NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS projections (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    high_water INTEGER NOT NULL,
    built_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, body TEXT NOT NULL);
"""


@dataclass(frozen=True)
class StoredDocument:
    """A document row as the store holds it."""

    path: str
    module: str
    title: str
    sha256: str
    size: int
    mtime_ns: int
    metadata: dict[str, Any]
    observed_at: str | None
    revision: int
    indexed_at: str
    facts: NoteFacts = field(default_factory=NoteFacts)


@dataclass(frozen=True)
class StoredPassage:
    """A passage joined with the document facts a packet needs."""

    passage: Passage
    observed_at: str | None
    indexed_at: str
    metadata: dict[str, Any]
    revision: int
    facts: NoteFacts = field(default_factory=NoteFacts)
    source_sha256: str = ""  # of the note's bytes this revision was read from ("" until the next sync re-reads it)


@dataclass(frozen=True)
class ProjectionState:
    """Version and high-water mark of one derived projection."""

    name: str
    version: int
    high_water: int
    built_at: str


def utc_now() -> str:
    """The current UTC time, ISO 8601 with seconds and a ``Z``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_deadline(deadline: float | None, doing: str) -> None:
    """Raise ``RefreshTimeoutError`` once ``time.monotonic()`` is past ``deadline``."""
    if deadline is not None and time.monotonic() > deadline:
        raise RefreshTimeoutError(f"the refresh ran past its time limit while {doing}")


PASSAGE_CACHE_LIMIT = 20_000
IN_LIST_KEYS = 500  # keys per "IN (...)" list in one statement (well under SQLite's variable limit)
_PASSAGE_ROWS = (
    "SELECT p.id, p.path, p.module, p.heading, p.heading_path, p.line_start, p.line_end, "
    "p.text, p.sha256, d.observed_at, d.indexed_at, d.metadata, d.revision, d.facts, d.sha256, p.ordinal, "
    "p.cell FROM passages p JOIN documents d ON d.path = p.path WHERE {clause} ORDER BY p.path, p.ordinal"
)
DECODED_FACTS_LIMIT = 200_000  # notes whose decoded facts are kept (then started afresh)
PATCH_LIMIT = 256  # changed notes past which views of every note are built again rather than patched
# How a write begins, is undone and ends: on its own, or inside a batch's transaction
_TRANSACTION = ("BEGIN IMMEDIATE", ("ROLLBACK",), "COMMIT")
_SAVEPOINT = ("SAVEPOINT write", ("ROLLBACK TO write", "RELEASE write"), "RELEASE write")


class RecordStore:
    """SQLite-backed record store living in ``store_dir``."""

    def __init__(self, store_dir: Path) -> None:
        self.store_dir = store_dir
        self.path = store_dir / DATABASE_NAME
        self.read_only = False
        # passages by id with their (path, ordinal), valid while the change log ends at _cached_at
        self._cached: dict[str, tuple[tuple[str, int], StoredPassage]] = {}
        self._cached_at = -1
        self._parsed_documents: dict[str, tuple[tuple[Any, ...], StoredDocument]] = {}  # path -> (row, parsed)
        # path -> its metadata and facts as stored (JSON) and decoded: a note's passages decode them once
        self._decoded_facts: dict[str, tuple[str, str, dict[str, Any], NoteFacts]] = {}
        self._module_of: dict[str, str] = {}  # live path -> its module, at _modules_at (-1: not read)
        self._paths_of: dict[str, list[str]] = {}  # module -> the live paths with it, in path order
        self._modules: dict[str, str] = {}  # module -> the last of its paths
        self._modules_at = -1
        self._in_batch = False  # inside batch(): writes are savepoints of one transaction
        try:
            store_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: no fsync per commit; the store is derived data
            self._db.executescript(_SCHEMA)
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            if _is_read_only(exc) and self.path.exists():
                self._open_read_only(exc)
            else:
                raise self.corrupt(exc) from exc
        except OSError as exc:
            raise StoreError(f"cannot open the record store at {self.path}: {exc}") from exc
        self._check_integrity()

    def _open_read_only(self, why: sqlite3.Error) -> None:
        """Serve an existing store that cannot be written (read-only folder or disk): queries still answer."""
        for options in ("mode=ro", "mode=ro&immutable=1"):
            try:
                self._db = sqlite3.connect(f"{self.path.absolute().as_uri()}?{options}", uri=True, isolation_level=None)
                self._check_schema()
            except sqlite3.DatabaseError:
                continue
            self.read_only = True
            return
        raise StoreError(f"cannot open the record store at {self.path}: {why}")

    def _check_integrity(self) -> None:
        try:
            problems = [row[0] for row in self._db.execute("PRAGMA quick_check").fetchall()]
        except sqlite3.DatabaseError as exc:
            raise self.corrupt(exc) from exc
        if problems != ["ok"]:
            raise self.corrupt("; ".join(problems[:3]))

    def corrupt(self, why: object) -> CorruptStoreError:
        """The error for a damaged store file: it names the file and the recovery command."""
        return CorruptStoreError(
            f"the record store {self.path} is damaged ({why}). Nothing in your notes is lost: "
            "run `retrieval-kernel rebuild NOTES_DIR` to set it aside and rebuild everything from the notes"
        )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_schema(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) in (1, 2):
            self._migrate(int(row[0]))
        elif int(row[0]) != SCHEMA_VERSION:
            raise CorruptStoreError(
                f"the record store {self.path} has schema {row[0]}, this version reads {SCHEMA_VERSION}: "
                "run `retrieval-kernel rebuild NOTES_DIR` to rebuild it from the notes"
            )

    def _migrate(self, version: int) -> None:
        """Add note facts (from 1) and cells (from 2); clearing the stored hash makes the next sync
        parse every note again (facts gained fields: partial supersession, requires)."""
        with self.transaction() as db:
            if version == 1:
                db.execute("ALTER TABLE documents ADD COLUMN facts TEXT NOT NULL DEFAULT '{}'")
            db.execute("ALTER TABLE passages ADD COLUMN cell TEXT")
            db.execute("UPDATE documents SET sha256 = '', size = -1")
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all.

        Inside :meth:`batch` it is a savepoint of the batch's transaction (undone alone on failure).
        A database error (read-only file, full disk, lock timeout) becomes ``StoreError``.
        """
        begin, undo, end = _SAVEPOINT if self._in_batch else _TRANSACTION
        try:
            if self._in_batch and not self._db.in_transaction:
                self._db.execute("BEGIN IMMEDIATE")  # the batch's transaction, at its first write
            self._db.execute(begin)
            try:
                yield self._db
            except BaseException:
                for statement in undo:
                    self._db.execute(statement)
                raise
            self._db.execute(end)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the record store at {self.path}: {exc}") from exc

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Commit the writes inside together (one commit instead of one per note).

        Each write stays all-or-nothing, and every write that finished is committed when the
        block ends, also when an exception (a deadline) ends it; a kill loses the batch's writes.
        The transaction begins at the first write: a batch that writes nothing takes no lock.
        """
        if self._in_batch:
            yield
            return
        self._in_batch = True
        try:
            yield
        finally:
            self._in_batch = False
            self._end_batch()

    def _end_batch(self) -> None:
        try:
            if self._db.in_transaction:
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"cannot write the record store at {self.path}: {exc}") from exc

    # ------------------------------------------------------------ documents

    def documents(self, paths: Iterable[str] | None = None) -> dict[str, StoredDocument]:
        """Every live document (or those at ``paths``), keyed by path.

        A row read before, unchanged, gives the same parsed document (its JSON is not decoded again).
        """
        columns = "path, module, title, sha256, size, mtime_ns, metadata, observed_at, revision, indexed_at, facts"
        if paths is None:
            rows = self._db.execute(f"SELECT {columns} FROM documents WHERE deleted = 0 ORDER BY path").fetchall()
        else:
            wanted = sorted(set(paths))
            query = f"SELECT {columns} FROM documents WHERE deleted = 0 AND path IN ({{marks}}) ORDER BY path"
            rows = list(self._rows_in(query, wanted))
        parsed = {row[0]: (row, self._parsed(row)) for row in rows}
        if paths is None:
            self._parsed_documents = parsed  # bounded by the live documents
        else:
            for path in wanted:
                self._parsed_documents.pop(path, None)  # gone, or replaced just below
            self._parsed_documents.update(parsed)
        return {path: document for path, (_, document) in parsed.items()}

    def _parsed(self, row: tuple[Any, ...]) -> StoredDocument:
        known = self._parsed_documents.get(row[0])
        return known[1] if known is not None and known[0] == row else self._document(row)

    def _document(self, row: tuple[Any, ...]) -> StoredDocument:
        metadata, facts = self._note_facts(row[0], row[6], row[10])
        return StoredDocument(
            path=row[0],
            module=row[1],
            title=row[2],
            sha256=row[3],
            size=row[4],
            mtime_ns=row[5],
            metadata=metadata,
            observed_at=row[7],
            revision=row[8],
            indexed_at=row[9],
            facts=facts,
        )

    def modules(self) -> dict[str, str]:
        """Each live document's module (its id) mapped to its path (of two notes with one id, the later by
        path); kept between calls, and read again only for the notes the change log names since."""
        newest = self.high_water()
        changed = self.changed_between(self._modules_at, newest)
        self._modules_at = -1  # until the tables below are whole
        if changed is None:
            self._module_of, self._paths_of, self._modules = {}, {}, {}
            rows = self._db.execute("SELECT path, module FROM documents WHERE deleted = 0 ORDER BY path").fetchall()
        else:
            for path in changed & self._module_of.keys():
                self._unindex_module(path)
            marks = ",".join("?" * len(changed))
            query = f"SELECT path, module FROM documents WHERE deleted = 0 AND path IN ({marks}) ORDER BY path"
            rows = self._db.execute(query, tuple(changed)).fetchall() if changed else []
        for path, module in rows:
            self._module_of[path] = module
            insort(self._paths_of.setdefault(module, []), path)  # rows in path order: mostly an append
            self._modules[module] = self._paths_of[module][-1]
        self._modules_at = newest
        return dict(self._modules)

    def _unindex_module(self, path: str) -> None:
        module = self._module_of.pop(path)
        paths = self._paths_of[module]
        paths.remove(path)
        if paths:
            self._modules[module] = paths[-1]
        else:
            del self._paths_of[module], self._modules[module]

    def upsert(self, note: Note, size: int, mtime_ns: int, indexed_at: str) -> int:
        """Store a new or changed note with its passages; return the change ``seq``."""
        with self.transaction() as db:
            previous = db.execute("SELECT revision, deleted FROM documents WHERE path = ?", (note.path,)).fetchone()
            kind = "add" if previous is None or previous[1] else "update"
            revision = 1 if previous is None else previous[0] + 1
            db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
                (
                    note.path,
                    note.module,
                    note.title,
                    note.sha256,
                    size,
                    mtime_ns,
                    json.dumps(dict(note.metadata), sort_keys=True),
                    note.observed_at,
                    revision,
                    indexed_at,
                    json.dumps(note.facts.to_dict(), sort_keys=True),
                ),
            )
            db.execute("DELETE FROM passages WHERE path = ?", (note.path,))
            db.executemany(
                "INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_passage_row(p, ordinal) for ordinal, p in enumerate(note.passages)],
            )
            return _log(db, note.path, kind, note.sha256, revision, indexed_at)

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new stat for unchanged content (no new revision)."""
        with self.transaction() as db:
            db.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path))

    def delete(self, path: str, at: str) -> int:
        """Tombstone a document and drop its passages; return the change ``seq``."""
        with self.transaction() as db:
            revision = db.execute("SELECT revision FROM documents WHERE path = ?", (path,)).fetchone()[0]
            db.execute("UPDATE documents SET deleted = 1 WHERE path = ?", (path,))
            db.execute("DELETE FROM passages WHERE path = ?", (path,))
            return _log(db, path, "delete", None, revision, at)

    # ------------------------------------------------------------ passages

    def passages(self, ids: Iterable[str] | None = None) -> dict[str, StoredPassage]:
        """Passages (all, or those with ``ids``) joined with their document facts."""
        if ids is None:
            return {sp.passage.id: sp for sp in self._passages_where("1", ())}
        wanted = list(dict.fromkeys(ids))
        cache = self._passage_cache()
        missing = [pid for pid in wanted if pid not in cache]
        query = _PASSAGE_ROWS.format(clause="p.id IN ({marks})")
        cache.update((row[0], ((row[1], row[15]), self._stored_passage(row))) for row in self._rows_in(query, missing))
        found = sorted(cache[pid] for pid in wanted if pid in cache)  # by path and position, as the store reads them
        return {stored.passage.id: stored for _, stored in found}

    def _passage_cache(self) -> dict[str, tuple[tuple[str, int], StoredPassage]]:
        """Passages read before, less those of notes changed since (the same ids come back query after query)."""
        newest = self.high_water()
        if newest != self._cached_at or len(self._cached) > PASSAGE_CACHE_LIMIT:
            changed = (
                self.changed_between(self._cached_at, newest) if len(self._cached) <= PASSAGE_CACHE_LIMIT else None
            )
            kept = {} if changed is None else {pid: e for pid, e in self._cached.items() if e[0][0] not in changed}
            self._cached, self._cached_at = kept, newest
        return self._cached

    def passages_of(self, path: str) -> list[Passage]:
        """The current passages of one document, in document order."""
        return self._bare_passages("WHERE path = ?", (path,))

    def all_passages(self) -> list[Passage]:
        """Every current passage by path and position, without its document's facts (nothing to decode)."""
        return self._bare_passages("", ())

    def _bare_passages(self, where: str, args: tuple[Any, ...]) -> list[Passage]:
        rows = self._db.execute(
            "SELECT id, path, module, heading, heading_path, line_start, line_end, text, sha256, cell "
            f"FROM passages {where} ORDER BY path, ordinal",
            args,
        )
        return [_passage(row[:9], row[9]) for row in rows]

    def outlines(self, paths: Iterable[str]) -> dict[str, tuple[tuple[str, ...], ...]]:
        """The heading paths of the current passages of each document at ``paths``, in document order
        (a path with no passages maps to ``()``); read in batches, heading paths only."""
        wanted = list(dict.fromkeys(paths))
        found: dict[str, list[tuple[str, ...]]] = {path: [] for path in wanted}
        query = "SELECT path, heading_path FROM passages WHERE path IN ({marks}) ORDER BY path, ordinal"
        for path, heading_path in self._rows_in(query, wanted):
            found[path].append(tuple(json.loads(heading_path)))
        return {path: tuple(heads) for path, heads in found.items()}

    def _passages_where(self, clause: str, args: tuple[Any, ...]) -> list[StoredPassage]:
        return [self._stored_passage(row) for row in self._rows_where(clause, args)]

    def _stored_passage(self, row: tuple[Any, ...]) -> StoredPassage:
        """A passage row (``_PASSAGE_ROWS``) with its note's facts (decoded once: :meth:`_note_facts`)."""
        metadata, facts = self._note_facts(row[1], row[11], row[13])
        return StoredPassage(
            passage=_passage(row[:9], row[16]),
            observed_at=row[9],
            indexed_at=row[10],
            metadata=metadata,
            revision=row[12],
            facts=facts,
            source_sha256=row[14],
        )

    def _note_facts(self, path: str, metadata_json: str, facts_json: str) -> tuple[dict[str, Any], NoteFacts]:
        """A note's metadata and facts from their stored JSON, decoded once while it is unchanged: a query
        reads some ninety passages, most of them of notes read before, and documents read the same."""
        decoded = self._decoded_facts.get(path)
        if decoded is None or decoded[0] != metadata_json or decoded[1] != facts_json:
            if len(self._decoded_facts) > DECODED_FACTS_LIMIT:
                self._decoded_facts.clear()
            metadata, facts = json.loads(metadata_json), NoteFacts.from_dict(json.loads(facts_json))
            decoded = self._decoded_facts[path] = (metadata_json, facts_json, metadata, facts)
        return decoded[2], decoded[3]

    def _rows_where(self, clause: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._db.execute(_PASSAGE_ROWS.format(clause=clause), args).fetchall()

    def _rows_in(self, query: str, keys: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``query`` for ``keys``: its ``{marks}`` becomes an IN list, ``IN_LIST_KEYS`` keys at a time."""
        for start in range(0, len(keys), IN_LIST_KEYS):
            batch = tuple(keys[start : start + IN_LIST_KEYS])
            yield from self._db.execute(query.format(marks=",".join("?" * len(batch))), batch)

    def passage_ids_of(self, paths: Iterable[str]) -> dict[str, frozenset[str]]:
        """The ids of every current passage of each document at ``paths`` that has some, by path."""
        found: dict[str, set[str]] = {}
        for pid, path in self._rows_in("SELECT id, path FROM passages WHERE path IN ({marks})", sorted(set(paths))):
            found.setdefault(path, set()).add(pid)
        return {path: frozenset(ids) for path, ids in found.items()}

    def passage_ids_with_hash_prefix(self, prefix: str) -> list[str]:
        """Ids of passages whose content sha256 starts with ``prefix`` (lower-case hex)."""
        rows = self._db.execute(
            "SELECT id FROM passages WHERE substr(sha256, 1, ?) = ? ORDER BY path, ordinal", (len(prefix), prefix)
        )
        return [row[0] for row in rows]

    def passage_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM passages").fetchone()[0])

    # ------------------------------------------------------------ change log and projections

    def high_water(self) -> int:
        """The newest change-log sequence number (0 for an empty log)."""
        return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])

    def changes_since(self, seq: int) -> list[tuple[int, str, str]]:
        """``(seq, path, kind)`` of every change after ``seq``, oldest first."""
        return self._db.execute("SELECT seq, path, kind FROM changes WHERE seq > ? ORDER BY seq", (seq,)).fetchall()

    def changed_paths(self, since: int, limit: int = PATCH_LIMIT) -> set[str] | None:
        """The notes the change log names after ``since``; ``None`` when they are more than ``limit``
        (then what is derived from every note is derived again rather than patched)."""
        rows = self._db.execute(
            "SELECT DISTINCT path FROM changes WHERE seq > ? LIMIT ?", (since, limit + 1)
        ).fetchall()
        return None if len(rows) > limit else {row[0] for row in rows}

    def changed_between(self, at: int, newest: int) -> set[str] | None:
        """The notes changed after ``at`` (up to ``newest`` or later): what a cache read at ``at`` must drop;
        ``None`` (drop everything) when ``at`` is unknown (negative) or after ``newest``, or they are many."""
        return self.changed_paths(at) if 0 <= at <= newest else None

    def projection(self, name: str) -> ProjectionState | None:
        row = self._db.execute(
            "SELECT name, version, high_water, built_at FROM projections WHERE name = ?", (name,)
        ).fetchone()
        return ProjectionState(*row) if row else None

    # ------------------------------------------------------------ traces

    def save_trace(self, trace_id: str, body: dict[str, Any], at: str) -> None:
        """Keep how a packet was built (the newest MAX_TRACES); a failed write never fails the query."""
        try:
            with self.transaction() as db:
                db.execute("INSERT OR REPLACE INTO traces VALUES (?, ?, ?)", (trace_id, at, json.dumps(body)))
                db.execute("DELETE FROM traces WHERE rowid <= (SELECT MAX(rowid) FROM traces) - ?", (MAX_TRACES,))
        except StoreError:
            pass  # a read-only store still answers; the trace is simply not kept

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT body FROM traces WHERE id = ?", (trace_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def store_identity(self) -> str:
        """This store's permanent random identity, made on first use.

        Remote projections (a Chroma server's collections) carry it, so a collection
        built from another record store is recognised and never mixed in.
        """
        row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is None:
            with self.transaction() as db:
                db.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,))
            row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(row[0])

    def set_projection(self, state: ProjectionState) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO projections VALUES (?, ?, ?, ?)",
                (state.name, state.version, state.high_water, state.built_at),
            )


def _is_read_only(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _log(db: sqlite3.Connection, path: str, kind: str, sha256: str | None, revision: int, at: str) -> int:
    cursor = db.execute(
        "INSERT INTO changes (path, kind, sha256, revision, at) VALUES (?, ?, ?, ?, ?)",
        (path, kind, sha256, revision, at),
    )
    return int(cursor.lastrowid or 0)


def _passage_row(passage: Passage, ordinal: int) -> tuple[Any, ...]:
    return (
        passage.id,
        passage.path,
        ordinal,
        passage.module,
        passage.heading,
        json.dumps(list(passage.heading_path)),
        passage.line_start,
        passage.line_end,
        passage.text,
        passage.sha256,
        None if passage.cell_index is None else json.dumps({"id": passage.cell_id, "index": passage.cell_index}),
    )


def _passage(row: tuple[Any, ...], cell_json: str | None) -> Passage:
    """A passage from its row's first nine columns (id to sha256) and its cell column."""
    cell = json.loads(cell_json) if cell_json else {}
    return Passage(
        id=row[0],
        path=row[1],
        module=row[2],
        heading=row[3],
        heading_path=tuple(json.loads(row[4])),
        line_start=row[5],
        line_end=row[6],
        text=row[7],
        sha256=row[8],
        cell_id=cell.get("id"),
        cell_index=cell.get("index"),
    )
