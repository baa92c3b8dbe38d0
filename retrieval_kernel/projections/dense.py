"""The dense projection: passage embeddings in a Chroma collection derived from the record store.

Chroma runs embedded (``PersistentClient`` under ``STORE/dense``) or as a server
(``HttpClient``; see :mod:`retrieval_kernel.projections.chroma_client`), telemetry off either
way. Every collection call passes our own registered embedding function, so
Chroma never builds its default one (which would download a model). Vectors are
cached by passage content hash in ``STORE/embeddings.sqlite3``: re-indexing
unchanged text never re-embeds it. A rebuild writes a new versioned collection
and drops the old one only after the record store points at the new one.

The record store holds the projection's version and high-water mark; each
collection's own metadata repeats them with the record store's identity, the
collection layout and the embedding model. They are checked on connect (on the
server, before every search): a collection built from another record store, in
an older layout or version, with another model, or at another point of the
change log is never searched or written. Searching says why (the lane is
unavailable); syncing rebuilds into a new version. Collections of other record
stores are never deleted. Only vectors, passage ids, paths and note ids go to
Chroma, never note text.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..corpus.notes import Passage
from ..errors import StaleCollectionError
from ..store.progress import SILENT
from ..store.records import ProjectionState, RecordStore, utc_now
from .chroma_client import ChromaConnection, ChromaSettings, forget_embedded
from .embedding import DEFAULT_EMBEDDER, Embedder, go_offline, import_chromadb_quickly, load_embedder
from .exact import ExactVectors

NAME = "dense"
FOLDER = "dense"
CACHE_NAME = "embeddings.sqlite3"
CHROMA_DATABASE = "chroma.sqlite3"  # embedded Chroma's own database, in FOLDER
EXACT_SNAPSHOT = "exact-vectors.npz"  # beside the cache: the exact-search vectors as last read from Chroma
COLLECTION_PREFIX = "passages_v"
DENSE_FORMAT = 1  # the collection layout (ids, metadata keys, cosine space); raising it rebuilds old collections
SERVER_WRITE_BATCH = 1_000  # vectors per HTTP write: each stays well inside the request timeout
READ_PAGE = 10_000  # vectors per read when loading the exact-search matrix (embedded or over HTTP)
MAX_VERSION_SKIPS = 100  # versions tried past names that other record stores hold

# Collection metadata, checked against the record store on connect.
META_STORE = "rk_store"
META_FORMAT = "rk_format"
META_VERSION = "rk_version"
META_HIGH_WATER = "rk_high_water"
META_MODEL = "rk_model"
META_BUILT_AT = "rk_built_at"
BUILDING = -1  # high-water mark of a collection still being filled: never valid

EMBED_CHUNK = 1024  # passages embedded (and cached) per step of a long sync
EARLY_NOTES = 16  # a refresh of at most this many notes embeds early (beside the lexical sync)...
EARLY_PASSAGES = 64  # ... when they add at most this many passages the cache lacks
EXACT_SEARCH_LIMIT = 100_000  # up to this many vectors, exact numpy search beats HNSW round trips
RESAVE_SNAPSHOT_AT = 100  # notes brought forward into a snapshot past which it is saved again at the new state

T = TypeVar("T")


def __getattr__(name: str) -> Any:
    """``PassageEmbeddingFunction`` from :mod:`.chroma_function`, imported (with chromadb) when asked for."""
    if name == "PassageEmbeddingFunction":
        from .chroma_function import PassageEmbeddingFunction

        return PassageEmbeddingFunction
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _looks_like_sqlite(path: Path) -> bool:
    """Whether ``path`` exists and starts with SQLite's file header."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _chroma_errors() -> tuple[type[Exception], type[Exception]]:
    """chromadb's ``(NotFoundError, ChromaError)``, importing chromadb (the quick way) if it is not yet."""
    import_chromadb_quickly()  # under its lock: whole, whatever another thread is importing
    from chromadb.errors import ChromaError, NotFoundError

    return NotFoundError, ChromaError


def score_basis(embedder_name: str) -> str:
    return f"cosine similarity ({embedder_name}; exact up to {EXACT_SEARCH_LIMIT:,} vectors, else Chroma HNSW)"


