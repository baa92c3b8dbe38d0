"""The study runner: frozen inputs in, a receipt with metrics and gates out.

A suite folder holds ``suite.json`` (clock, caps, gates), ``notes/``, a question
file (JSONL: ``id``, ``question``, ``expected_module``, ``expected_heading``) and
``manifest.json`` (sha256 of every scored input). The runner refuses to score
when any frozen input differs from the manifest. Every question runs at every
cap; ranking is scored at ``rank_cap``. Ranking metrics come from ir_measures.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import ir_measures
from ir_measures import RR, P, Success

from ..corpus.notes import discover_notes
from ..errors import FrozenInputChangedError, SuiteError
from ..output.packet import Packet
from ..pipeline.freshness import freshness_label, parse_as_of, source_age_days
from ..pipeline.fusion import RRF_K
from ..pipeline.requests import CANDIDATE_POOL, DEFAULT_TOP, LANES
from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from .jsonl import read_jsonl

SUITE_FILE = "suite.json"
MANIFEST_FILE = "manifest.json"
QUESTION_KEYS = ("id", "question", "expected_module", "expected_heading")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the whole package, not only this stage


@dataclass(frozen=True)
class Question:
    """One frozen question and the passage that answers it."""

    id: str
    question: str
    expected_module: str
    expected_heading: str


@dataclass(frozen=True)
class Suite:
    """A loaded, not yet verified, evaluation suite."""

    root: Path
    name: str
    notes_dir: Path
    questions_path: Path
    frozen_questions: Path
    as_of: dt.date
    budget_unit: str
    caps: tuple[int, ...]
    rank_cap: int
    expected_observed_at: str | None
    gates: dict[str, dict[str, float]]
    manifest: dict[str, str]


# ---------------------------------------------------------------- loading


def load_suite(suite_dir: str | Path, questions: str | Path | None = None) -> Suite:
    """Read ``suite.json`` and ``manifest.json``; ``questions`` overrides the question file."""
    root = Path(suite_dir)
    config = read_json(root / SUITE_FILE)
    manifest = read_json(root / MANIFEST_FILE).get("files", {})
    try:
        caps = tuple(int(c) for c in config["caps"])
        suite = Suite(
            root=root,
            name=str(config["name"]),
            notes_dir=root / config.get("notes", "notes"),
            questions_path=Path(questions) if questions else root / config.get("questions", "questions.jsonl"),
            frozen_questions=root / config.get("questions", "questions.jsonl"),
            as_of=parse_as_of(str(config["as_of"])),
            budget_unit=str(config.get("budget_unit", "bytes")),
            caps=caps,
            rank_cap=int(config.get("rank_cap", max(caps))),
            expected_observed_at=config.get("expected_observed_at"),
            gates=dict(config.get("gates", {})),
            manifest=dict(manifest),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SuiteError(f"{root / SUITE_FILE}: missing or invalid setting: {exc}") from exc
    if suite.rank_cap not in suite.caps:
        raise SuiteError(f"{root / SUITE_FILE}: rank_cap {suite.rank_cap} is not one of the caps {list(caps)}")
    return suite


def suite_kind(suite_dir: str | Path) -> str:
    """``"retrieval"`` (the workshop study format) or what ``suite.json`` declares as ``kind``."""
    return str(read_json(Path(suite_dir) / SUITE_FILE).get("kind", "retrieval"))


def load_questions(path: Path) -> list[Question]:
    """Parse a JSONL question file; every line needs the four keys as non-empty strings."""
    questions: list[Question] = []
    for number, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise SuiteError(f"{path}:{number}: each line must be a JSON object with keys {list(QUESTION_KEYS)}")
        missing = [k for k in QUESTION_KEYS if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            raise SuiteError(f"{path}:{number}: needs non-empty string keys {missing}")
        if any(q.id == row["id"] for q in questions):
            raise SuiteError(f"{path}:{number}: question id {row['id']!r} is used twice; ids must be unique")
        questions.append(Question(*(row[k] for k in QUESTION_KEYS)))
    if not questions:
        raise SuiteError(f"{path}: no questions")
    return questions


def read_json(path: Path) -> dict[str, Any]:
    """A suite's JSON file (settings, manifest) as an object, or ``SuiteError`` naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SuiteError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: expected a JSON object")
    return data


