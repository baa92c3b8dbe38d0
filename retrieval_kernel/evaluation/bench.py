"""Performance benchmark: the pipeline against the fastest references, measured in one run.

For each corpus size a deterministic synthetic corpus (seeded; ten sections per
note) is indexed through :class:`Workspace`. Reported per size: index
throughput per lane and the raw ``SentenceTransformer.encode`` reference on a
sample of the same texts; warm query latency (p50/p95) per lane and end to end;
``bm25s`` and numpy brute-force cosine as references on the same texts and
vectors; one-note refresh against a full projection rebuild; peak RSS. Cold
start (``%load_ext`` and the first query) runs in a fresh interpreter. Print
ratios, not only times: these machines are shared and noisy.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from ..projections.lexical import analyze
from .suites import versions

SEED = 20261015
SECTIONS_PER_NOTE = 10
QUERIES = 60
ENCODE_SAMPLE = 300
_WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "record owner ledger delivery plan milestone component dependency operator boundary checkpoint "
    "acceptance source evidence citation refresh index projection budget approval deploy deployment "
    "release rollback supplier drawing bracket housing sensor calibration batch inspection failure "
    "schedule rota platform ticket review audit staging production change revision freshness stale "
    "observed verified permission authority policy refund tenant scope conflict supersede decision "
    "cache retry queue webhook migration tenancy database backup restore latency throughput memory"
).split()


def synthetic_notes(folder: Path, passages: int, seed: int = SEED) -> list[str]:
    """Write ``passages`` sections into notes of ten sections each; return a query set."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for note in range(0, passages, SECTIONS_PER_NOTE):
        sections = []
        for section in range(note, min(note + SECTIONS_PER_NOTE, passages)):
            heading = " ".join(rng.sample(_WORDS, 3)).capitalize()
            body = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(40, 90)))
            sections.append(f"## {heading} {section}\n\n{body.capitalize()}.\n")
        front = f"---\nid: note-{note // SECTIONS_PER_NOTE:05d}\nobserved: 2026-10-01\n---\n"
        (folder / f"note-{note // SECTIONS_PER_NOTE:05d}.md").write_text(
            front + f"# Note {note // SECTIONS_PER_NOTE}\n\n" + "\n".join(sections), encoding="utf-8"
        )
    return [" ".join(rng.sample(_WORDS, rng.randint(3, 6))) for _ in range(QUERIES)]


def _latencies(run: Callable[[], Any], repeat: int) -> list[float]:
    run()  # warm
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(1000 * (time.perf_counter() - started))
    return times


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _each(queries: list[str], action: Callable[[str], Any]) -> list[float]:
    action(queries[0])  # warm
    times = []
    for query in queries:
        started = time.perf_counter()
        action(query)
        times.append(1000 * (time.perf_counter() - started))
    return times


def bench_size(
    passages: int, scratch: Path, progress: Callable[[str], None], chroma: str | ChromaSettings | None = None
) -> dict[str, Any]:
    """Every figure for one corpus size (``chroma``: where the dense vectors live, as for :class:`Workspace`)."""
    notes = scratch / f"notes-{passages}"
    queries = synthetic_notes(notes, passages)
    store = scratch / f"store-{passages}"
    with Workspace(notes, store, lanes=("identity", "lexical"), chroma=chroma) as workspace:
        started = time.perf_counter()
        workspace.index()
        lexical_seconds = time.perf_counter() - started
        workspace.lanes = ("identity", "lexical", "dense")
        started = time.perf_counter()
        workspace.index()
        dense_seconds = time.perf_counter() - started
        progress(f"{passages}: indexed (lexical {lexical_seconds:.1f}s, dense {dense_seconds:.1f}s)")
        texts = [stored.passage.text for stored in workspace.passages().values()]
        figures = _query_figures(workspace, queries, texts)
        figures.update(_refresh_figures(workspace, notes))
        figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        figures.update(_encode_reference(workspace, texts))  # loads torch: after the RSS reading
    figures.update(
        {
            "passages": len(texts),
            "lexical_index_per_s": round(len(texts) / lexical_seconds, 1),
            "dense_index_per_s": round(len(texts) / dense_seconds, 1),
        }
    )
    figures["dense_index_vs_encode"] = round(figures["dense_index_per_s"] / figures["encode_reference_per_s"], 2)
    return figures


