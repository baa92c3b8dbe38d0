"""Performance benchmark: the pipeline against the fastest references, measured in one run, on real text.

Corpora (each benchmarked in a fresh interpreter, so peak memory is its own):

* ``sizes["N"]``: N passages of **scaled real text**: SciFact sentences recombined (seeded, one to
  three a section, ten sections a note), so vocabulary and posting lengths are natural;
* ``corpora["scifact"]``: the 5,183 SciFact abstracts, one note each, asked SciFact's test queries;
* ``corpora["tldr-pages"]``: 7,425 real short Markdown notes (a copy, so edits never touch
  the shared folder), asked their own one-line summaries: where a per-query walk shows;
* ``corpora["synthetic-90"]``: the old 90-word synthetic corpus, kept only as a labelled worst
  case (every posting list is nearly the whole corpus).

Reported for each: index throughput per lane and plain ``SentenceTransformer.encode`` on a
sample of the same texts; warm ``%context`` latency (``Workspace.query``) p50/p95 and where
its time goes (by stage); each lane against its reference on the same tokens and vectors
(``bm25s``, numpy exact cosine); the first query after a one-note edit; one-note refresh against
a full rebuild; peak RSS. Cold start (``%load_ext`` and the first ``%context``) runs in a fresh
interpreter, the package's bytecode compiled first as an install does. Ratios, not only times: these
machines are shared and noisy.
"""

from __future__ import annotations

import compileall
import json
import multiprocessing
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from ..projections.lexical import analyze
from .beir import load_beir, write_notes
from .suites import versions

SEED = 20261015
SECTIONS_PER_NOTE = 10
QUERIES = 60
ENCODE_SAMPLE = 300
FULL_REBUILD_UP_TO = 10_000  # past this the full rebuild (minutes of embedding) is not re-measured
CORPORA = ("scifact", "tldr-pages", "synthetic-90")
AS_OF = "2026-10-15"
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


@dataclass(frozen=True)
class BenchCorpus:
    """A folder of notes to benchmark and the questions to ask it."""

    name: str
    label: str
    notes: Path
    queries: list[str]


def default_shared() -> Path:
    """The shared data folder: ``RETRIEVAL_KERNEL_SHARED``, else ``../shared`` beside the project."""
    return Path(os.environ.get("RETRIEVAL_KERNEL_SHARED", Path(__file__).resolve().parents[3] / "shared"))


def scaled_corpus(folder: Path, passages: int, shared: Path, seed: int = SEED) -> BenchCorpus:
    """``passages`` sections of SciFact sentences recombined (one to three each), ten sections per note."""
    data = load_beir(shared / "datasets" / "scifact")
    sentences = [s for _, text in data.corpus.values() for s in _SENTENCE.split(text) if len(s.split()) >= 5]
    titles = [title for title, _ in data.corpus.values() if title]
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for note in range(0, passages, SECTIONS_PER_NOTE):
        sections = []
        for section in range(note, min(note + SECTIONS_PER_NOTE, passages)):
            heading = " ".join(rng.choice(titles).split()[:6])
            body = " ".join(rng.sample(sentences, rng.randint(1, 3)))
            sections.append(f"## {heading} ({section})\n\n{body}\n")
        name = f"note-{note // SECTIONS_PER_NOTE:05d}"
        front = f"---\nid: {name}\nobserved: 2026-10-01\n---\n"
        (folder / f"{name}.md").write_text(front + f"# {rng.choice(titles)}\n\n" + "\n".join(sections), "utf-8")
    return BenchCorpus(f"scaled-{passages}", "SciFact sentences recombined", folder, _scifact_queries(data, rng))


def scifact_corpus(folder: Path, shared: Path) -> BenchCorpus:
    data = load_beir(shared / "datasets" / "scifact")
    write_notes(data.corpus, folder)
    return BenchCorpus(
        "scifact", "SciFact abstracts, one note each", folder, _scifact_queries(data, random.Random(SEED))
    )


def tldr_corpus(folder: Path, shared: Path) -> BenchCorpus:
    """A copy of tldr-pages (edits must never touch the shared folder); queries: pages' own summaries."""
    shutil.copytree(shared / "corpora" / "tldr-pages" / "notes", folder)
    pages = sorted(folder.rglob("*.md"))
    summaries = []
    for page in random.Random(SEED).sample(pages, QUERIES):
        line = next((ln for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("> ")), "")
        summaries.append(line[2:].strip().rstrip(".") or page.stem)
    return BenchCorpus("tldr-pages", "tldr-pages, 7,425 short real notes", folder, summaries)