# ---------------------------------------------------------------- freezing


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def current_inputs(suite: Suite) -> dict[str, str]:
    """sha256 of every input the manifest covers, as the suite folder holds them now."""
    files = [suite.root / SUITE_FILE, *discover_notes(suite.notes_dir)]
    if suite.frozen_questions.exists():
        files.append(suite.frozen_questions)
    return {p.relative_to(suite.root).as_posix(): sha256_file(p) for p in sorted(files)}


def verify_frozen(suite: Suite) -> dict[str, str]:
    """Return the input hashes, or raise ``FrozenInputChangedError`` naming every difference."""
    return check_manifest(suite.name, suite.root, suite.manifest, lambda: current_inputs(suite))


def check_manifest(
    name: str, root: Path, manifest: Mapping[str, str], inputs: Callable[[], dict[str, str]]
) -> dict[str, str]:
    """``inputs()`` (sha256 by relative path) if it equals the frozen ``manifest``; else
    ``FrozenInputChangedError`` naming every changed, missing and new file (any suite kind)."""
    if not manifest:
        raise SuiteError(f"{root / MANIFEST_FILE} lists no files; freeze the suite first")
    now = inputs()
    changed = sorted(k for k in manifest if k in now and now[k] != manifest[k])
    missing = sorted(set(manifest) - set(now))
    added = sorted(set(now) - set(manifest))
    if changed or missing or added:
        raise FrozenInputChangedError(
            f"refusing to score {name}: frozen inputs differ from {MANIFEST_FILE} "
            f"(changed: {changed}, missing: {missing}, new: {added}). "
            "Restore them, or write a new suite and freeze it before its first run."
        )
    return now


# ---------------------------------------------------------------- running


def run_suite(
    suite_dir: str | Path,
    questions: str | Path | None = None,
    store_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    lanes: Sequence[str] = LANES,
    chroma: str | ChromaSettings | None = None,
) -> dict[str, Any]:
    """Verify, run and score a suite; return the receipt (``receipt["passed"]`` says if every gate held).

    ``chroma`` is where the dense vectors live (as for :class:`Workspace`; default: the settings in force).
    """
    started = time.time()
    suite = load_suite(suite_dir, questions)
    inputs = verify_frozen(suite)
    question_list = load_questions(suite.questions_path)
    with indexed_workspace(suite.notes_dir, store_dir, lanes, chroma) as workspace:
        rows = [_run_question(suite, workspace, q, progress) for q in question_list]
    lane_config = {lane["name"]: lane["score_basis"] for row in rows for lane in row["lanes"]}
    metrics = _metrics(suite, rows)
    gates = check_gates(suite.gates, metrics)
    return {
        "suite": suite.name,
        "started_at": dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 3),
        "as_of": suite.as_of.isoformat(),
        "budget_unit": suite.budget_unit,
        "caps": list(suite.caps),
        "rank_cap": suite.rank_cap,
        "inputs": _inputs_record(suite, inputs),
        "implementation": implementation_hashes(),
        "versions": versions(),
        "config": {
            "lanes": lane_config,
            "fusion": f"reciprocal rank fusion, k={RRF_K}",
            "top": DEFAULT_TOP,
            "candidate_pool": CANDIDATE_POOL,
        },
        "metrics": metrics,
        "gates": gates,
        "passed": all(g["passed"] for g in gates.values()),
        "questions": rows,
    }


