"""Chroma's view of our embedder: the registered embedding function every collection call passes.

Kept apart from :mod:`.dense` so that answering from the exact-search snapshot never imports
chromadb (a second of a kernel's first query); importing this module imports it.
"""

from __future__ import annotations

from typing import Any

from .embedding import DEFAULT_EMBEDDER, Embedder, go_offline, import_chromadb_quickly, load_embedder

go_offline()  # before chromadb is imported: no telemetry, no hub downloads
import_chromadb_quickly()  # under its lock: whole, whatever another thread is importing
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: E402
from chromadb.utils.embedding_functions import register_embedding_function  # noqa: E402


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
