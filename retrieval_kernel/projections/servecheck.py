"""``retrieval-kernel serve-check URL``: can this Chroma server hold the dense lane's vectors?

Four checks, in order, each stopping the run with a clear message when it fails:
the server answers its heartbeat; it reports a version; its collections are
listed (names and vector counts, only those with the project's prefix); and a
probe round trip works with our own embedding function: a temporary collection
is created, three short texts are added, a query finds the right one, and the
collection is deleted again.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from .chroma_client import ChromaConnection, ChromaServerError, ChromaSettings, heartbeat

PROBE_TEXTS = {
    "probe-pump": "The intake filter of the water pump is cleaned every week.",
    "probe-bread": "Knead the sourdough with flour, water and salt, then let it rise overnight.",
    "probe-stars": "Observe planets and distant galaxies through a telescope on clear nights.",
}
PROBE_QUERY = ("How often is the pump filter cleaned?", "probe-pump")


def serve_check(settings: ChromaSettings) -> dict[str, Any]:
    """Check the server in ``settings``; ``ChromaServerError`` naming the first check that failed."""
    import chromadb

    if settings.url is None:
        raise ChromaServerError("serve-check needs a server URL such as http://localhost:8000, not 'embedded'")
    beat = heartbeat(settings)
    connection = ChromaConnection(settings, Path("."))
    try:
        version = connection.call("read its version", lambda client: client.get_version())
        listed = connection.call("list collections", lambda client: client.list_collections())
        ours = sorted((c for c in listed if c.name.startswith(settings.prefix)), key=lambda c: c.name)
        collections = [{"name": c.name, "vectors": connection.call(f"count {c.name}", _counter(c))} for c in ours]
        probe = _probe(connection, settings.prefix)
    finally:
        connection.close()
    return {
        "url": settings.url,
        "ok": True,
        "heartbeat_ms": round(1000 * beat, 2),
        "server_version": str(version),
        "client_version": chromadb.__version__,
        "tenant": settings.tenant or "default_tenant",
        "database": settings.database or "default_database",
        "prefix": settings.prefix,
        "collections_in_database": len(listed),
        "collections": collections,
        "probe": probe,
    }


def _counter(collection: Any) -> Any:
    return lambda client: collection.count()


def _probe(connection: ChromaConnection, prefix: str) -> dict[str, Any]:
    """Create a temporary collection with our embedding function, add, query, delete; time it all."""
    from .dense import PassageEmbeddingFunction

    function = PassageEmbeddingFunction()
    name = f"{prefix}rk_probe_{uuid.uuid4().hex[:12]}"
    started = time.perf_counter()
    collection = connection.call(
        f"create the probe collection {name}",
        lambda client: client.create_collection(
            name, embedding_function=function, configuration={"hnsw": {"space": "cosine"}}
        ),
    )
    try:
        collection.add(ids=list(PROBE_TEXTS), documents=list(PROBE_TEXTS.values()))
        question, expected = PROBE_QUERY
        found = collection.query(query_texts=[question], n_results=len(PROBE_TEXTS), include=["distances"])
    finally:
        connection.call(f"delete the probe collection {name}", lambda client: client.delete_collection(name))
    nearest = found["ids"][0][0]
    if nearest != expected:
        raise ChromaServerError(f"the probe query found {nearest!r} nearest, not {expected!r}: vectors are mangled")
    left = connection.call("list collections", lambda client: [c.name for c in client.list_collections()])
    if name in left:
        raise ChromaServerError(f"the probe collection {name} is still there after it was deleted")
    return {
        "collection": name,
        "added": len(PROBE_TEXTS),
        "nearest": nearest,
        "cosine": round(1.0 - float(found["distances"][0][0]), 4),
        "ms": round(1000 * (time.perf_counter() - started), 1),
    }


def report_text(result: dict[str, Any]) -> str:
    """The check as a few aligned lines for a terminal."""
    prefix = f"with prefix {result['prefix']!r}" if result["prefix"] else "(no prefix)"
    lines = [
        f"Chroma server {result['url']}: ok",
        f"  reachable    heartbeat in {result['heartbeat_ms']:.1f} ms",
        f"  version      server {result['server_version']}, client chromadb {result['client_version']}",
        f"  database     {result['tenant']} / {result['database']}",
        f"  collections  {len(result['collections'])} {prefix} of {result['collections_in_database']} in the database",
    ]
    lines += [f"               {c['name']}  {c['vectors']:,} vectors" for c in result["collections"]]
    probe = result["probe"]
    lines.append(
        f"  probe        create, add {probe['added']}, query, delete in {probe['ms']:.0f} ms "
        f"(nearest {probe['nearest']}, cosine {probe['cosine']})"
    )
    return "\n".join(lines)