def synthetic_corpus(folder: Path, passages: int) -> BenchCorpus:
    queries = synthetic_notes(folder, passages)
    return BenchCorpus("synthetic-90", f"worst case: a 90-word vocabulary, {passages} passages", folder, queries)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _scifact_queries(data: Any, rng: random.Random) -> list[str]:
    return [data.queries[qid] for qid in rng.sample(sorted(data.queries), QUERIES)]


def bench_corpus(
    corpus: BenchCorpus, scratch: Path, progress: Callable[[str], None], chroma: str | ChromaSettings | None = None
) -> dict[str, Any]:
    """Every figure for one corpus (``chroma``: where the dense vectors live, as for :class:`Workspace`)."""
    store = scratch / f"store-{corpus.name}"
    with Workspace(corpus.notes, store, lanes=("identity", "lexical"), chroma=chroma) as workspace:
        started = time.perf_counter()
        workspace.index()
        lexical_seconds = time.perf_counter() - started
        workspace.lanes = ("identity", "lexical", "dense")
        started = time.perf_counter()
        workspace.index()
        dense_seconds = time.perf_counter() - started
        progress(f"{corpus.name}: indexed (lexical {lexical_seconds:.1f}s, dense {dense_seconds:.1f}s)")
        texts = [stored.passage.text for stored in workspace.passages().values()]
        figures = _query_figures(workspace, corpus.queries, texts)
        figures.update(
            _refresh_figures(workspace, corpus.notes, corpus.queries, rebuild=len(texts) <= FULL_REBUILD_UP_TO)
        )
        figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        figures.update(_encode_reference(workspace, texts))  # loads torch: after the RSS reading
        figures["notes"] = workspace.note_count()
    figures.update(
        {
            "label": corpus.label,
            "passages": len(texts),
            "lexical_index_per_s": round(len(texts) / lexical_seconds, 1),
            "dense_index_per_s": round(len(texts) / dense_seconds, 1),
        }
    )
    figures["dense_index_vs_encode"] = round(figures["dense_index_per_s"] / figures["encode_reference_per_s"], 2)
    return figures


def bench_size(
    passages: int,
    scratch: Path,
    progress: Callable[[str], None],
    chroma: str | ChromaSettings | None = None,
    shared: Path | None = None,
) -> dict[str, Any]:
    """Every figure for ``passages`` passages of scaled real text.

    A smaller size's corpus is a prefix of a larger one's (same seed), so its embedding cache is
    copied in first: embedding is minutes per 10,000 passages here and is not what a larger size
    measures. The share it served is reported; the dense index rate counts only a cold cache.
    """
    from ..projections.dense import CACHE_NAME

    corpus = scaled_corpus(scratch / f"notes-{passages}", passages, shared or default_shared())
    store = scratch / f"store-{corpus.name}"
    smaller = sorted(
        (int(path.name.rsplit("-", 1)[1]) for path in scratch.glob("store-scaled-*") if path != store),
        reverse=True,
    )
    warm = next((size for size in smaller if size < passages), 0)
    if warm:
        store.mkdir(parents=True, exist_ok=True)
        shutil.copy(scratch / f"store-scaled-{warm}" / CACHE_NAME, store / CACHE_NAME)
    figures = bench_corpus(corpus, scratch, progress, chroma)
    figures["embedding_cache_warm_share"] = round(min(warm, passages) / passages, 3)
    if warm:
        figures["dense_index_per_s"] = figures["dense_index_vs_encode"] = None  # not a cold build
    return figures


def bench_named(
    name: str,
    scratch: Path,
    progress: Callable[[str], None],
    chroma: str | ChromaSettings | None = None,
    shared: Path | None = None,
) -> dict[str, Any]:
    """Every figure for one of :data:`CORPORA`."""
    shared = shared or default_shared()
    builders: dict[str, Callable[[], BenchCorpus]] = {
        "scifact": lambda: scifact_corpus(scratch / "notes-scifact", shared),
        "tldr-pages": lambda: tldr_corpus(scratch / "notes-tldr-pages", shared),
        "synthetic-90": lambda: synthetic_corpus(scratch / "notes-synthetic-90", 10_000),
    }
    return bench_corpus(builders[name](), scratch, progress, chroma)


def _search_after_change(workspace: Workspace, query: str) -> None:
    """The lexical lane as the first question after a change meets it: no statistic or weight kept."""
    workspace.lexical.forget_statistics()
    workspace.lexical.search(query, workspace.candidate_pool)


