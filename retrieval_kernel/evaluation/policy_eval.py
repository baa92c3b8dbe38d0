"""The assembly evaluation: does the policy admit what must enter and keep out what must not?

A policy suite (``suite.json`` with ``"kind": "policy"``) holds notes and a JSONL
question file. Each question names its clock, the caller's scopes and intent,
and labels: ``must_admit`` / ``must_not_admit`` / ``forbidden`` passage ids,
``expected_conflicts`` and ``expected_abstention``. Retrieval and assembly are
scored separately (seed 003, section 15):

* retrieval: ``candidate_recall``: labelled ``must_admit`` passages any lane proposed;
* assembly: stale admissions, authority errors, conflict detection recall and
  resolution accuracy, scope violations (a forbidden id or note found in any
  output: JSON, HTML, Markdown, text, DataFrame, stored trace), redundancy,
  required-evidence retention, and abstention precision and recall.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SuiteError
from ..output.packet import Packet
from ..pipeline.candidates import HISTORICAL
from ..pipeline.requests import LANES
from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from .jsonl import read_jsonl
from .suites import (
    MANIFEST_FILE,
    SUITE_FILE,
    check_gates,
    implementation_hashes,
    indexed_workspace,
    read_json,
    verify_frozen,
    versions,
)

QUESTION_KEYS = (
    "id",
    "question",
    "as_of",
    "scopes",
    "intent",
    "must_admit",
    "must_not_admit",
    "forbidden",
    "expected_conflicts",
    "expected_abstention",
)
# Abstention labels and the packet reasons that satisfy them.
ABSTENTION_MATCHES = {
    "no_relevant_evidence": {"no_match", "below_threshold"},
    "filtered_by_scope": {"filtered_by_scope"},
    "filtered_by_validity": {"filtered_by_validity"},
    "underspecified_query": {"underspecified_query"},
    "unresolved_conflict": {"unresolved_conflict"},
}
REDUNDANT_JACCARD = 0.8
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PolicySuite:
    """A loaded policy suite (the attributes ``verify_frozen`` reads, plus its settings)."""

    root: Path
    name: str
    notes_dir: Path
    questions_path: Path
    frozen_questions: Path
    budget_unit: str
    budget: int
    top: int
    gates: dict[str, dict[str, float]]
    manifest: dict[str, str]


def load_policy_suite(suite_dir: str | Path) -> PolicySuite:
    root = Path(suite_dir)
    config = read_json(root / SUITE_FILE)
    manifest = read_json(root / MANIFEST_FILE).get("files", {})
    try:
        questions = root / config.get("questions", "questions.jsonl")
        return PolicySuite(
            root=root,
            name=str(config["name"]),
            notes_dir=root / config.get("notes", "notes"),
            questions_path=questions,
            frozen_questions=questions,
            budget_unit=str(config.get("budget_unit", "chars")),
            budget=int(config.get("budget", 20_000)),
            top=int(config.get("top", 8)),
            gates=dict(config.get("gates", {})),
            manifest=dict(manifest),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SuiteError(f"{root / SUITE_FILE}: missing or invalid setting: {exc}") from exc


def load_policy_questions(path: Path) -> list[dict[str, Any]]:
    """Parse the JSONL labels; every line needs every key of :data:`QUESTION_KEYS`."""
    questions: list[dict[str, Any]] = []
    for number, row in read_jsonl(path, number_blank_lines=False):
        missing = [key for key in QUESTION_KEYS if not isinstance(row, dict) or key not in row]
        if missing:
            raise SuiteError(f"{path}:{number}: missing keys {missing}")
        questions.append(row)
    if len({q["id"] for q in questions}) != len(questions):
        raise SuiteError(f"{path}: question ids must be unique")
    return questions


def run_policy_suite(
    suite_dir: str | Path,
    store_dir: str | Path | None = None,
    lanes: Sequence[str] = LANES,
    progress: Callable[[str], None] | None = None,
    chroma: str | ChromaSettings | None = None,
) -> dict[str, Any]:
    """Verify, run and score a policy suite; the receipt's ``passed`` says if every gate held.

    ``chroma`` is where the dense vectors live (as for :class:`Workspace`; default: the settings in force).
    """
    started = time.time()
    suite = load_policy_suite(suite_dir)
    inputs = verify_frozen(suite)  # type: ignore[arg-type]  # reads only the shared attributes
    questions = load_policy_questions(suite.questions_path)
    with indexed_workspace(suite.notes_dir, store_dir, lanes, chroma) as workspace:
        rows = []
        for question in questions:
            rows.append(_run_question(suite, workspace, question))
            if progress:
                progress(f"{question['id']}: {rows[-1]['outcome']}")
    metrics = _metrics(rows)
    gates = check_gates(suite.gates, metrics)
    return {
        "kind": "policy",
        "suite": suite.name,
        "started_at": dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 3),
        "inputs": {"manifest_verified": True, "files": inputs},
        "implementation": implementation_hashes(),
        "versions": versions(),
        "config": {"lanes": list(lanes), "budget": [suite.budget_unit, suite.budget], "top": suite.top},
        "metrics": metrics,
        "gates": gates,
        "passed": all(gate["passed"] for gate in gates.values()),
        "questions": rows,
    }


# ---------------------------------------------------------------- one question


def _run_question(suite: PolicySuite, workspace: Workspace, question: dict[str, Any]) -> dict[str, Any]:
    budget = {"max_bytes" if suite.budget_unit == "bytes" else "max_chars": suite.budget}
    packet = workspace.query(
        question["question"],
        as_of=question["as_of"],
        scopes=question["scopes"],
        intent=question["intent"],
        audit=bool(question.get("audit", False)),
        top=suite.top,
        refresh=False,
        **budget,  # type: ignore[arg-type]
    )
    trace = workspace.trace(packet.trace_id) or {}
    current = [item.id for item in packet.evidence if item.role != HISTORICAL]
    proposed = {pid for pid, _ in trace.get("fused", [])}
    conflicts = [_match_conflict(expected, packet) for expected in question["expected_conflicts"]]
    expected_abstention = question["expected_abstention"]
    return {
        "id": question["id"],
        "category": question.get("category"),
        "outcome": "abstained: " + str(packet.abstention_reason) if packet.abstained else f"{len(current)} current",
        "admitted": current,
        "roles": {item.id: item.role for item in packet.evidence},
        "required": question["must_admit"],
        "required_retained": [pid for pid in question["must_admit"] if pid in current],
        "required_proposed": [pid for pid in question["must_admit"] if pid in proposed],
        "stale_admitted": [pid for pid in question["must_not_admit"] if pid in current],
        "must_not_admit": question["must_not_admit"],
        "scope_violations": _leaks(question["forbidden"], packet, trace),
        "authority_errors": _authority_errors(question["expected_conflicts"], packet),
        "conflicts": conflicts,
        "redundant_items": _redundant(packet),
        "expected_abstention": expected_abstention,
        "abstained": packet.abstained,
        "abstention_reason": packet.abstention_reason,
        "abstention_correct": _abstention_correct(expected_abstention, packet),
        "trace_id": packet.trace_id,
    }


def _module(passage_id: str) -> str:
    return passage_id.split("#", 1)[0]


def _leaks(forbidden: list[str], packet: Packet, trace: dict[str, Any]) -> list[str]:
    """Forbidden passage ids or note ids found in any output of the packet."""
    outputs = {
        "json": packet.to_json(),
        "html": packet._repr_html_(),
        "markdown": packet._repr_markdown_(),
        "text": str(packet),
        "frame": packet.to_frame().to_csv(),
        "trace": json.dumps(trace),
    }
    names = sorted({name for pid in forbidden for name in (pid, _module(pid))})
    return [f"{name} in {where}" for name in names for where, text in outputs.items() if _names(name, text)]


def _names(name: str, text: str) -> bool:
    """Whether ``text`` names the note or passage id ``name`` itself, not as part of a longer id or slug
    ("controlled-drugs" is not named by "#5-keep-the-controlled-drugs-register")."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def _match_conflict(expected: dict[str, Any], packet: Packet) -> dict[str, Any]:
    """Find the packet conflict on the same proposition whose sides cover the expected notes."""
    wanted = {_module(pid) for pid in expected["passages"]}
    for conflict in packet.conflicts:
        sides = {_module(side.id) for side in conflict.evidence}
        if conflict.proposition == expected["proposition"] and wanted <= sides:
            kind = conflict.resolution.split("(", 1)[0]
            winner_ok = (expected.get("winner") is None and conflict.winner is None) or (
                conflict.winner is not None and _module(conflict.winner) == _module(str(expected.get("winner")))
            )
            return {
                "expected": expected,
                "found": conflict.id,
                "resolution": conflict.resolution,
                "resolved_correctly": kind == expected["resolution"] and winner_ok,
            }
    return {"expected": expected, "found": None, "resolution": None, "resolved_correctly": False}