class EmbeddingCache:
    """Vectors by (content sha256, embedder name), in SQLite beside the record store."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (sha256 TEXT, model TEXT, vector BLOB, PRIMARY KEY (sha256, model))"
        )

    def get(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            rows = self._db.execute(
                f"SELECT sha256, vector FROM vectors WHERE model = ? AND sha256 IN ({','.join('?' * len(batch))})",
                [model, *batch],
            )
            found.update((digest, np.frombuffer(blob, dtype="float32")) for digest, blob in rows)
        return found

    def put(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
            [(digest, model, vector.astype("float32").tobytes()) for digest, vector in vectors.items()],
        )
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()


@dataclass(frozen=True)
class DenseHit:
    """One passage found by the dense lane, with its cosine similarity."""

    passage_id: str
    score: float


@functools.cache
def _early_thread() -> ThreadPoolExecutor:
    """The one thread that embeds a refresh's passages early (:meth:`DenseProjection.embed_early`)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="rk-embed-early")


def _embed_batches(embedder: Embedder, batches: list[dict[str, str]]) -> dict[str, np.ndarray]:
    """Vectors by content hash of each batch's texts, one embedder call per batch."""
    return {
        digest: vector
        for batch in batches
        for digest, vector in zip(batch, embedder.embed(list(batch.values())), strict=True)
    }


def _by_score_then_id(hit: tuple[str, float]) -> tuple[float, str]:
    return -hit[1], hit[0]


def _delete_path(collection: Any, path: str) -> None:
    collection.delete(where={"path": path})


def _add_batch(collection: Any, batch: list[Passage], embeddings: np.ndarray) -> None:
    metadatas = [{"path": p.path, "module": p.module} for p in batch]
    collection.add(ids=[p.id for p in batch], embeddings=embeddings, metadatas=metadatas)


def _vector_page(collection: Any, offset: int) -> Any:
    return collection.get(include=["embeddings", "metadatas"], limit=READ_PAGE, offset=offset)


def mismatch(metadata: Mapping[str, Any] | None, expected: Mapping[str, Any]) -> str | None:
    """Why a collection with ``metadata`` cannot serve the record store's ``expected`` state (None: it can)."""
    found = dict(metadata or {})
    store, want_store = found.get(META_STORE), expected[META_STORE]
    if want_store is not None and store != want_store:
        return f"it was built from another record store ({store or 'no identity'}; this store is {want_store})"
    if found.get(META_FORMAT) != DENSE_FORMAT:
        return f"it has collection layout {found.get(META_FORMAT)}, this version reads layout {DENSE_FORMAT}"
    if found.get(META_VERSION) != expected[META_VERSION]:
        want = expected[META_VERSION]
        return f"it holds projection version {found.get(META_VERSION)}, the record store expects {want}"
    if found.get(META_MODEL) != expected[META_MODEL]:
        return f"its vectors come from {found.get(META_MODEL)}, the lane embeds with {expected[META_MODEL]}"
    if found.get(META_HIGH_WATER) != expected[META_HIGH_WATER]:
        held = found.get(META_HIGH_WATER)
        held_text = "an unfinished build" if held == BUILDING else f"changes up to #{held}"
        return f"it holds {held_text}, the record store's projection is at #{expected[META_HIGH_WATER]}"
    return None


