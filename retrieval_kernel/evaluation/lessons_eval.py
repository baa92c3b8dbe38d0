"""The applicability evaluation (seed 001's protocol on our own lessons).

A lessons suite (``suite.json`` with ``"kind": "lessons"``) holds
``lessons/<family>/<id>.md`` (one lesson per note, its claim capsule in the front
matter), ``queries/<family>.jsonl`` (labelled queries), ``splits.json`` (family →
``dev`` / ``calibration`` / ``holdout``) and ``manifest.json`` (sha256 of every
scored input). One split is scored per run, on a corpus of that split's families
only (the other splits' lessons are never indexed, read or scored).

Every method answers the same queries from the same index:

* ``selector``: :class:`~retrieval_kernel.applicability.RuleSelector` over the
  fused candidates of every lane (``CANDIDATE_POOL`` passages grouped by note);
* ``dense_top5`` / ``dense_top8`` / ``dense_top25``: the first K notes of the dense
  lane (no cosine floor), passages grouped by note in rank order;
* ``dense_cutoff``: every note whose best passage cosine reaches the cutoff chosen
  on the calibration split (``selector_calibration.json``);
* ``hybrid_top8``: the first 8 notes of the fused ranking the selector starts from.

Metrics per method: precision (useful returned / returned, over all queries),
coverage (needs covered / needs, over answerable queries), critical misses, unsafe
results, mean records returned, returned characters (the returned notes' passage
text), no-answer accuracy (no-answer queries answered empty), and p50/p95
latency: ``p50_ms``/``p95_ms`` time the selection step with candidates already
retrieved; ``pipeline_p50_ms``/``pipeline_p95_ms`` the whole query (lanes, fusion,
grouping, selection).
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..applicability import (
    CandidateRecord,
    RuleSelector,
    Selector,
    Thresholds,
    attach_clause_cosines,
    calibration_data,
    group_candidates,
)
from ..errors import SuiteError
from ..pipeline.lanes import DENSE_MIN_COSINE
from ..pipeline.requests import CANDIDATE_POOL, LANES
from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from .jsonl import read_jsonl
from .suites import (
    MANIFEST_FILE,
    SUITE_FILE,
    check_manifest,
    implementation_hashes,
    read_json,
    sha256_file,
    versions,
)

SPLITS = ("dev", "calibration", "holdout")
SPLITS_FILE = "splits.json"
QUERY_KEYS = ("id", "family", "query", "conditions", "needs", "unsafe", "no_answer")
DENSE_KS = (5, 8, 25)
HYBRID_K = 8
METHODS = ("selector", "dense_top8", "dense_top5", "dense_top25", "dense_cutoff", "hybrid_top8")
GATED_METHOD = "selector"


@dataclass(frozen=True)
class LessonsSuite:
    """A loaded lessons suite (not yet verified)."""

    root: Path
    name: str
    lessons_dir: Path
    queries_dir: Path
    splits: dict[str, str]
    gates: dict[str, dict[str, float]]
    manifest: dict[str, str]

    def families(self, split: str) -> list[str]:
        return sorted(family for family, where in self.splits.items() if where == split)


def load_lessons_suite(suite_dir: str | Path) -> LessonsSuite:
    """Read ``suite.json``, ``splits.json`` and (when present) ``manifest.json``."""
    root = Path(suite_dir)
    config = read_json(root / SUITE_FILE)
    manifest_path = root / MANIFEST_FILE
    manifest = read_json(manifest_path).get("files", {}) if manifest_path.exists() else {}
    try:
        splits = read_json(root / config.get("splits", SPLITS_FILE))
        suite = LessonsSuite(
            root=root,
            name=str(config["name"]),
            lessons_dir=root / config.get("lessons", "lessons"),
            queries_dir=root / config.get("queries", "queries"),
            splits={str(family): str(split) for family, split in splits.items()},
            gates=dict(config.get("gates", {})),
            manifest=dict(manifest),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SuiteError(f"{root / SUITE_FILE}: missing or invalid setting: {exc}") from exc
    unknown = sorted({split for split in suite.splits.values()} - set(SPLITS))
    if unknown:
        raise SuiteError(f"{root / SPLITS_FILE}: splits must be {', '.join(SPLITS)}; found {unknown}")
    return suite


def lessons_inputs(suite: LessonsSuite) -> dict[str, str]:
    """sha256 of every scored input, by relative path: splits.json, every lesson, every query file,
    and suite.json when the manifest lists it (it holds the gates, not data; a manifest may leave it out).
    """
    files = [suite.root / SPLITS_FILE]
    if not suite.manifest or SUITE_FILE in suite.manifest:
        files.insert(0, suite.root / SUITE_FILE)
    files += sorted(p for p in suite.lessons_dir.rglob("*.md") if p.is_file())
    files += sorted(p for p in suite.queries_dir.glob("*.jsonl") if p.is_file())
    return {p.relative_to(suite.root).as_posix(): sha256_file(p) for p in files if p.exists()}


def verify_lessons_frozen(suite: LessonsSuite) -> dict[str, str]:
    """Return the input hashes, or raise ``FrozenInputChangedError`` naming every difference."""
    return check_manifest(suite.name, suite.root, suite.manifest, lambda: lessons_inputs(suite))


def load_lesson_queries(suite: LessonsSuite, split: str) -> list[dict[str, Any]]:
    """The labelled queries of ``split``'s families (only their files are read)."""
    if split not in SPLITS:
        raise SuiteError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    families = suite.families(split)
    if not families:
        raise SuiteError(f"{suite.root / SPLITS_FILE} assigns no family to the {split} split")
    queries: list[dict[str, Any]] = []
    for family in families:
        path = suite.queries_dir / f"{family}.jsonl"
        for number, row in read_jsonl(path, "query file"):
            missing = [key for key in QUERY_KEYS if not isinstance(row, dict) or key not in row]
            if missing:
                raise SuiteError(f"{path}:{number}: missing keys {missing}")
            if row["family"] != family:
                raise SuiteError(f"{path}:{number}: family {row['family']!r} in the file of {family!r}")
            queries.append(row)
    if len({q["id"] for q in queries}) != len(queries):
        raise SuiteError(f"query ids of the {split} split must be unique")
    return queries