def _query_figures(workspace: Workspace, queries: list[str], texts: list[str]) -> dict[str, Any]:
    import bm25s

    dense = workspace.dense
    state = workspace.records.projection("dense")
    assert state is not None
    vectors = np.stack(list(dense.vectors_for([s.passage for s in workspace.passages().values()]).values()))
    query_vectors = {q: dense.embed_query(q) for q in queries}
    retriever = bm25s.BM25(k1=workspace.lexical.k1, b=workspace.lexical.b)
    retriever.index([analyze(text) for text in texts], show_progress=False)

    stages: dict[str, list[float]] = {}

    def answer(query: str) -> None:
        workspace.query(query, as_of=AS_OF)  # refreshing, as %context does: the change check is part of it
        for stage, ms in workspace.last_timings.items():
            stages.setdefault(stage, []).append(ms)

    e2e = _each(queries, answer)
    lexical = _each(queries, lambda q: workspace.lexical.search(q, workspace.candidate_pool))  # words kept
    lexical_cold = _each(queries, lambda q: _search_after_change(workspace, q))
    embed = _each(queries, dense.embed_query)
    dense_search = _each(queries, lambda q: dense.search_vector(query_vectors[q], workspace.candidate_pool, state))
    numpy_search = _each(queries, lambda q: np.argpartition(-(vectors @ query_vectors[q]), 50)[:50])
    bm25s_search = _each(queries, lambda q: retriever.retrieve([analyze(q) or ["record"]], k=50, show_progress=False))
    p50 = {
        name: _percentiles(samples)[0]
        for name, samples in {
            "e2e": e2e,
            "lexical": lexical,
            "lexical_cold": lexical_cold,
            "embed": embed,
            "dense": dense_search,
            "numpy": numpy_search,
            "bm25s": bm25s_search,
        }.items()
    }
    overhead = max(0.0, p50["e2e"] - p50["lexical"] - p50["embed"] - p50["dense"]) / p50["e2e"]
    return {
        "stages_p50_ms": {stage: round(statistics.median(samples), 2) for stage, samples in sorted(stages.items())},
        "e2e_p50_ms": round(p50["e2e"], 2),
        "e2e_p95_ms": round(_percentiles(e2e)[1], 2),
        "overhead_fraction": round(overhead, 3),
        "lexical_p50_ms": round(p50["lexical"], 2),
        "lexical_p95_ms": round(_percentiles(lexical)[1], 2),
        "bm25s_p50_ms": round(p50["bm25s"], 3),
        "lexical_vs_bm25s": round(p50["lexical"] / p50["bm25s"], 1),
        "lexical_cold_p50_ms": round(p50["lexical_cold"], 2),
        "lexical_cold_vs_bm25s": round(p50["lexical_cold"] / p50["bm25s"], 1),
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
    ours = workspace.dense.embedder
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


def _refresh_figures(workspace: Workspace, notes: Path, queries: list[str], rebuild: bool) -> dict[str, Any]:
    """A one-note edit: the refresh alone, and the first ``%context`` after it against a warm one."""
    target = sorted(notes.rglob("*.md"))[0]
    original = target.read_text(encoding="utf-8")
    warm = _percentiles(_each(queries[:20], lambda q: workspace.query(q, as_of=AS_OF)))[0]
    after_edit = []
    for round_ in range(5):
        target.write_text(original + f"\nOne more calibration line ({round_}).\n", encoding="utf-8")
        started = time.perf_counter()
        workspace.query(queries[round_], as_of=AS_OF)  # finds the change, refreshes, answers
        after_edit.append(1000 * (time.perf_counter() - started))
    target.write_text(original + "\nOne more calibration line.\n", encoding="utf-8")
    started = time.perf_counter()
    workspace.index()
    refresh_one = time.perf_counter() - started
    figures: dict[str, Any] = {
        "refresh_one_s": round(refresh_one, 3),
        "after_edit_ms": round(statistics.median(after_edit), 2),
        "after_edit_vs_warm": round(statistics.median(after_edit) / warm, 2),
    }
    if rebuild:
        started = time.perf_counter()
        workspace.lexical_lane.rebuild()  # a full rebuild of the next version, then the switch
        workspace.dense_lane.rebuild()
        full = time.perf_counter() - started
        figures.update({"full_rebuild_s": round(full, 2), "rebuild_vs_refresh": round(full / refresh_one, 1)})
    return figures


def cold_start(notes: Path, store: Path) -> dict[str, Any]:
    """``%load_ext`` and the first ``%context`` in a fresh interpreter, on an indexed store; the first
    query's stages too (the time outside them is opening the workspace), and what the process waited
    for (``cold_start_waits``): CPU seconds against wall seconds, blocks read from disk, major page
    faults, context switches, and the machine's load and unwritten data when it started."""
    script = textwrap.dedent(
        f"""
        import json, resource, time
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        t = time.perf_counter(); ip.run_line_magic("load_ext", "retrieval_kernel"); load = time.perf_counter() - t
        before, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        t = time.perf_counter()
        ip.run_line_magic("context", "--notes {notes} --store {store} --no-refresh record owner approval")
        first = time.perf_counter() - t
        after, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time() - cpu
        workspace = ip.magics_manager.registry["ContextMagics"]._last_workspace
        stages = workspace.last_timings if workspace is not None else {{}}
        waits = {{"cpu_s": cpu, **{{name: getattr(after, name) - getattr(before, name) for name in {_USAGE!r}}}}}
        figures = {{"load_ext_s": load, "first_query_s": first, "first_query_stages_ms": stages, "waits": waits}}
        print(json.dumps(figures))
        """
    )
    # As pip does at install: an editable install under PYTHONDONTWRITEBYTECODE=1 (set on these machines)
    # would otherwise compile the package's modules from source at every start, which a user's does not.
    compileall.compile_dir(Path(__file__).resolve().parents[1], quiet=1)
    machine = _machine_state()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    stages = {stage: round(ms, 1) for stage, ms in sorted(figures.pop("first_query_stages_ms").items())}
    waits = {name: round(value, 3) for name, value in figures.pop("waits").items()}
    return {
        **{name: round(value, 3) for name, value in figures.items()},
        "first_query_stages_ms": stages,
        "cold_start_waits": {**waits, **machine},
    }


# resource usage of the first query: disk blocks read, page faults served from disk, context switches
# the process asked for (waiting) and was made to take (another process had the core)
_USAGE = ("ru_inblock", "ru_majflt", "ru_nvcsw", "ru_nivcsw")


def _machine_state(meminfo: Path = Path("/proc/meminfo"), loadavg: Path = Path("/proc/loadavg")) -> dict[str, Any]:
    """The one-minute load and the data waiting to be written to disk (MB), where Linux says them."""
    state: dict[str, Any] = {}
    if loadavg.exists():
        state["load_1min"] = float(loadavg.read_text().split()[0])
    if meminfo.exists():
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
        for name in ("Dirty", "Writeback"):
            if name in fields:
                state[f"{name.lower()}_mb"] = round(int(fields[name].split()[0]) / 1024, 1)
    return state


def run_bench(
    sizes: list[int],
    progress: Callable[[str], None] = print,
    chroma: str | ChromaSettings | None = None,
    corpora: tuple[str, ...] = CORPORA,
    shared: Path | None = None,
) -> dict[str, Any]:
    """Every corpus in a fresh interpreter (its own peak memory), then the cold start on the smallest size."""
    scratch = Path(tempfile.mkdtemp(prefix="rk-bench-"))
    shared = shared or default_shared()
    try:
        output: dict[str, Any] = {"sizes": {}, "corpora": {}}
        for size in sizes:
            output["sizes"][str(size)] = _fresh(bench_size, size, scratch, chroma, shared)
            progress(json.dumps({str(size): output["sizes"][str(size)]}))
        for name in corpora:
            output["corpora"][name] = _fresh(bench_named, name, scratch, chroma, shared)
            progress(json.dumps({name: output["corpora"][name]}))
        if sizes:
            smallest = min(sizes)
            notes, store = scratch / f"notes-{smallest}", scratch / f"store-scaled-{smallest}"
            output.update(cold_start(notes, store))
            # Once more, in another fresh interpreter: right after the corpora the first one has met 4-13 s
            # outside the query's own stages, which a second cold start (or one run alone) does not.
            again = cold_start(notes, store)
            output.update(
                {
                    "load_ext_again_s": again["load_ext_s"],
                    "first_query_again_s": again["first_query_s"],
                    "cold_start_again_waits": again["cold_start_waits"],
                }
            )
        output["versions"] = versions()
        output["processor"] = processor()
        return output
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def processor(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The processor the figures were measured on, and the vector instructions that move them: ONNX
    Runtime's int8 products run exactly and fast with VNNI, and a product's BLAS kernel differs with
    AVX-512 (query embedding took 4.4 ms at 10,000 passages with both, 14.7 ms with AVX2 alone)."""
    flags: set[str] = set()
    model = platform.processor() or platform.machine()
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name":
                model = value.strip()
            elif name.strip() == "flags":
                flags = set(value.split())
                break
    return {
        "model": model,
        "cores": os.cpu_count(),
        "avx2": "avx2" in flags,
        "avx512": "avx512f" in flags,
        "vnni": bool(flags & {"avx512_vnni", "avx_vnni"}),
    }


def _fresh(bench: Callable[..., dict[str, Any]], what: Any, scratch: Path, chroma: Any, shared: Path) -> dict[str, Any]:
    """Run one corpus's bench in a new interpreter (spawned: nothing inherited, memory its own)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(bench, what, scratch, _stderr, chroma, shared).result()


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