def _inputs_record(suite: Suite, inputs: dict[str, str]) -> dict[str, Any]:
    in_suite = suite.questions_path.resolve().parent == suite.root.resolve()
    key = suite.questions_path.name if in_suite else str(suite.questions_path)
    frozen = in_suite and key in suite.manifest
    return {
        "manifest_verified": True,
        "files": inputs,
        "questions": {"path": key, "sha256": sha256_file(suite.questions_path), "frozen": frozen},
    }


def _run_question(
    suite: Suite, workspace: Workspace, question: Question, progress: Callable[[str], None] | None
) -> dict[str, Any]:
    if progress:
        progress(question.id)
    packets = {
        cap: workspace.query(
            question.question,
            as_of=suite.as_of,
            refresh=False,
            max_bytes=cap if suite.budget_unit == "bytes" else None,
            max_chars=cap if suite.budget_unit == "chars" else None,
        )
        for cap in suite.caps
    }
    ranked = packets[suite.rank_cap].evidence
    expected_rank = next(
        (
            item.rank
            for item in ranked
            if (item.module, item.heading) == (question.expected_module, question.expected_heading)
        ),
        None,
    )
    return {
        "id": question.id,
        "question": question.question,
        "expected_module": question.expected_module,
        "expected_heading": question.expected_heading,
        "top_module": ranked[0].module if ranked else None,
        "top_heading": ranked[0].heading if ranked else None,
        "expected_rank": expected_rank,
        "ranking": [[item.module, item.heading] for item in ranked],
        "lanes": [
            {"name": lane.name, "status": lane.status, "candidates": lane.candidates, "score_basis": lane.score_basis}
            for lane in packets[suite.rank_cap].lanes
        ],
        "responses": {str(cap): _check_response(suite, packet, cap) for cap, packet in packets.items()},
    }


def _check_response(suite: Suite, packet: Packet, cap: int) -> dict[str, Any]:
    """Contract checks of one response: size, citations, freshness honesty."""
    text = packet.to_json()
    size = len(text.encode("utf-8")) if suite.budget_unit == "bytes" else len(text)
    exact = sum(_citation_exact(suite.notes_dir, item) for item in packet.evidence)
    return {
        "size": size,
        "within_cap": size <= cap and size == packet.budget.used,
        "evidence": len(packet.evidence),
        "citations_checked": len(packet.evidence),
        "citations_exact": exact,
        "freshness_honest": all(_freshness_honest(suite, item) for item in packet.evidence),
        "abstained": packet.abstained,
    }


def _citation_exact(notes_dir: Path, item: Any) -> bool:
    """Compare an excerpt with its cited lines, read from disk independently of the parser."""
    lines = (notes_dir / item.path).read_text(encoding="utf-8").split("\n")
    return bool("\n".join(lines[item.line_start - 1 : item.line_end]) == item.excerpt)


def _freshness_honest(suite: Suite, item: Any) -> bool:
    """Source time kept (not replaced by index time), its age and staleness right, not live-verified."""
    age = source_age_days(item.observed_at, suite.as_of)
    return bool(
        item.live_verified is False
        and item.observed_at == suite.expected_observed_at
        and item.source_age_days == age
        and item.freshness == freshness_label(age, item.fresh_for_days)
        and bool(item.indexed_at)
        and item.indexed_at != item.observed_at
    )


# ---------------------------------------------------------------- scoring


def _metrics(suite: Suite, rows: list[dict[str, Any]]) -> dict[str, Any]:
    responses = [r for row in rows for r in row["responses"].values()]
    ranking = _ranking_metrics(rows)
    rank_sizes = [row["responses"][str(suite.rank_cap)]["size"] for row in rows]
    checked = sum(r["citations_checked"] for r in responses)
    exact = sum(r["citations_exact"] for r in responses)
    within = sum(r["within_cap"] for r in responses)
    honest = sum(r["freshness_honest"] for r in responses)
    return {
        "questions": len(rows),
        **ranking,
        "citations_exact": exact,
        "citations_checked": checked,
        "citations_exact_fraction": exact / checked if checked else 0.0,
        "within_cap": within,
        "responses": len(responses),
        "within_cap_fraction": within / len(responses),
        "freshness_honest": honest,
        "freshness_honest_fraction": honest / len(responses),
        "rank_cap_size_min": min(rank_sizes),
        "rank_cap_size_max": max(rank_sizes),
    }