# ---------------------------------------------------------------- running


@dataclass
class SplitRun:
    """An indexed corpus of one split's families, and its queries, ready to be scored (a context manager)."""

    suite: LessonsSuite
    split: str
    queries: list[dict[str, Any]]
    workspace: Workspace
    scratch: Path

    def close(self) -> None:
        self.workspace.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> SplitRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_split(
    suite_dir: str | Path | LessonsSuite,
    split: str,
    verify: bool = True,
    lanes: Sequence[str] = LANES,
    chroma: str | ChromaSettings | None = None,
) -> tuple[SplitRun, dict[str, str] | None]:
    """Load (and, with ``verify``, check against the manifest) a suite; index ``split``'s lessons.

    The corpus is a scratch copy of ``lessons/<family>/`` for the split's families only; ``chroma``
    is where the dense vectors live (as for :class:`Workspace`; default: the settings in force).
    """
    suite = suite_dir if isinstance(suite_dir, LessonsSuite) else load_lessons_suite(suite_dir)
    inputs = verify_lessons_frozen(suite) if verify else None
    queries = load_lesson_queries(suite, split)
    scratch = Path(tempfile.mkdtemp(prefix=f"rk-lessons-{split}-"))
    notes = scratch / "notes"
    notes.mkdir()
    for family in suite.families(split):
        source = suite.lessons_dir / family
        if not source.is_dir():
            shutil.rmtree(scratch, ignore_errors=True)
            raise SuiteError(f"{source} does not exist: the {split} split names family {family!r}")
        shutil.copytree(source, notes / family)
    workspace = Workspace(notes, scratch / "store", lanes=lanes, chroma=chroma)
    try:
        workspace.index()
    except Exception:
        workspace.close()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return SplitRun(suite, split, queries, workspace, scratch), inputs


@dataclass(frozen=True)
class Retrieved:
    """One query's retrieval, shared by every method: fused candidates and the dense ranking."""

    candidates: list[CandidateRecord]
    dense: list[CandidateRecord]  # dense lane alone, no cosine floor, grouped by note
    fused_ms: float  # lanes + fusion + grouping for the fused candidates
    dense_ms: float  # dense lane + grouping


