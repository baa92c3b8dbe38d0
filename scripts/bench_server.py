"""Server mode against embedded Chroma, measured in one run on this machine.

    .venv/bin/python scripts/bench_server.py [--passages 10000,50000] [--output docs/bench_server.json]

Starts its own ``chroma run`` on a free loopback port (stopped at the end), and for
each corpus size (retrieval_kernel/evaluation/bench.py's seeded synthetic notes, ten sections each):

1. Embedded, cold: lexical indexing, then dense indexing, which embeds every passage
   into the store's embedding cache.
2. Two copies of that store (without its Chroma folder): one embedded, one on the
   server. Each rebuilds the dense projection with the cache warm, so the two
   indexing figures compare the Chroma write paths only (nothing is re-embedded).
3. On both, the corpus's 60 queries: whole queries without the change check
   (``refresh=False``) and default ones (``refresh=True``), the dense lane alone,
   Chroma's own HNSW search (what answers past 100,000 vectors) and its recall@50
   against exact search, and the one-off load of the exact-search matrix that the
   first query after each change pays.
4. Four client processes, each with its own copy of the store, querying the server
   at once: whole queries and HNSW searches, p50/p95 over all four.

Prints each figure as it comes and writes the JSON to ``--output``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_kernel.evaluation.bench import synthetic_notes
from retrieval_kernel.evaluation.suites import versions
from retrieval_kernel.pipeline.workspace import Workspace
from retrieval_kernel.projections.chroma_client import ChromaSettings, LocalServer, free_port
from retrieval_kernel.projections.dense import NAME as DENSE

AS_OF = "2026-10-15"
POOL = 50  # the dense lane's candidate pool
CLIENTS = 4
ROOT = Path(__file__).resolve().parent.parent


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2)}


def timed(queries: list[Any], action: Callable[[Any], Any]) -> list[float]:
    action(queries[0])  # warm
    samples = []
    for query in queries:
        started = time.perf_counter()
        action(query)
        samples.append(1000 * (time.perf_counter() - started))
    return samples


def copy_store(source: Path, target: Path, keep_cache: bool = True) -> Path:
    """The record store and lexical index (and the embedding cache) without the embedded Chroma folder."""
    skipped = ["dense", "*.lock"] + ([] if keep_cache else ["embeddings.sqlite3"])
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*skipped))
    return target


def rebuild_rate(workspace: Workspace) -> dict[str, float]:
    """Passages per second for a dense rebuild with a warm embedding cache (Chroma writes only)."""
    state = workspace.records.projection(DENSE)
    assert state is not None
    passages = workspace.records.passage_count()
    started = time.perf_counter()
    workspace.dense.rebuild(workspace.records, state.version + 1)
    seconds = time.perf_counter() - started
    assert workspace.dense.embedded_last_sync == 0, "the warm rebuild embedded something"
    return {"dense_rebuild_s": round(seconds, 2), "dense_rebuild_per_s": round(passages / seconds, 1)}


def query_figures(workspace: Workspace, queries: list[str]) -> dict[str, Any]:
    dense = workspace.dense
    state = workspace.records.projection(DENSE)
    assert state is not None
    vectors = [dense.embed_query(query) for query in queries]
    dense._exact = None  # the first query after a change loads the exact-search matrix
    started = time.perf_counter()
    dense.search_vector(vectors[0], POOL, state)
    load = time.perf_counter() - started
    figures: dict[str, Any] = {"exact_matrix_load_s": round(load, 2)}
    figures["query"] = percentiles(timed(queries, lambda q: workspace.query(q, as_of=AS_OF, refresh=False)))
    figures["query_refresh"] = percentiles(timed(queries, lambda q: workspace.query(q, as_of=AS_OF)))
    figures["dense_search"] = percentiles(timed(vectors, lambda v: dense.search_vector(v, POOL, state)))
    figures["hnsw_search"] = percentiles(timed(vectors, lambda v: dense.search_hnsw(v, POOL, state)))
    exact = [{hit.passage_id for hit in dense.search_vector(v, POOL, state)} for v in vectors]
    approximate = [{hit.passage_id for hit in dense.search_hnsw(v, POOL, state)} for v in vectors]
    figures["hnsw_recall_at_50"] = round(
        float(np.mean([len(a & e) / POOL for a, e in zip(approximate, exact, strict=True)])), 3
    )
    return figures


# ---------------------------------------------------------------- concurrent clients


def client_main(spec: dict[str, Any]) -> None:
    """One client process: warm up, wait for the common start, time queries and HNSW searches."""
    settings = ChromaSettings(url=spec["url"], prefix=spec["prefix"], timeout_s=30.0)
    with Workspace(spec["notes"], spec["store"], chroma=settings) as workspace:
        state = workspace.records.projection(DENSE)
        assert state is not None
        vectors = [workspace.dense.embed_query(query) for query in spec["queries"]]
        workspace.query(spec["queries"][0], as_of=AS_OF, refresh=False)  # loads the model and the matrix
        Path(spec["ready"]).touch()
        while not Path(spec["go"]).exists():  # every client starts timing at the same moment
            time.sleep(0.01)
        queries = [timed_once(lambda q=q: workspace.query(q, as_of=AS_OF, refresh=False)) for q in spec["queries"]]
        hnsw = [timed_once(lambda v=v: workspace.dense.search_hnsw(v, POOL, state)) for v in vectors]
    print(json.dumps({"query": queries, "hnsw": hnsw}))


def timed_once(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return 1000 * (time.perf_counter() - started)


def concurrent_clients(notes: Path, store: Path, url: str, prefix: str, queries: list[str]) -> dict[str, Any]:
    """Four client processes, each with its own store copy, querying the server from the same moment."""
    signals = store.with_name(f"{store.name}-signals")
    signals.mkdir()
    go = signals / "go"
    processes = []
    for i in range(CLIENTS):
        client_store = copy_store(store, store.with_name(f"{store.name}-client{i}"), keep_cache=False)
        spec = {"notes": str(notes), "store": str(client_store), "url": url, "prefix": prefix, "queries": queries}
        spec.update(ready=str(signals / f"ready{i}"), go=str(go))
        command = [sys.executable, __file__, "--client", json.dumps(spec)]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
    while sum((signals / f"ready{i}").exists() for i in range(CLIENTS)) < CLIENTS:
        if any(process.poll() not in (None, 0) for process in processes):
            raise RuntimeError("a client process failed while warming up")
        time.sleep(0.05)
    go.touch()
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=1800)
        if process.returncode != 0:
            raise RuntimeError(f"a client process failed with exit code {process.returncode}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return {
        "clients": CLIENTS,
        "queries_per_client": len(queries),
        "query": percentiles([ms for r in results for ms in r["query"]]),
        "hnsw_search": percentiles([ms for r in results for ms in r["hnsw"]]),
    }


# ---------------------------------------------------------------- one corpus size


def bench_size(passages: int, scratch: Path, server: LocalServer, say: Callable[[str], None]) -> dict[str, Any]:
    notes = scratch / f"notes-{passages}"
    queries = synthetic_notes(notes, passages)
    cold = scratch / f"cold-{passages}"
    out: dict[str, Any] = {"load_average_at_start": [round(load, 2) for load in os.getloadavg()]}
    with Workspace(notes, cold, lanes=("identity", "lexical"), chroma="embedded") as workspace:
        started = time.perf_counter()
        workspace.index()
        out["lexical_index_per_s"] = round(passages / (time.perf_counter() - started), 1)
        workspace.lanes = ("identity", "lexical", "dense")
        started = time.perf_counter()
        workspace.index()
        out["embedded_cold_dense_index_per_s"] = round(passages / (time.perf_counter() - started), 1)
        assert workspace.dense.embedded_last_sync == passages
    say(f"{passages}: indexed cold {json.dumps(out)}")

    prefix = f"bench{passages}-"
    modes = {"embedded": ChromaSettings(), "server": ChromaSettings(url=server.url, prefix=prefix, timeout_s=30.0)}
    for mode, settings in modes.items():
        store = copy_store(cold, scratch / f"{mode}-{passages}")
        with Workspace(notes, store, chroma=settings) as workspace:
            figures = rebuild_rate(workspace)
            figures.update(query_figures(workspace, queries))
        out[mode] = figures
        say(f"{passages} {mode}: {json.dumps(figures)}")
    out["server_concurrent"] = concurrent_clients(notes, scratch / f"server-{passages}", server.url, prefix, queries)
    say(f"{passages} server, {CLIENTS} clients: {json.dumps(out['server_concurrent'])}")
    out["passages"] = passages
    out["load_average_at_end"] = [round(load, 2) for load in os.getloadavg()]  # 1, 5, 15 min: was the machine busy?
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", default="10000,50000")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "bench_server.json")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(json.loads(args.client))
        return 0
    sizes = [int(size) for size in args.passages.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="rk-bench-server-"))
    server = LocalServer(scratch / "chroma-data", free_port(), log=scratch / "chroma.log")
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        server.start()
        result: dict[str, Any] = {
            "command": "python scripts/bench_server.py --passages " + args.passages,
            "method": (
                "embedded cold indexing embeds every passage; the embedded and server rebuilds reuse that "
                "embedding cache, so their rates compare Chroma write paths only. Queries are the synthetic "
                "corpus's 60, timed after one warm-up; 'query' skips the change check (refresh=False), "
                "'query_refresh' is the default query. exact_matrix_load_s is paid by the first query after "
                "each projection change. hnsw_search is Chroma's HNSW (used past 100,000 vectors)."
            ),
            "sizes": {},
        }
        for size in sizes:
            result["sizes"][str(size)] = bench_size(size, scratch, server, say)
        result["versions"] = versions()
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(result, indent=1))
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
