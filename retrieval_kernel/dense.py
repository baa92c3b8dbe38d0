"""The dense projection: passage embeddings in a Chroma collection derived from the record store.

Chroma runs embedded (``PersistentClient`` under ``STORE/dense``) with telemetry
off. Every collection call passes our own registered embedding function, so
Chroma never builds its default one (which would download a model). Vectors are
cached by passage content hash in ``STORE/embeddings.sqlite3``: re-indexing
unchanged text never re-embeds it. A rebuild writes a new versioned collection
and drops the old one only after the record store points at the new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from chromadb import PersistentClient
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from .embedding import DEFAULT_EMBEDDER, Embedder, go_offline, load_embedder
from .errors import LaneUnavailableError
from .notes import Passage
from .records import ProjectionState, RecordStore, utc_now

NAME = "dense"
FOLDER = "dense"
CACHE_NAME = "embeddings.sqlite3"
COLLECTION_PREFIX = "passages_v"


EXACT_SEARCH_LIMIT = 100_000  # up to this many vectors, exact numpy search beats HNSW round trips


def score_basis(embedder_name: str) -> str:
    return f"cosine similarity ({embedder_name}; exact up to {EXACT_SEARCH_LIMIT:,} vectors, else Chroma HNSW)"


@register_embedding_function
class PassageEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma's view of our embedder; loads the model only when first called."""

    def __init__(self, kind: str = DEFAULT_EMBEDDER, embedder: Embedder | None = None) -> None:
        self.kind = kind
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.kind)
        return self._embedder

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "retrieval_kernel_minilm"

    def get_config(self) -> dict[str, Any]:
        return {"kind": self.kind}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> PassageEmbeddingFunction:
        return PassageEmbeddingFunction(str(config.get("kind", DEFAULT_EMBEDDER)))

    def default_space(self) -> Any:
        return "cosine"

    def supported_spaces(self) -> Any:
        return ["cosine"]


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