def _authority_errors(expected_conflicts: list[dict[str, Any]], packet: Packet) -> list[str]:
    """An authority-resolved conflict whose loser is admitted as current or ranked above the winner."""
    errors = []
    order = {_module(item.id): (index, item.role) for index, item in enumerate(packet.evidence)}
    for expected in expected_conflicts:
        if expected["resolution"] != "authority" or not expected.get("winner"):
            continue
        winner = _module(expected["winner"])
        for loser in (_module(pid) for pid in expected["passages"] if _module(pid) != winner):
            if loser not in order:
                continue
            index, role = order[loser]
            if role == "current" or (winner in order and index < order[winner][0]):
                errors.append(f"{loser} displaced {winner}")
    return errors


def _redundant(packet: Packet) -> int:
    """Admitted items whose word trigrams overlap an earlier item's by at least REDUNDANT_JACCARD."""
    seen: list[set[tuple[str, ...]]] = []
    redundant = 0
    for item in packet.evidence:
        words = _WORD.findall(item.excerpt.lower())
        grams = {tuple(words[i : i + 3]) for i in range(max(1, len(words) - 2))}
        if any(len(grams & other) / len(grams | other) >= REDUNDANT_JACCARD for other in seen if grams | other):
            redundant += 1
        seen.append(grams)
    return redundant


