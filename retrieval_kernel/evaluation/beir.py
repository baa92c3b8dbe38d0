"""BEIR benchmarks through the product's own pipeline.

A BEIR folder (``corpus.jsonl[.gz]``, ``queries.jsonl``, ``qrels/SPLIT.tsv``) is
written out as one Markdown note per document (``# title`` then the text, front
matter ``id`` = the BEIR doc id) and indexed by the same :class:`Workspace` that
``%context`` uses: record store, Whoosh projection, Chroma projection. Each
method ranks with the workspace's own lanes and fusion; a document scores as its
best passage. Metrics come from ir_measures: nDCG@10, R@100, RR@10 (MRR@10).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ir_measures
from ir_measures import RR, R, nDCG

from ..errors import SuiteError
from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from .suites import versions

METHODS: dict[str, tuple[str, ...]] = {"lexical": ("lexical",), "dense": ("dense",), "hybrid": ("lexical", "dense")}
MEASURES = {"ndcg_at_10": nDCG @ 10, "recall_at_100": R @ 100, "mrr_at_10": RR @ 10}
POOL = 100  # candidates per lane: enough for R@100
ONE_PASSAGE = 1_000_000  # a BEIR document stays one passage


@dataclass(frozen=True)
class BeirData:
    """One BEIR split: documents, the split's queries, and their relevance judgements."""

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(data_dir: str | Path, split: str = "test") -> BeirData:
    """Read a BEIR folder; only queries that appear in ``qrels/SPLIT.tsv`` are kept."""
    root = Path(data_dir)
    qrels = _read_qrels(root / "qrels" / f"{split}.tsv")
    corpus = {row["_id"]: (row.get("title") or "", row.get("text") or "") for row in _jsonl(_corpus_file(root))}
    queries = {row["_id"]: row["text"] for row in _jsonl(root / "queries.jsonl") if row["_id"] in qrels}
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise SuiteError(f"{root}: qrels name queries missing from queries.jsonl: {missing[:5]}")
    return BeirData(root.name, corpus, queries, qrels)


def _corpus_file(root: Path) -> Path:
    for name in ("corpus.jsonl", "corpus.jsonl.gz"):
        if (root / name).exists():
            return root / name
    raise SuiteError(f"{root}: no corpus.jsonl or corpus.jsonl.gz")


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)
    except (OSError, json.JSONDecodeError) as exc:
        raise SuiteError(f"cannot read {path}: {exc}") from exc


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SuiteError(f"cannot read qrels {path}: {exc}") from exc
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines[1:], 2):  # line 1 is the header: query-id, corpus-id, score
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not fields[2].strip().lstrip("-").isdigit():
            raise SuiteError(f"{path}:{number}: expected 'query-id<TAB>corpus-id<TAB>score', got {line!r}")
        qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    return qrels


# ---------------------------------------------------------------- corpus → notes


def write_notes(corpus: dict[str, tuple[str, str]], notes_dir: Path) -> None:
    """One Markdown note per document; unchanged files are left alone (so re-indexing is incremental)."""
    notes_dir.mkdir(parents=True, exist_ok=True)
    for doc_id, (title, text) in corpus.items():
        path = notes_dir / f"{_safe_name(doc_id)}.md"
        content = note_text(doc_id, title, text)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")


def note_text(doc_id: str, title: str, text: str) -> str:
    heading = " ".join(title.split()) or doc_id
    return f"---\nid: {json.dumps(doc_id)}\n---\n# {heading}\n\n{text.strip()}\n"


def _safe_name(doc_id: str) -> str:
    """A file name for a doc id; ids that needed changing get a hash suffix so they cannot collide."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in doc_id)
    return safe if safe == doc_id else f"{safe}-{hashlib.sha256(doc_id.encode()).hexdigest()[:10]}"


# ---------------------------------------------------------------- running


def rank_documents(workspace: Workspace, query: str, lanes: Sequence[str]) -> dict[str, float]:
    """Document run for one query: each document's best fused passage score."""
    scores: dict[str, float] = {}
    for candidate in workspace.retrieve(query, lanes, scopes="*"):
        scores.setdefault(candidate.stored.passage.module, candidate.score)
    return scores