class DenseProjection:
    """The Chroma collection of this store's passages, kept in step with the change log.

    ``chroma`` says where it lives (default: embedded under ``store_dir/dense``);
    ``store_id`` is the record store's identity, which the collection must carry.
    """

    def __init__(
        self,
        store_dir: Path,
        embedder: str | Embedder = DEFAULT_EMBEDDER,
        chroma: ChromaSettings | None = None,
        store_id: str | None = None,
    ) -> None:
        go_offline()
        self.folder = store_dir / FOLDER
        self.chroma = chroma or ChromaSettings()
        self.connection = ChromaConnection(self.chroma, self.folder)
        self.store_id = store_id
        self._kind = embedder if isinstance(embedder, str) else getattr(embedder, "name", "custom")
        self._embedder = None if isinstance(embedder, str) else embedder
        self._function: Any = None  # Chroma's view of the embedder, made when Chroma is first needed
        self._last_query: tuple[str, np.ndarray] | None = None
        self._cache_path = store_dir / CACHE_NAME
        self._cache: EmbeddingCache | None = None
        self._handles: dict[tuple[int, str], Any] = {}
        self._checked: tuple[int, ProjectionState] | None = None  # embedded: verified once per state
        self._exact: tuple[tuple[ProjectionState, str], ExactVectors] | None = None
        # Notes changed after the pointer whose new passages have no vector in memory yet (path -> the
        # first change-log entry it lacks): :meth:`advance` dropped their old vectors and awaits new ones.
        self._unembedded: dict[str, int] = {}
        self.embedded_last_sync = 0
        self.rebuilt_because: str | None = None  # why the last sync rebuilt the collection (None: it did not)
        self._early: tuple[str, Future[dict[str, np.ndarray]]] | None = None  # (model, vectors by hash) embedding
        self.progress = SILENT  # a bar while many passages are embedded (set by the workspace)

    @property
    def embedder(self) -> Embedder:
        """The embedder (loaded on first use; shared with :attr:`function`)."""
        if self._embedder is None:
            self._embedder = load_embedder(self._kind)
        return self._embedder

    @property
    def function(self) -> Any:
        """The registered embedding function every collection call passes (imports chromadb)."""
        if self._function is None:
            from .chroma_function import PassageEmbeddingFunction

            self._function = PassageEmbeddingFunction(self._kind, self.embedder)
        return self._function

    @property
    def embedder_name(self) -> str:
        return self.embedder.name

    def collection_name(self, version: int) -> str:
        return f"{self.chroma.prefix}{COLLECTION_PREFIX}{version}"

    def where(self) -> str:
        return "embedded Chroma" if self.chroma.embedded else f"the Chroma server {self.chroma.describe()}"

    # ------------------------------------------------------------ building

    def sync(self, records: RecordStore) -> ProjectionState:
        """Apply every change after this projection's high-water mark (rebuild if it is missing or stale)."""
        self.store_id = records.store_identity()
        state = records.projection(NAME)
        self.embedded_last_sync = 0
        self.rebuilt_because = None
        if state is None:
            return self.rebuild(records, version=1)
        collection, problem = self._open_checked(state)
        if collection is None or problem is not None:
            self.rebuilt_because = problem
            return self.rebuild(records, version=state.version + 1)
        changes = records.changes_since(state.high_water)
        if not changes:
            if META_STORE not in (collection.metadata or {}):
                self._stamp(collection, state)  # an embedded collection from before metadata: adopt it
            return state
        paths = sorted({path for _, path, _ in changes})
        added: list[Passage] = []
        vectors: dict[str, np.ndarray] = {}
        for path in paths:
            self._on(collection, "remove changed passages", partial(_delete_path, path=path))
            passages = records.passages_of(path)
            vectors.update(self._add(collection, passages))
            added.extend(passages)
        new_state = ProjectionState(NAME, state.version, changes[-1][0], utc_now())
        self._stamp(collection, new_state)
        records.set_projection(new_state)
        self._patch_exact(state, new_state, collection, paths, added, vectors)
        return new_state

    def _patch_exact(
        self,
        old: ProjectionState,
        new: ProjectionState,
        collection: Any,
        paths: list[str],
        added: list[Passage],
        vectors: dict[str, np.ndarray],
    ) -> None:
        """Carry the in-memory vectors over to ``new`` in place (no reload) when they were ``old``'s (or
        ahead of it: :meth:`advance` brought them forward)."""
        if self._exact is None or not self._exact_serves(old, str(collection.id)):
            return
        (held, _), exact = self._exact
        rows = np.stack([vectors[p.sha256] for p in added]) if added else np.zeros((0, exact.matrix.shape[1]))
        exact.replace_notes(paths, [p.id for p in added], [p.path for p in added], rows)
        for path in paths:
            self._unembedded.pop(path, None)
        at = new if held.high_water <= new.high_water else replace(new, high_water=held.high_water)
        self._exact = ((at, str(collection.id)), exact)
        if self.chroma.embedded and self._checked == (self.connection.generation, old):
            self._checked = (self.connection.generation, new)  # stamped just now, by this process

    def rebuild(self, records: RecordStore, version: int) -> ProjectionState:
        """Build a new collection version from the record store, then switch to it."""
        self.store_id = records.store_identity()
        version = self._free_version(version)
        name = self.collection_name(version)
        state = ProjectionState(NAME, version, records.high_water(), utc_now())
        self._delete(name)  # a leftover of ours under this name (an unfinished build) is replaced
        building = {**self._metadata(state), META_HIGH_WATER: BUILDING}
        collection = self.connection.call(
            f"create the collection {name}",
            lambda client: client.create_collection(
                name, embedding_function=self.function, configuration={"hnsw": {"space": "cosine"}}, metadata=building
            ),
        )
        self._handles[(self.connection.generation, name)] = collection
        passages = [stored.passage for stored in records.passages().values()]
        vectors = self._add(collection, passages)
        self._stamp(collection, state)
        records.set_projection(state)
        self._drop_old_versions(keep=name)
        self._unembedded = {}  # the build embedded every passage: no note waits for its vectors
        self._keep_built(state, collection, passages, vectors)
        return state

    def _keep_built(
        self, state: ProjectionState, collection: Any, passages: list[Passage], vectors: dict[str, np.ndarray]
    ) -> None:
        """The vectors just written, kept as the exact-search form at ``state`` and as its snapshot, so
        neither this process nor the next reads them back from Chroma (seconds at 10,000 passages)."""
        if not passages or len(passages) > EXACT_SEARCH_LIMIT:
            return
        matrix = np.stack([vectors[p.sha256] for p in passages]).astype("float32")
        exact = ExactVectors([p.id for p in passages], [p.path for p in passages], matrix)
        key = (state, str(collection.id))
        self._save_exact(key, exact)
        self._exact = (key, exact)

    def _add(self, collection: Any, passages: list[Passage]) -> dict[str, np.ndarray]:
        """Add ``passages`` with their vectors; returns the vectors by content hash."""
        if not passages:
            return {}
        vectors = self.vectors_for(passages)
        largest = self.connection.call("read the batch size", lambda client: client.get_max_batch_size())
        step = max(1, min(5000 if self.chroma.embedded else SERVER_WRITE_BATCH, largest))
        for start in range(0, len(passages), step):
            batch = passages[start : start + step]
            embeddings = np.stack([vectors[p.sha256] for p in batch])
            self._on(collection, "add vectors", partial(_add_batch, batch=batch, embeddings=embeddings))
        return vectors

    def embed_changes(self, records: RecordStore) -> None:
        """Embed, into the cache, the passages of the notes changed since this projection's high-water mark."""
        state = records.projection(NAME)
        paths = records.changed_paths(state.high_water) if state is not None else None
        if paths:
            self.vectors_for([passage for path in sorted(paths) for passage in records.passages_of(path)])

    def embed_early(self, records: RecordStore) -> None:
        """Start embedding, on a thread of its own, the few passages the next :meth:`sync` will add that the
        cache lacks (a refresh after an edit), so the embedding overlaps the lexical sync; the sync takes them.
        Note by note, as the sync would embed them (an embedder that batches gives the same vectors)."""
        state = records.projection(NAME)
        paths = records.changed_paths(state.high_water, EARLY_NOTES) if state is not None else None
        if not paths:
            return
        of_note = [records.passages_of(path) for path in sorted(paths)]
        model = self.embedder_name  # loads the model here, not on the thread
        seen = set(self._get_cache().get(model, [p.sha256 for passages in of_note for p in passages]))
        batches = []
        for passages in of_note:
            batch = {p.sha256: p.text for p in passages if p.sha256 not in seen}
            seen.update(batch)
            batches += [batch] if batch else []
        if batches and sum(map(len, batches)) <= EARLY_PASSAGES:
            self._early = (model, _early_thread().submit(_embed_batches, self.embedder, batches))

    def _embedded_early(self, model: str, wanted: Collection[str]) -> dict[str, np.ndarray]:
        """The vectors of ``wanted`` hashes that :meth:`embed_early` made (waiting for them); none if it failed."""
        if self._early is None or self._early[0] != model:
            return {}
        try:
            made = self._early[1].result()
        except Exception:  # embedded again by the caller, where a failure is reported
            made = {}
        taken = {digest: made.pop(digest) for digest in wanted if digest in made}
        if not made:
            self._early = None
        return taken

    def vectors_for(self, passages: Sequence[Passage]) -> dict[str, np.ndarray]:
        """Vectors by content hash: from the cache, embedding only what it lacks."""
        cache = self._get_cache()
        model = self.embedder_name
        vectors = cache.get(model, [p.sha256 for p in passages])
        missing = list({p.sha256: p.text for p in passages if p.sha256 not in vectors}.items())
        early = self._embedded_early(model, dict(missing)) if self._early is not None else {}
        if early:
            cache.put(model, early)
            vectors.update(early)
            self.embedded_last_sync += len(early)
            missing = [(digest, text) for digest, text in missing if digest not in early]
        with self.progress.track("embedding passages", len(missing), "passage") as step:
            for start in range(0, len(missing), EMBED_CHUNK):  # cached chunk by chunk: a kill keeps what is done
                chunk = dict(missing[start : start + EMBED_CHUNK])
                new = dict(zip(chunk, self.embedder.embed(list(chunk.values())), strict=True))
                cache.put(model, new)
                vectors.update(new)
                self.embedded_last_sync += len(new)
                step(len(new))
        return vectors

    # ------------------------------------------------------------ searching

    def embed_query(self, text: str) -> np.ndarray:
        """The question's vector; the last one is kept, so the judge reads the vector the search used."""
        last = self._last_query
        if last is None or last[0] != text:
            last = self._last_query = (text, self.embedder.embed([text])[0])
        return last[1]

    def search(
        self, text: str, limit: int, state: ProjectionState, records: RecordStore | None = None
    ) -> list[DenseHit]:
        """Top ``limit`` passages by cosine similarity; ties broken by passage id."""
        return self.search_vector(self.embed_query(text), limit, state, records)

    def search_vector(
        self, vector: np.ndarray, limit: int, state: ProjectionState, records: RecordStore | None = None
    ) -> list[DenseHit]:
        """Exact cosine over the collection's vectors when it is small enough, else Chroma's HNSW
        (``records``: lets a snapshot of an earlier state be brought forward instead of read again)."""
        exact = self._exact_from_snapshot(state, records)
        if exact is None:
            collection = self._checked_collection(state)
            exact = self._exact_matrix(state, collection, records)
        if exact is None:
            hits = self._hnsw(collection, vector, limit)
            return sorted(hits, key=lambda hit: (-hit.score, hit.passage_id))[:limit]
        ranked = sorted(exact.search(vector, limit), key=_by_score_then_id)[:limit]
        return [DenseHit(pid, score) for pid, score in ranked]  # made for the kept hits only

    def search_hnsw(self, vector: np.ndarray, limit: int, state: ProjectionState) -> list[DenseHit]:
        """Chroma's own HNSW search whatever the collection's size (what answers past EXACT_SEARCH_LIMIT)."""
        hits = self._hnsw(self._checked_collection(state), vector, limit)
        return sorted(hits, key=lambda hit: (-hit.score, hit.passage_id))[:limit]

    def _hnsw(self, collection: Any, vector: np.ndarray, limit: int) -> list[DenseHit]:
        count = self._on(collection, "count vectors", lambda c: c.count())
        if count == 0:
            return []
        result = self._on(
            collection,
            "query",
            lambda c: c.query(query_embeddings=[vector], n_results=min(limit, count), include=["distances"]),
        )
        return [
            DenseHit(passage_id, round(1.0 - float(distance), 6))
            for passage_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    def _exact_matrix(
        self, state: ProjectionState, collection: Any, records: RecordStore | None = None
    ) -> ExactVectors | None:
        """The collection's vectors in memory: read once per state, carried over in place by :meth:`sync`.

        Embedded, what a read from Chroma gave is also kept in :data:`EXACT_SNAPSHOT` (tagged with
        the state and the collection), so a new process at the same state loads it instead of
        reading every vector back from Chroma (a second of a first query at 10,000 passages, 20 s
        at 100,000); at a later state of the same collection, it loads it and brings it forward.
        """
        key = (state, str(collection.id))
        if self._exact is not None and self._exact_serves(state, key[1]):
            return self._exact[1]
        self._unembedded = {}
        loaded = self._load_exact(state, key[1], records)
        exact = loaded[1] if loaded else None
        if exact is None:
            count = self._on(collection, "count vectors", lambda c: c.count())
            if count > EXACT_SEARCH_LIMIT:
                return None
            ids, paths, rows = self._all_vectors(collection, count)
            dimension = self.embedder.dimension
            exact = ExactVectors(ids, paths, np.asarray(rows, dtype="float32").reshape(len(ids), dimension))
            self._save_exact(key, exact)
        self._exact = (key, exact)
        return exact

    def _exact_from_snapshot(self, state: ProjectionState, records: RecordStore | None) -> ExactVectors | None:
        """Embedded, before this process has opened Chroma: the vectors in memory when they serve
        ``state``, else the snapshot read at ``state`` (or brought forward to it), without opening Chroma.

        The snapshot's tag names the record store, version, change-log position and build time of the
        vectors it holds, so it answers for the state by itself; it is taken only while Chroma's own
        database file is there and looks like one (a deleted or overwritten folder is found by opening
        it, as before), and its collection is verified when Chroma is first opened (a sync, a check):
        vectors of another collection are then read again. ``None``: open Chroma.
        """
        if not self.chroma.embedded or self._checked is not None:
            return None
        if self._exact is not None:
            return self._exact[1] if self._exact_serves(state, self._exact[0][1]) else None
        if not _looks_like_sqlite(self.folder / CHROMA_DATABASE):
            return None
        self._unembedded = {}
        loaded = self._load_exact(state, None, records)
        if loaded is None:
            return None
        self._exact = loaded
        return loaded[1]

    def _exact_serves(self, state: ProjectionState, collection_id: str) -> bool:
        """Whether the vectors in memory answer for ``state``: read at it, or at the same version and
        collection and brought forward to or past it (:meth:`advance`; then a sync, perhaps another
        workspace's, published it with its own time)."""
        assert self._exact is not None
        held, held_id = self._exact[0]
        return held_id == collection_id and held.version == state.version and held.high_water >= state.high_water

    def advance(self, records: RecordStore) -> bool:
        """Bring the in-memory exact-search vectors up to the record store, leaving Chroma behind.

        Each changed note's old vectors go; its passages' new vectors come from the embedding
        cache when it has them. Passages it lacks stay out of the lane (:meth:`lagging` names
        their notes) until a later call finds their vectors, which the deferred :meth:`sync`
        embeds. ``False`` when there is no in-memory form to advance (past EXACT_SEARCH_LIMIT).
        """
        state = records.projection(NAME)
        if state is None:
            return False
        exact = self._exact_from_snapshot(state, records)
        if exact is None:
            exact = self._exact_matrix(state, self._checked_collection(state), records)
        if exact is None or self._exact is None:
            return False
        held, collection_id = self._exact[0]
        first: dict[str, int] = {}
        for seq, path, _ in records.changes_since(held.high_water):
            first.setdefault(path, seq)
        paths = sorted(set(first) | set(self._unembedded))
        if paths:
            self._replace_in_memory(records, exact, paths, first)
        newest = max(held.high_water, records.high_water())
        self._exact = ((replace(held, high_water=newest), collection_id), exact)
        return True

    def _replace_in_memory(
        self, records: RecordStore, exact: ExactVectors, paths: list[str], first: dict[str, int]
    ) -> None:
        """Replace the vectors of ``paths`` by those the cache holds for their current passages."""
        lagging = self._take_cached(records, exact, paths)
        since = {**first, **self._unembedded}  # a note still lacking vectors lacks them since its first change
        self._unembedded = {path: since[path] for path in lagging}

    def _take_cached(self, records: RecordStore, exact: ExactVectors, paths: list[str]) -> list[str]:
        """Give ``paths`` in ``exact`` the cached vectors of their current passages; the notes (sorted) some
        of whose passages the cache lacks (those passages stay out until their vectors come)."""
        passages = [passage for path in paths for passage in records.passages_of(path)]
        found = self._get_cache().get(self.embedder_name, [p.sha256 for p in passages])
        have = [p for p in passages if p.sha256 in found]
        rows = np.stack([found[p.sha256] for p in have]) if have else np.zeros((0, exact.matrix.shape[1]))
        exact.replace_notes(paths, [p.id for p in have], [p.path for p in have], rows)
        return sorted({p.path for p in passages if p.sha256 not in found})

    def lagging(self) -> dict[str, int]:
        """Notes whose new passages the in-memory vectors still lack, with the first change each lacks."""
        return dict(self._unembedded)

    def answering_high_water(self, state: ProjectionState) -> int:
        """The change-log position every vector searched is at (before the first note still unembedded)."""
        if self._exact is None or not self._exact_serves(state, self._exact[0][1]):
            return state.high_water
        if self._unembedded:
            return min(self._unembedded.values()) - 1
        return self._exact[0][0].high_water

    def _exact_tag(self, key: tuple[ProjectionState, str]) -> str:
        state, collection_id = key
        return json.dumps([self.store_id, collection_id, state.version, state.high_water, state.built_at])

    def _load_exact(
        self, state: ProjectionState, collection_id: str | None, records: RecordStore | None = None
    ) -> tuple[tuple[ProjectionState, str], ExactVectors] | None:
        """The snapshot of the vectors read at ``state`` of collection ``collection_id`` (``None``: the
        collection the snapshot names, unchecked), or at an earlier state of it brought forward with
        ``records``; with the key it serves. ``None``: none, another collection's, or unreadable."""
        path = self._exact_path
        if not self.chroma.embedded or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as stored:
                meta = json.loads(stored["meta"].tobytes().decode())
                tag = json.loads(meta["tag"])
                if collection_id is None:
                    if not (isinstance(tag, list) and len(tag) > 1 and isinstance(tag[1], str)):
                        return None
                    collection_id = tag[1]
                key = (state, collection_id)
                current = meta["tag"] == self._exact_tag(key)
                if not current and records is None:
                    return None
                exact = ExactVectors(meta["ids"], meta["paths"], stored["matrix"])
            if current or records is None:
                return key, exact
            brought = self._brought_forward(key, tag, exact, records)
            return (key, brought) if brought is not None else None
        except (OSError, ValueError, KeyError, TypeError):  # damaged: read from Chroma again
            return None

    def _brought_forward(
        self, key: tuple[ProjectionState, str], tag: list[Any], exact: ExactVectors, records: RecordStore
    ) -> ExactVectors | None:
        """``exact``, read at an earlier change of the same collection version, with every note changed up
        to ``key``'s state given its passages' vectors from the embedding cache (the syncs that wrote them
        to Chroma put them there). ``None`` when one is missing, or a note changed again after the state
        (its passages now are not the state's): then Chroma is read. Past :data:`RESAVE_SNAPSHOT_AT` notes
        brought forward, the result is saved as the snapshot at the state, so the work is not repeated by
        every new process (syncs patch the vectors in memory, not the snapshot)."""
        state, collection_id = key
        store_id, snapshot_collection, version, high_water = tag[:4]
        if (store_id, snapshot_collection, version) != (self.store_id, collection_id, state.version):
            return None
        if not isinstance(high_water, int) or high_water > state.high_water:
            return None
        first: set[str] = set()
        later: set[str] = set()
        for seq, path, _ in records.changes_since(high_water):
            (first if seq <= state.high_water else later).add(path)
        if first & later:
            return None
        missing = self._take_cached(records, exact, sorted(first))
        if missing:
            return None  # a passage without a vector: read Chroma (this copy is dropped)
        if len(first) > RESAVE_SNAPSHOT_AT:
            self._save_exact(key, exact.folded())  # the next process loads it instead of bringing it forward
        return exact

    def _save_exact(self, key: tuple[ProjectionState, str], exact: ExactVectors) -> None:
        """Keep ``exact`` (read from Chroma, or brought forward) as the snapshot at ``key`` for the next
        process (not when the store is read-only)."""
        if not self.chroma.embedded:
            return
        meta = {"tag": self._exact_tag(key), "ids": exact.ids, "paths": exact.paths}
        partial_path = self._exact_path.with_name(f".{EXACT_SNAPSHOT}.partial")
        with contextlib.suppress(OSError):
            with open(partial_path, "wb") as handle:
                np.savez(handle, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), matrix=exact.matrix)
            os.replace(partial_path, self._exact_path)

    @property
    def _exact_path(self) -> Path:
        return self._cache_path.with_name(EXACT_SNAPSHOT)

    def _all_vectors(self, collection: Any, count: int) -> tuple[list[str], list[str], list[Any]]:
        """Every id, note path and vector, in pages of READ_PAGE (embedded too: one read of every
        metadata row fails past SQLite's 32,766 variables, about 33,000 passages)."""
        ids: list[str] = []
        paths: list[str] = []
        rows: list[Any] = []
        for offset in range(0, count, READ_PAGE):
            page = self._on(collection, "read vectors", partial(_vector_page, offset=offset))
            ids.extend(page["ids"])
            paths.extend(m["path"] for m in page["metadatas"])
            rows.extend(page["embeddings"])
        return ids, paths, rows

    def _metadata(self, state: ProjectionState) -> dict[str, Any]:
        return {
            META_STORE: self.store_id,
            META_FORMAT: DENSE_FORMAT,
            META_VERSION: state.version,
            META_HIGH_WATER: state.high_water,
            META_MODEL: self.embedder_name,
            META_BUILT_AT: state.built_at,
        }

    def _stamp(self, collection: Any, state: ProjectionState) -> None:
        """Record ``state`` in the collection's metadata (before the record store moves to it)."""
        metadata = self._metadata(state)
        self._on(collection, "record the projection state", lambda c: c.modify(metadata=metadata))
        self._checked = (self.connection.generation, state)

    def _open_checked(self, state: ProjectionState) -> tuple[Any | None, str | None]:
        """The collection for ``state`` and why it cannot serve it (``None`` when it can)."""
        collection, problem = self._open(self.collection_name(state.version))
        if collection is None:
            return None, problem or f"it is missing from {self.where()}"
        if self.chroma.embedded and META_STORE not in (collection.metadata or {}):
            return collection, None  # built before collections carried metadata: embedded, so ours; stamped on sync
        return collection, mismatch(collection.metadata, self._metadata(state))

    def _checked_collection(self, state: ProjectionState) -> Any:
        """The verified collection for ``state``; ``StaleCollectionError`` saying why it cannot be used.

        Embedded, a state is verified once; on a server, before every search (which is
        also how a server that went away, or lost its data, is noticed).
        """
        if self.chroma.embedded and self._checked == (self.connection.generation, state):
            return self._collection(state.version)
        collection, problem = self._open_checked(state)
        if collection is None or problem is not None:
            name = self.collection_name(state.version)
            raise StaleCollectionError(
                f"the dense collection {name} in {self.where()} cannot be used: {problem}; "
                "index the notes to rebuild it"
            )
        self._checked = (self.connection.generation, state)
        return collection

    def _open(self, name: str) -> tuple[Any | None, str | None]:
        """The collection ``name`` fresh from Chroma; ``(None, None)`` when it does not exist, and
        ``(None, why)`` when Chroma will not open it with our embedding function."""
        not_found, _ = _chroma_errors()
        try:
            collection = self.connection.call(f"open the collection {name}", self._getter(name))
        except not_found:
            return None, None
        except ValueError as exc:  # Chroma refuses our embedding function: another program's collection
            return None, f"it was made by another program ({exc})"
        self._handles = {key: value for key, value in self._handles.items() if key[0] == self.connection.generation}
        self._handles[(self.connection.generation, name)] = collection
        return collection, None

    def _free_version(self, version: int) -> int:
        """``version``, or the next one whose collection name no other record store holds."""
        for candidate in range(version, version + MAX_VERSION_SKIPS):
            collection, problem = self._open(self.collection_name(candidate))
            free = collection is None and problem is None
            if free or (collection is not None and self._is_ours(collection.metadata)):
                return candidate
        raise StaleCollectionError(
            f"{MAX_VERSION_SKIPS} collection names from {self.collection_name(version)} on are held by other "
            f"record stores in {self.where()}: give this project its own chroma_prefix"
        )

    def _getter(self, name: str) -> Callable[[Any], Any]:
        function = self.function
        return lambda client: client.get_collection(name, embedding_function=function)

    def _is_ours(self, metadata: Mapping[str, Any] | None) -> bool:
        store = (metadata or {}).get(META_STORE)
        return store == self.store_id or (store is None and self.chroma.embedded)

    def _drop_old_versions(self, keep: str) -> None:
        """Delete this store's other versions under this prefix; other stores' collections are left alone.

        Best effort: a leftover old version is never read (names carry the version).
        """
        pattern = re.compile(re.escape(self.chroma.prefix + COLLECTION_PREFIX) + r"\d+")
        _, chroma_error = _chroma_errors()
        try:
            listed = self.connection.call("list collections", lambda client: client.list_collections())
        except (ValueError, chroma_error):  # a collection of another program that this chromadb cannot describe
            return
        for collection in listed:
            if collection.name != keep and pattern.fullmatch(collection.name) and self._is_ours(collection.metadata):
                self._delete(collection.name)

    def _delete(self, name: str) -> None:
        """Delete ``name`` if it is one of ours; a missing collection is fine."""
        collection, _ = self._open(name)
        if collection is not None and self._is_ours(collection.metadata):
            self.connection.call(f"delete the collection {name}", lambda client: client.delete_collection(name))
            self._handles = {key: value for key, value in self._handles.items() if key[1] != name}

    # ------------------------------------------------------------ chroma plumbing

    def _on(self, collection: Any, what: str, operation: Callable[[Any], T]) -> T:
        """``operation(collection)`` through the connection; after a reconnect, on a fresh handle."""
        name = str(collection.name)

        def run(client: Any) -> T:
            handle = self._handles.get((self.connection.generation, name))
            if handle is None:
                handle = self._getter(name)(client)
                self._handles[(self.connection.generation, name)] = handle
            return operation(handle)

        return self.connection.call(f"{what} ({name})", run)

    def _get_client(self) -> Any:
        return self.connection.client()

    def _collection(self, version: int) -> Any:
        """The collection of ``version`` (opened, not checked)."""
        name = self.collection_name(version)
        handle = self._handles.get((self.connection.generation, name))
        if handle is not None:
            return handle
        collection, problem = self._open(name)
        if collection is None:
            raise StaleCollectionError(f"the dense collection {name} cannot be opened: {problem}")
        return collection

    def _get_cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_path)
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        self.connection.close()
        self._handles.clear()

    def discard_embedded(self) -> None:
        """Delete an embedded Chroma folder that cannot be opened: it is derived, and the next sync rebuilds it."""
        self.close()
        forget_embedded(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)
        self._checked = None
        self._exact = None