def retrieve(workspace: Workspace, query: str, lanes: Sequence[str] = LANES) -> Retrieved:
    """Run the lanes once for the fused pool (the workspace's own dense floor) and once dense-only (no floor)."""
    started = time.perf_counter()
    chosen = [lane for lane in lanes if lane in workspace.lanes]
    candidates = group_candidates(workspace.retrieve(query, chosen, scopes="*"), CANDIDATE_POOL)
    if "dense" in chosen:
        candidates = attach_clause_cosines(workspace, query, candidates)
    fused_ms = (time.perf_counter() - started) * 1000
    dense: list[CandidateRecord] = []
    dense_ms = 0.0
    if "dense" in workspace.lanes:
        floor = workspace.dense_min_cosine
        workspace.dense_min_cosine = -1.0  # the baselines rank every vector; the cutoff baseline sets its own floor
        try:
            started = time.perf_counter()
            if problem := workspace.lane("dense").problem():
                raise SuiteError(f"the dense lane is unavailable: {problem}")
            dense = group_candidates(workspace.retrieve(query, ["dense"], scopes="*"))
            dense_ms = (time.perf_counter() - started) * 1000
        finally:
            workspace.dense_min_cosine = floor
    return Retrieved(candidates, dense, fused_ms, dense_ms)


def dense_cosine(candidate: CandidateRecord) -> float:
    """The best cosine of a note's passages in the dense lane (-1 when the lane did not find it)."""
    hit = candidate.lanes.get("dense")
    return hit[1] if hit else -1.0