class DenseProjection:
    """The Chroma collection under ``store_dir/dense``, kept in step with the change log."""

    def __init__(self, store_dir: Path, embedder: str | Embedder = DEFAULT_EMBEDDER) -> None:
        go_offline()
        self.folder = store_dir / FOLDER
        kind = embedder if isinstance(embedder, str) else getattr(embedder, "name", "custom")
        self.function = PassageEmbeddingFunction(kind, None if isinstance(embedder, str) else embedder)
        self._cache_path = store_dir / CACHE_NAME
        self._client: Any = None
        self._cache: EmbeddingCache | None = None
        self._exact: tuple[ProjectionState, list[str], np.ndarray] | None = None
        self.embedded_last_sync = 0

    @property
    def embedder_name(self) -> str:
        return self.function.embedder.name

    # ------------------------------------------------------------ building

    def sync(self, records: RecordStore) -> ProjectionState:
        """Apply every change after this projection's high-water mark (rebuild if it is missing)."""
        state = records.projection(NAME)
        self.embedded_last_sync = 0
        if state is None or not self._has_collection(state.version):
            return self.rebuild(records, version=(state.version + 1) if state else 1)
        changes = records.changes_since(state.high_water)
        if not changes:
            return state
        collection = self._collection(state.version)
        for path in sorted({path for _, path, _ in changes}):
            collection.delete(where={"path": path})
            self._add(collection, records.passages_of(path))
        new_state = ProjectionState(NAME, state.version, changes[-1][0], utc_now())
        records.set_projection(new_state)
        return new_state

    def rebuild(self, records: RecordStore, version: int) -> ProjectionState:
        """Build a new collection version from the record store, then switch to it."""
        high_water = records.high_water()
        name = f"{COLLECTION_PREFIX}{version}"
        client = self._get_client()
        if name in self._collection_names():
            client.delete_collection(name)
        collection = self._collection(version)
        self._add(collection, [stored.passage for stored in records.passages().values()])
        state = ProjectionState(NAME, version, high_water, utc_now())
        records.set_projection(state)
        for old in self._collection_names() - {name}:
            client.delete_collection(old)
        return state

    def _add(self, collection: Any, passages: list[Passage]) -> None:
        if not passages:
            return
        vectors = self.vectors_for(passages)
        step = max(1, min(5000, self._get_client().get_max_batch_size()))
        for start in range(0, len(passages), step):
            batch = passages[start : start + step]
            collection.add(
                ids=[p.id for p in batch],
                embeddings=np.stack([vectors[p.sha256] for p in batch]),
                metadatas=[{"path": p.path, "module": p.module} for p in batch],
            )

    def vectors_for(self, passages: Sequence[Passage]) -> dict[str, np.ndarray]:
        """Vectors by content hash: from the cache, embedding only what it lacks."""
        cache = self._get_cache()
        model = self.embedder_name
        vectors = cache.get(model, [p.sha256 for p in passages])
        missing = {p.sha256: p.text for p in passages if p.sha256 not in vectors}
        if missing:
            fresh = self.function.embedder.embed(list(missing.values()))
            new = dict(zip(missing, fresh, strict=True))
            cache.put(model, new)
            vectors.update(new)
            self.embedded_last_sync += len(new)
        return vectors

    # ------------------------------------------------------------ searching

    def embed_query(self, text: str) -> np.ndarray:
        return self.function.embedder.embed([text])[0]

    def search(self, text: str, limit: int, state: ProjectionState) -> list[DenseHit]:
        """Top ``limit`` passages by cosine similarity; ties broken by passage id."""
        return self.search_vector(self.embed_query(text), limit, state)

    def search_vector(self, vector: np.ndarray, limit: int, state: ProjectionState) -> list[DenseHit]:
        """Exact cosine over the collection's vectors when it is small enough, else Chroma's HNSW."""
        exact = self._exact_matrix(state)
        if exact is not None:
            ids, matrix = exact
            if not ids:
                return []
            scores = np.round(matrix @ vector.astype("float32"), 6)
            top = np.argpartition(-scores, min(limit, len(ids)) - 1)[:limit]
            hits = [DenseHit(ids[i], float(scores[i])) for i in top]
        else:
            hits = self._hnsw(vector, limit, state.version)
        return sorted(hits, key=lambda hit: (-hit.score, hit.passage_id))[:limit]

    def _hnsw(self, vector: np.ndarray, limit: int, version: int) -> list[DenseHit]:
        collection = self._collection(version)
        count = collection.count()
        if count == 0:
            return []
        result = collection.query(query_embeddings=[vector], n_results=min(limit, count), include=["distances"])
        return [
            DenseHit(passage_id, round(1.0 - float(distance), 6))
            for passage_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    def _exact_matrix(self, state: ProjectionState) -> tuple[list[str], np.ndarray] | None:
        """The collection's vectors in memory, reloaded whenever the projection state changes."""
        if self._exact is not None and self._exact[0] == state:
            return self._exact[1], self._exact[2]
        collection = self._collection(state.version)
        if collection.count() > EXACT_SEARCH_LIMIT:
            return None
        stored = collection.get(include=["embeddings"])
        ids = list(stored["ids"])
        matrix = np.asarray(stored["embeddings"], dtype="float32").reshape(len(ids), self.function.embedder.dimension)
        self._exact = (state, ids, matrix)
        return ids, matrix

    # ------------------------------------------------------------ chroma plumbing

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._client = PersistentClient(
                    path=str(self.folder), settings=Settings(anonymized_telemetry=False, allow_reset=True)
                )
            except Exception as exc:
                raise LaneUnavailableError(f"cannot open the Chroma store at {self.folder}: {exc}") from exc
        return self._client

    def _get_cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_path)
        return self._cache

    def _collection_names(self) -> set[str]:
        return {c if isinstance(c, str) else c.name for c in self._get_client().list_collections()}

    def _has_collection(self, version: int) -> bool:
        return f"{COLLECTION_PREFIX}{version}" in self._collection_names()

    def _collection(self, version: int) -> Any:
        return self._get_client().get_or_create_collection(
            f"{COLLECTION_PREFIX}{version}",
            embedding_function=self.function,
            configuration={"hnsw": {"space": "cosine"}},
        )

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        self._client = None