def _query_figures(workspace: Workspace, queries: list[str], texts: list[str]) -> dict[str, Any]:
    import bm25s

    dense = workspace.dense
    state = workspace.records.projection("dense")
    assert state is not None
    vectors = np.stack(list(dense.vectors_for([s.passage for s in workspace.passages().values()]).values()))
    query_vectors = {q: dense.embed_query(q) for q in queries}
    retriever = bm25s.BM25(k1=workspace.lexical.k1, b=workspace.lexical.b)
    retriever.index([analyze(text) for text in texts], show_progress=False)

    e2e = _each(queries, lambda q: workspace.query(q, as_of="2026-10-15", refresh=False))
    lexical = _each(queries, lambda q: workspace.lexical.search(q, workspace.candidate_pool))
    embed = _each(queries, dense.embed_query)
    dense_search = _each(queries, lambda q: dense.search_vector(query_vectors[q], workspace.candidate_pool, state))
    numpy_search = _each(queries, lambda q: np.argpartition(-(vectors @ query_vectors[q]), 50)[:50])
    bm25s_search = _each(queries, lambda q: retriever.retrieve([analyze(q) or ["record"]], k=50, show_progress=False))
    p50 = {
        name: _percentiles(samples)[0]
        for name, samples in {
            "e2e": e2e,
            "lexical": lexical,
            "embed": embed,
            "dense": dense_search,
            "numpy": numpy_search,
            "bm25s": bm25s_search,
        }.items()
    }
    overhead = max(0.0, p50["e2e"] - p50["lexical"] - p50["embed"] - p50["dense"]) / p50["e2e"]
    return {
        "e2e_p50_ms": round(p50["e2e"], 2),
        "e2e_p95_ms": round(_percentiles(e2e)[1], 2),
        "overhead_fraction": round(overhead, 3),
        "lexical_p50_ms": round(p50["lexical"], 2),
        "lexical_p95_ms": round(_percentiles(lexical)[1], 2),
        "bm25s_p50_ms": round(p50["bm25s"], 3),
        "lexical_vs_bm25s": round(p50["lexical"] / p50["bm25s"], 1),
        "dense_search_p50_ms": round(p50["dense"], 3),
        "dense_search_p95_ms": round(_percentiles(dense_search)[1], 3),
        "numpy_p50_ms": round(p50["numpy"], 3),
        "dense_vs_numpy": round(p50["dense"] / p50["numpy"], 1),
        "query_embed_p50_ms": round(p50["embed"], 2),
    }


def _encode_reference(workspace: Workspace, texts: list[str]) -> dict[str, Any]:
    """Plain ``SentenceTransformer.encode`` vs our embedder on the same sample of texts."""
    from ..projections.embedding import TorchEmbedder

    sample = random.Random(SEED).sample(texts, min(ENCODE_SAMPLE, len(texts)))
    reference = TorchEmbedder()
    ours = workspace.dense.function.embedder
    rounds = {"reference": [], "ours": []}  # type: dict[str, list[float]]
    for _ in range(2):  # interleaved, best of two: the machine is shared
        for name, embedder in (("reference", reference), ("ours", ours)):
            started = time.perf_counter()
            embedder.embed(sample)
            rounds[name].append(time.perf_counter() - started)
    return {
        "encode_sample": len(sample),
        "encode_reference_per_s": round(len(sample) / min(rounds["reference"]), 1),
        "embedder_per_s": round(len(sample) / min(rounds["ours"]), 1),
        "embedder_vs_encode": round(min(rounds["reference"]) / min(rounds["ours"]), 2),
    }


def _refresh_figures(workspace: Workspace, notes: Path) -> dict[str, Any]:
    target = sorted(notes.glob("*.md"))[0]
    target.write_text(target.read_text(encoding="utf-8") + "\nOne more calibration line.\n", encoding="utf-8")
    started = time.perf_counter()
    workspace.index()
    refresh_one = time.perf_counter() - started
    started = time.perf_counter()
    workspace.lexical_lane.rebuild()  # a full rebuild of the next version, then the switch
    workspace.dense_lane.rebuild()
    full = time.perf_counter() - started
    return {
        "refresh_one_s": round(refresh_one, 3),
        "full_rebuild_s": round(full, 2),
        "rebuild_vs_refresh": round(full / refresh_one, 1),
    }


def cold_start(notes: Path, store: Path) -> dict[str, float]:
    """``%load_ext`` and the first ``%context`` in a fresh interpreter, on an indexed store."""
    script = textwrap.dedent(
        f"""
        import json, time
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        t = time.perf_counter(); ip.run_line_magic("load_ext", "retrieval_kernel"); load = time.perf_counter() - t
        t = time.perf_counter()
        ip.run_line_magic("context", "--notes {notes} --store {store} --no-refresh record owner approval")
        print(json.dumps({{"load_ext_s": load, "first_query_s": time.perf_counter() - t}}))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return {name: round(value, 3) for name, value in figures.items()}


def run_bench(
    sizes: list[int], progress: Callable[[str], None] = print, chroma: str | ChromaSettings | None = None
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="rk-bench-"))
    try:
        output: dict[str, Any] = {"sizes": {}}
        for size in sizes:
            output["sizes"][str(size)] = bench_size(size, scratch, progress, chroma)
            progress(json.dumps({str(size): output["sizes"][str(size)]}))
        smallest = min(sizes)
        output.update(cold_start(scratch / f"notes-{smallest}", scratch / f"store-{smallest}"))
        output["versions"] = versions()
        return output
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