def baseline_choices(retrieved: Retrieved, cutoff: float | None) -> dict[str, tuple[list[CandidateRecord], float]]:
    """Each baseline's returned records and the time it took to choose them (ms)."""
    chosen: dict[str, tuple[list[CandidateRecord], float]] = {}
    for k in DENSE_KS:
        started = time.perf_counter()
        records = retrieved.dense[:k]
        chosen[f"dense_top{k}"] = (records, (time.perf_counter() - started) * 1000)
    if cutoff is not None:
        started = time.perf_counter()
        records = [c for c in retrieved.dense if dense_cosine(c) >= cutoff]
        chosen["dense_cutoff"] = (records, (time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    chosen[f"hybrid_top{HYBRID_K}"] = (retrieved.candidates[:HYBRID_K], (time.perf_counter() - started) * 1000)
    return chosen


def score_returned(query: Mapping[str, Any], returned: Sequence[str]) -> dict[str, Any]:
    """One query's outcome for one method's returned record ids."""
    useful_ids = {record for need in query["needs"] for record in need["records"]}
    unsafe_ids = set(query["unsafe"])
    covered = [need["group"] for need in query["needs"] if set(need["records"]) & set(returned)]
    missed = [need for need in query["needs"] if not set(need["records"]) & set(returned)]
    return {
        "returned": list(returned),
        "useful": [r for r in returned if r in useful_ids],
        "unsafe": [r for r in returned if r in unsafe_ids],
        "needs": len(query["needs"]),
        "covered": covered,
        "missed": [need["group"] for need in missed],
        "critical_missed": [need["group"] for need in missed if need.get("critical")],
    }


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 3)


def method_metrics(queries: Sequence[Mapping[str, Any]], outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate one method's per-query outcomes (same order as ``queries``)."""
    returned = sum(len(o["returned"]) for o in outcomes)
    useful = sum(len(o["useful"]) for o in outcomes)
    needs = sum(o["needs"] for q, o in zip(queries, outcomes, strict=True) if not q["no_answer"])
    covered = sum(len(o["covered"]) for q, o in zip(queries, outcomes, strict=True) if not q["no_answer"])
    no_answer = [o for q, o in zip(queries, outcomes, strict=True) if q["no_answer"]]
    selection = [o["ms"] for o in outcomes if "ms" in o]
    pipeline = [o["pipeline_ms"] for o in outcomes if "pipeline_ms" in o]
    chars = sum(o.get("chars", 0) for o in outcomes)
    return {
        "queries": len(outcomes),
        "precision": round(useful / returned, 4) if returned else None,
        "coverage": round(covered / needs, 4) if needs else None,
        "critical_misses": sum(len(o["critical_missed"]) for o in outcomes),
        "unsafe_results": sum(len(o["unsafe"]) for o in outcomes),
        "mean_returned": round(returned / len(outcomes), 3) if outcomes else None,
        "returned_chars": chars,
        "mean_returned_chars": round(chars / len(outcomes), 1) if outcomes else None,
        "no_answer_accuracy": round(sum(not o["returned"] for o in no_answer) / len(no_answer), 4)
        if no_answer
        else None,
        "returned": returned,
        "useful": useful,
        "needs": needs,
        "needs_covered": covered,
        "no_answer_queries": len(no_answer),
        "p50_ms": _percentile(selection, 50),
        "p95_ms": _percentile(selection, 95),
        "pipeline_p50_ms": _percentile(pipeline, 50),
        "pipeline_p95_ms": _percentile(pipeline, 95),
    }


def evaluate_queries(
    run: SplitRun,
    selector: Selector,
    cutoff: float | None,
    progress: Callable[[str], None] | None = None,
    retrieved: Mapping[str, Retrieved] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Run every method on every query; return per-query rows and per-method outcomes."""
    rows: list[dict[str, Any]] = []
    outcomes: dict[str, list[dict[str, Any]]] = {method: [] for method in METHODS}
    if cutoff is None:
        outcomes.pop("dense_cutoff")
    for query in run.queries:
        got = retrieved[query["id"]] if retrieved else retrieve(run.workspace, query["query"])
        started = time.perf_counter()
        selection = selector.select(query["query"], got.candidates, query.get("conditions") or None)
        select_ms = (time.perf_counter() - started) * 1000
        chars = {c.record: c.chars for c in [*got.candidates, *got.dense]}
        row: dict[str, Any] = {"id": query["id"], "family": query["family"], "no_answer": query["no_answer"]}
        selected = selection.ids
        outcome = {
            **score_returned(query, selected),
            "ms": round(select_ms, 3),
            "pipeline_ms": round(got.fused_ms + select_ms, 3),
            "chars": sum(chars.get(r, 0) for r in selected),
        }
        outcomes["selector"].append(outcome)
        row["selector"] = {
            **outcome,
            "rejected": [[r.record, r.reason] for r in selection.rejected],
            "conditions": {k: list(v) for k, v in selection.conditions.items()},
        }
        row["candidates"] = len(got.candidates)
        row["needs_in_candidates"] = score_returned(query, [c.record for c in got.candidates])["covered"]
        for method, (records, ms) in baseline_choices(got, cutoff).items():
            ids = [c.record for c in records]
            base = got.dense_ms if method.startswith("dense") else got.fused_ms
            result = {
                **score_returned(query, ids),
                "ms": round(ms, 3),
                "pipeline_ms": round(base + ms, 3),
                "chars": sum(c.chars for c in records),
            }
            outcomes[method].append(result)
            row[method] = result
        rows.append(row)
        if progress:
            progress(f"{query['id']}: selector returned {len(selected)}")
    return rows, outcomes


def flat_metrics(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{"selector.precision": 0.93, ...}`` for gates; undotted names read the gated method."""
    flat: dict[str, Any] = {}
    for method, values in metrics.items():
        for name, value in values.items():
            flat[f"{method}.{name}"] = value
            if method == GATED_METHOD:
                flat[name] = value
    return flat


def lessons_gates(
    declared: Mapping[str, Mapping[str, float]], metrics: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Each gate with its value; a metric that could not be measured (``None``) fails its gate."""
    flat = flat_metrics(metrics)
    gates: dict[str, Any] = {}
    for name, rule in sorted(declared.items()):
        if name not in flat:
            raise SuiteError(f"gate {name!r} names no metric; known: {sorted(flat)}")
        value = flat[name]
        passed = value is not None and rule.get("min", float("-inf")) <= value <= rule.get("max", float("inf"))
        gates[name] = {**rule, "value": value, "passed": bool(passed)}
    return gates


def run_lessons_suite(
    suite_dir: str | Path | LessonsSuite,
    split: str = "holdout",
    verify: bool = True,
    selector: Selector | None = None,
    lanes: Sequence[str] = LANES,
    progress: Callable[[str], None] | None = None,
    calibration: str | Path | None = None,
    chroma: str | ChromaSettings | None = None,
) -> dict[str, Any]:
    """Verify, run and score ``split`` of a lessons suite; ``receipt["passed"]`` says if every gate held.

    ``verify=False`` (development only) skips the manifest check and says so in the receipt.
    """
    started = time.time()
    calibrated = calibration_data(calibration)
    thresholds = Thresholds.load(calibration)
    selector = selector or RuleSelector(thresholds)
    cutoff = calibrated.get("dense_cutoff")
    run, inputs = open_split(suite_dir, split, verify, lanes, chroma)
    with run:
        rows, outcomes = evaluate_queries(run, selector, cutoff, progress)
        passages = run.workspace.passage_count()
        notes = run.workspace.note_count()
    metrics = {method: method_metrics(run.queries, outcomes[method]) for method in outcomes}
    gates = lessons_gates(run.suite.gates, metrics)
    return {
        "kind": "lessons",
        "suite": run.suite.name,
        "split": split,
        "families": run.suite.families(split),
        "started_at": dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 3),
        "inputs": {
            "manifest_verified": inputs is not None,
            "files": inputs if inputs is not None else lessons_inputs(run.suite),
        },
        "implementation": implementation_hashes(),
        "versions": versions(),
        "config": {
            "lanes": list(lanes),
            "candidate_pool": CANDIDATE_POOL,
            "dense_floor_for_selector": DENSE_MIN_COSINE,
            "selector": getattr(selector, "name", type(selector).__name__),
            "thresholds": thresholds.to_dict(),
            "dense_cutoff": cutoff,
            "calibration": {
                "file": str(calibration) if calibration else "retrieval_kernel/applicability/selector_calibration.json",
                "chosen_on": calibrated.get("split"),
                "families": calibrated.get("families"),
            },
            "corpus": {"notes": notes, "passages": passages, "families": run.suite.families(split)},
        },
        "metrics": metrics,
        "pipeline_latency": {
            method: {"p50_ms": m["pipeline_p50_ms"], "p95_ms": m["pipeline_p95_ms"]} for method, m in metrics.items()
        },
        "gates": gates,
        "passed": all(gate["passed"] for gate in gates.values()),
        "questions": rows,
    }


def lessons_summary(receipt: Mapping[str, Any]) -> str:
    """The comparison table and the gates, for the command line."""
    columns = [
        ("precision", "prec"),
        ("coverage", "cover"),
        ("critical_misses", "crit"),
        ("unsafe_results", "unsafe"),
        ("mean_returned", "mean_n"),
        ("returned_chars", "chars"),
        ("no_answer_accuracy", "no_ans"),
        ("p50_ms", "p50ms"),
        ("p95_ms", "p95ms"),
        ("pipeline_p95_ms", "pipe95"),
    ]
    header = f"{'method':13}" + "".join(f"{label:>9}" for _, label in columns)
    lines = [
        f"lessons suite {receipt['suite']}, split {receipt['split']} ({len(receipt['questions'])} queries)",
        header,
    ]
    for method, values in receipt["metrics"].items():
        cells = []
        for key, _ in columns:
            value = values.get(key)
            cells.append(f"{'-' if value is None else value:>9}")
        lines.append(f"{method:13}" + "".join(cells))
    for name, gate in receipt["gates"].items():
        lines.append(f"gate {name:28} {'pass' if gate['passed'] else 'FAIL'} ({gate['value']})")
    return "\n".join(lines)


def write_manifest(suite_dir: str | Path, frozen_on: str | None = None) -> dict[str, Any]:
    """The manifest a freeze would write for this suite (returned, not written)."""
    suite = load_lessons_suite(suite_dir)
    return {
        "frozen_on": frozen_on or dt.date.today().isoformat(),
        "note": (
            "sha256 of every scored input; written before the first scored run; "
            "the runner refuses to score if any differs"
        ),
        "files": lessons_inputs(suite),
    }


__all__ = [
    "METHODS",
    "LessonsSuite",
    "Retrieved",
    "SplitRun",
    "baseline_choices",
    "evaluate_queries",
    "lessons_gates",
    "lessons_summary",
    "load_lesson_queries",
    "load_lessons_suite",
    "method_metrics",
    "open_split",
    "retrieve",
    "run_lessons_suite",
    "score_returned",
    "verify_lessons_frozen",
    "write_manifest",
]