def _abstention_correct(expected: str | None, packet: Packet) -> bool:
    if expected is None:
        return not packet.abstained
    return packet.abstained and packet.abstention_reason in ABSTENTION_MATCHES.get(expected, {expected})


# ---------------------------------------------------------------- metrics


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    required = sum(len(r["required"]) for r in rows)
    must_not = sum(len(r["must_not_admit"]) for r in rows)
    conflicts = [c for r in rows for c in r["conflicts"]]
    detected = [c for c in conflicts if c["found"]]
    admitted = sum(len(r["roles"]) for r in rows)
    expected_abstain = [r for r in rows if r["expected_abstention"]]
    abstained = [r for r in rows if r["abstained"]]
    correct_abstain = [r for r in abstained if r["expected_abstention"] and r["abstention_correct"]]
    authority_expected = sum(1 for r in rows for c in r["conflicts"] if c["expected"]["resolution"] == "authority")
    stale = sum(len(r["stale_admitted"]) for r in rows)
    return {
        "questions": len(rows),
        "retrieval": {
            "candidate_recall": _ratio(sum(len(r["required_proposed"]) for r in rows), required),
        },
        "stale_admissions": stale,
        "stale_admission_rate": _ratio(stale, must_not),
        "authority_errors": sum(len(r["authority_errors"]) for r in rows),
        "authority_error_rate": _ratio(sum(len(r["authority_errors"]) for r in rows), authority_expected),
        "conflict_recall": _ratio(len(detected), len(conflicts)) if conflicts else 1.0,
        "conflict_resolution_accuracy": _ratio(sum(c["resolved_correctly"] for c in detected), len(detected)),
        "scope_violations": sum(len(r["scope_violations"]) for r in rows),
        "redundancy": _ratio(sum(r["redundant_items"] for r in rows), admitted),
        "required_retention": _ratio(sum(len(r["required_retained"]) for r in rows), required),
        "abstention_precision": _ratio(len(correct_abstain), len(abstained)),
        "abstention_recall": _ratio(len(correct_abstain), len(expected_abstain)),
        "abstention_reason_accuracy": _ratio(sum(r["abstention_correct"] for r in rows), len(rows)),
    }


def policy_summary(receipt: dict[str, Any]) -> str:
    """A short table of the assembly metrics and gates for the command line."""
    metrics = receipt["metrics"]
    lines = [f"{'metric':34} value"]
    for name, value in metrics.items():
        if isinstance(value, dict):
            lines += [f"{name + '.' + key:34} {inner}" for key, inner in value.items()]
        else:
            lines.append(f"{name:34} {value}")
    for name, gate in receipt["gates"].items():
        lines.append(f"gate {name:29} {'pass' if gate['passed'] else 'FAIL'} ({gate['value']})")
    return "\n".join(lines)