def evaluate(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Mean and per-query scores; a query with an empty run scores 0 (not skipped)."""
    per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys(MEASURES, 0.0) for qid in qrels}
    names = {measure: name for name, measure in MEASURES.items()}
    for metric in ir_measures.iter_calc(list(MEASURES.values()), qrels, run):
        per_query[metric.query_id][names[metric.measure]] = metric.value
    means = {name: sum(row[name] for row in per_query.values()) / len(per_query) for name in MEASURES}
    return {**means, "per_query": per_query}


def run_beir(
    data_dir: str | Path,
    store_dir: str | Path,
    split: str = "test",
    methods: Sequence[str] = tuple(METHODS),
    embedder: str = "onnx-int8",
    progress: Callable[[str], None] | None = None,
    chroma: str | ChromaSettings | None = None,
) -> dict[str, Any]:
    """Index a BEIR corpus through the workspace and score each method; returns the RUN.json shape.

    ``chroma`` is where the dense vectors live (as for :class:`Workspace`; default: the settings in force).
    """
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SuiteError(f"unknown methods {unknown}; choose from {list(METHODS)}")
    data = load_beir(data_dir, split)
    store = Path(store_dir)
    notes = store / "notes"
    write_notes(data.corpus, notes)
    needed = sorted({lane for method in methods for lane in METHODS[method]})
    output: dict[str, Any] = {
        "dataset": data.name,
        "split": split,
        "documents": len(data.corpus),
        "queries": len(data.queries),
        "methods": {},
    }
    with Workspace(
        notes,
        store / "index",
        max_passage_chars=ONE_PASSAGE,
        lanes=needed,
        embedder=embedder,
        dense_min_cosine=-1.0,
        chroma=chroma,
    ) as workspace:
        workspace.candidate_pool = POOL
        timings = _index_timings(workspace, needed, progress)
        for method in methods:
            started = time.perf_counter()
            run = {qid: rank_documents(workspace, text, METHODS[method]) for qid, text in data.queries.items()}
            seconds = time.perf_counter() - started
            scores = evaluate(run, data.qrels)
            output["methods"][method] = {
                **{name: round(scores[name], 4) for name in MEASURES},
                "per_query": scores["per_query"],
                "seconds": {
                    "index": round(sum(timings[lane] for lane in METHODS[method]), 2),
                    "queries": round(seconds, 2),
                    "per_query_ms": round(1000 * seconds / len(data.queries), 2),
                },
            }
            if progress:
                progress(f"{method}: nDCG@10 {scores['ndcg_at_10']:.4f}")
        output["lanes"] = {"lexical": workspace.lexical.score_basis, "embedder": workspace.embedder}
    output["versions"] = versions()
    return output


def _index_timings(
    workspace: Workspace, lanes: Sequence[str], progress: Callable[[str], None] | None
) -> dict[str, float]:
    """Index the notes, timing the record store + lexical projection and the dense projection apart."""
    timings: dict[str, float] = {}
    dense_wanted = "dense" in lanes
    workspace.lanes = tuple(lane for lane in workspace.lanes if lane != "dense")
    started = time.perf_counter()
    workspace.index()
    timings["lexical"] = time.perf_counter() - started
    if dense_wanted:
        workspace.lanes = (*workspace.lanes, "dense")
        started = time.perf_counter()
        workspace.index()
        timings["dense"] = time.perf_counter() - started
        if "dense" in workspace.lane_errors:
            raise SuiteError(f"the dense lane failed to index: {workspace.lane_errors['dense']}")
    if progress:
        progress("indexed: " + ", ".join(f"{lane} {secs:.1f}s" for lane, secs in timings.items()))
    return timings
