"""Abstention suites: questions the notes do not answer, each of which must get "nothing applies".

``suite.json`` says ``"kind": "abstention"``, where the notes are, which question file to
score (JSONL with ``id`` and ``question``), the clock and the gates. The question file is
checked against the suite's frozen manifest before anything runs.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import SuiteError
from ..pipeline.requests import LANES
from ..projections.chroma_client import ChromaSettings
from .jsonl import read_jsonl
from .suites import (
    MANIFEST_FILE,
    SUITE_FILE,
    check_gates,
    check_manifest,
    implementation_hashes,
    indexed_workspace,
    read_json,
    sha256_file,
    versions,
)


def run_abstention_suite(
    suite_dir: str | Path,
    lanes: Sequence[str] = LANES,
    progress: Callable[[str], None] | None = None,
    chroma: str | ChromaSettings | None = None,
) -> dict[str, Any]:
    """Ask every question; the receipt says which abstained, with what reason, and whether the gates held."""
    started = time.time()
    root = Path(suite_dir)
    config = read_json(root / SUITE_FILE)
    try:
        notes, questions_file, as_of = root / config["notes"], config["questions"], config["as_of"]
    except KeyError as exc:
        raise SuiteError(f"{root / SUITE_FILE}: missing setting {exc}") from exc
    manifest = read_json(root / MANIFEST_FILE).get("files", {})
    inputs = check_manifest(
        config.get("name", root.name),
        root,
        {questions_file: manifest.get(questions_file, "")},
        lambda: {questions_file: sha256_file(root / questions_file)},
    )
    questions = [row for _, row in read_jsonl(root / questions_file)]
    with indexed_workspace(notes, None, lanes, chroma) as workspace:
        rows = []
        for question in questions:
            packet = workspace.query(question["question"], as_of=as_of, refresh=False)
            rows.append(
                {
                    "id": question["id"],
                    "question": question["question"],
                    "abstained": packet.abstained,
                    "abstention_reason": packet.abstention_reason,
                    "confidence": packet.confidence,
                    "evidence": [item.id for item in packet.evidence],
                }
            )
            if progress:
                progress(f"{question['id']}: {packet.abstention_reason or 'answered'}")
    abstained = sum(row["abstained"] for row in rows)
    metrics = {
        "questions": len(rows),
        "abstained": abstained,
        "abstained_fraction": round(abstained / len(rows), 4) if rows else None,
        "reasons": dict(sorted(Counter(str(row["abstention_reason"]) for row in rows if row["abstained"]).items())),
    }
    gates = check_gates(config.get("gates", {}), metrics)
    return {
        "kind": "abstention",
        "suite": config.get("name", root.name),
        "started_at": dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 3),
        "inputs": {"manifest_verified": True, "files": inputs},
        "implementation": implementation_hashes(),
        "versions": versions(),
        "config": {"lanes": list(lanes), "as_of": as_of},
        "metrics": metrics,
        "gates": gates,
        "passed": all(gate["passed"] for gate in gates.values()),
        "questions": rows,
    }


def abstention_summary(receipt: dict[str, Any]) -> str:
    metrics = receipt["metrics"]
    lines = [f"questions {metrics['questions']}, abstained {metrics['abstained']} ({metrics['abstained_fraction']})"]
    lines += [f"  {reason}: {count}" for reason, count in metrics["reasons"].items()]
    lines += [
        f"  answered: {row['id']} {row['question']!r} -> {row['evidence'][:3]}"
        for row in receipt["questions"]
        if not row["abstained"]
    ]
    for name, gate in receipt["gates"].items():
        lines.append(f"gate {name:28} {'pass' if gate['passed'] else 'FAIL'} ({gate['value']})")
    return "\n".join(lines)