def _ranking_metrics(rows: list[dict[str, Any]]) -> dict[str, float]:
    """module_at_1, passage_at_1, passage_in_top5 and passage_mrr_at_10 via ir_measures."""
    module_qrels = {row["id"]: {row["expected_module"]: 1} for row in rows}
    passage_qrels = {row["id"]: {_passage_key(row["expected_module"], row["expected_heading"]): 1} for row in rows}
    module_run = {row["id"]: _run_scores(module for module, _ in row["ranking"]) for row in rows}
    passage_run = {row["id"]: _run_scores(_passage_key(*pair) for pair in row["ranking"]) for row in rows}
    module_at_1 = _per_query_mean(P @ 1, module_qrels, module_run)
    passage = {
        "passage_at_1": _per_query_mean(P @ 1, passage_qrels, passage_run),
        "passage_in_top5": _per_query_mean(Success @ 5, passage_qrels, passage_run),
        "passage_mrr_at_10": _per_query_mean(RR @ 10, passage_qrels, passage_run),
    }
    return {"module_at_1": module_at_1, **passage}


def _passage_key(module: str, heading: str) -> str:
    return f"{module}\x1f{heading}"


def _run_scores(keys: Any) -> dict[str, float]:
    """Ranked keys → descending scores (the first occurrence of a key keeps its best rank)."""
    scores: dict[str, float] = {}
    for rank, key in enumerate(keys, 1):
        scores.setdefault(key, 1.0 / rank)
    return scores


def _per_query_mean(measure: Any, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> float:
    """Mean over every question; a question with an empty ranking scores 0 (ir_measures would skip it)."""
    values = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return sum(values.get(qid, 0.0) for qid in qrels) / len(qrels)


@contextmanager
def indexed_workspace(
    notes_dir: Path,
    store_dir: str | Path | None,
    lanes: Sequence[str],
    chroma: str | ChromaSettings | None,
) -> Iterator[Workspace]:
    """A workspace over a suite's notes, indexed, in ``store_dir`` (else a scratch store removed after)."""
    with (
        tempfile.TemporaryDirectory(prefix="rk-eval-") as scratch,
        Workspace(notes_dir, Path(store_dir) if store_dir else Path(scratch), lanes=lanes, chroma=chroma) as workspace,
    ):
        workspace.index()
        yield workspace


def check_gates(declared: dict[str, dict[str, float]], metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each declared gate (``min`` and/or ``max``) with the metric's value and whether it held."""
    gates: dict[str, dict[str, Any]] = {}
    for name, rule in sorted(declared.items()):
        if name not in metrics:
            raise SuiteError(f"gate {name!r} names no metric; known: {sorted(metrics)}")
        value = metrics[name]
        passed = value >= rule.get("min", float("-inf")) and value <= rule.get("max", float("inf"))
        gates[name] = {**rule, "value": value, "passed": bool(passed)}
    return gates


# ---------------------------------------------------------------- provenance


def implementation_hashes() -> dict[str, Any]:
    """sha256 of every source file of the package, and one digest over all of them."""
    sources = sorted(p for p in PACKAGE_ROOT.rglob("*") if p.suffix in (".py", ".json"))  # code and fitted models
    files = {p.relative_to(PACKAGE_ROOT).as_posix(): sha256_file(p) for p in sources}
    combined = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return {"combined_sha256": combined, "files": files}


def versions() -> dict[str, str]:
    """Versions of the interpreter and of the libraries that shape results."""
    found = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("retrieval_kernel", "whoosh-reloaded", "ir-measures", "pyyaml"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found
