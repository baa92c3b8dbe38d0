"""Per-call latency of ``context`` over a real MCP stdio client, against the CLI per call.

For each corpus (SciFact's 5,183 abstracts, one note each; a seeded synthetic corpus of 10,000
passages as ``retrieval-kernel bench`` builds it) the notes are indexed once into
``.retrieval_kernel/bench-mcp/NAME/`` (reused when present). Then, on the same questions:

* MCP: one ``retrieval-kernel mcp`` subprocess driven by the SDK's stdio client; the first call
  (which may still wait for the workspace to open) is reported apart, the rest are timed;
* CLI: ``retrieval-kernel query QUESTION`` per question, a fresh process each time (it pays the
  cold start: imports, Chroma, ONNX sessions), timed by wall clock.

Both use every lane and the default on-query refresh. Prints the table and writes JSON
(default ``docs/bench_mcp.json``). Usage: ``python scripts/bench_mcp.py [--questions 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from retrieval_kernel.evaluation.beir import load_beir, write_notes
from retrieval_kernel.evaluation.bench import synthetic_notes
from retrieval_kernel.evaluation.suites import versions
from retrieval_kernel.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".retrieval_kernel" / "bench-mcp"
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def prepared(name: str, write: Any) -> tuple[Path, Path]:
    """The corpus's notes and store, indexed once (every lane)."""
    notes, store = WORK / name / "notes", WORK / name / "store"
    if not (store / "records.sqlite3").is_file():
        write(notes)
        started = time.perf_counter()
        with Workspace(notes, store) as workspace:
            workspace.index()
        print(f"{name}: indexed in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    return notes, store


def scifact(count: int) -> tuple[Path, Path, list[str]]:
    data = load_beir(SCIFACT, "test")
    notes, store = prepared("scifact", lambda folder: write_notes(data.corpus, folder))
    return notes, store, list(data.queries.values())[:count]


def synthetic(passages: int, count: int) -> tuple[Path, Path, list[str]]:
    notes, store = prepared(f"synthetic-{passages}", lambda folder: synthetic_notes(folder, passages))
    with tempfile.TemporaryDirectory() as scratch:  # the same seeded questions, without touching the notes
        questions = synthetic_notes(Path(scratch), passages)
    return notes, store, questions[:count]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(p95, 1), "calls": len(ordered)}


def mcp_calls(notes: Path, store: Path, questions: list[str]) -> dict[str, Any]:
    args = ["-m", "retrieval_kernel.cli", "mcp", "--notes", str(notes), "--store", str(store)]
    params = StdioServerParameters(command=sys.executable, args=args, env=ENV, cwd=str(ROOT))

    async def main() -> dict[str, Any]:
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=600) as client:
            connected = time.perf_counter() - started
            first = time.perf_counter()
            await client.call_tool("context", {"question": questions[0]})
            first_call = time.perf_counter() - first
            samples = []
            for question in questions:
                began = time.perf_counter()
                result = await client.call_tool("context", {"question": question})
                samples.append(1000 * (time.perf_counter() - began))
                assert not result.is_error, result.content
        return {**percentiles(samples), "connect_s": round(connected, 2), "first_call_s": round(first_call, 2)}

    return anyio.run(main)


def cli_calls(notes: Path, store: Path, questions: list[str]) -> dict[str, Any]:
    command = [str(Path(sys.executable).parent / "retrieval-kernel"), "query"]
    samples = []
    for question in questions:
        began = time.perf_counter()
        subprocess.run(
            [*command, question, "--notes", str(notes), "--store", str(store)],
            check=True,
            capture_output=True,
            env={**os.environ, **ENV},
        )
        samples.append(1000 * (time.perf_counter() - began))
    return percentiles(samples)


def measure(name: str, notes: Path, store: Path, questions: list[str]) -> dict[str, Any]:
    with Workspace(notes, store, refresh="off") as workspace:
        passages = workspace.passage_count()
    mcp = mcp_calls(notes, store, questions)
    cli = cli_calls(notes, store, questions)
    row = {
        "corpus": name,
        "passages": passages,
        "questions": len(questions),
        "mcp_stdio": mcp,
        "cli": cli,
        "ratio_p50": round(cli["p50_ms"] / mcp["p50_ms"], 1),
        "ratio_p95": round(cli["p95_ms"] / mcp["p95_ms"], 1),
    }
    print(json.dumps(row), file=sys.stderr)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20, help="questions per corpus (default 20)")
    parser.add_argument("--passages", type=int, default=10_000, help="synthetic corpus size (0: skip)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "bench_mcp.json")
    args = parser.parse_args()
    rows = [measure("scifact", *scifact(args.questions))]
    if args.passages:
        rows.append(measure(f"synthetic-{args.passages}", *synthetic(args.passages, args.questions)))
    result = {
        "rows": rows,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {**versions(), "mcp": _version("mcp")},
    }
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{'corpus':18} {'passages':>8} {'MCP p50':>9} {'MCP p95':>9} {'CLI p50':>9} {'CLI p95':>9} {'ratio':>6}")
    for row in rows:
        mcp, cli = row["mcp_stdio"], row["cli"]
        print(
            f"{row['corpus']:18} {row['passages']:>8,} {mcp['p50_ms']:>7.0f}ms {mcp['p95_ms']:>7.0f}ms "
            f"{cli['p50_ms']:>7.0f}ms {cli['p95_ms']:>7.0f}ms {row['ratio_p50']:>5.1f}x"
        )


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
