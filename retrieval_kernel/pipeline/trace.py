"""Traces: how a packet was built, kept in the record store by trace id (seed 003, section 16).

A trace holds ids, ranks, scores and decisions, never note text: the query is
kept as a digest, and candidates outside the caller's scopes never enter it
(the lanes drop them before anything is recorded; only their count remains).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ..output.packet import Packet

if TYPE_CHECKING:
    from .candidates import Candidate, Request, Selection
    from .lanes import LaneRun

TRACE_VERSION = 2  # 2: "sources" (each item's note sha256 and revisions), "live", "versions"


def build_trace(
    packet: Packet,
    request: Request,
    runs: dict[str, LaneRun],
    ranked: list[Candidate],
    selection: Selection,
    candidate_pool: int,
    dense_min_cosine: float,
) -> dict[str, Any]:
    """The minimized record of one query (see the module docstring)."""
    in_packet = {item.id: item for item in packet.evidence}
    return {
        "trace_version": TRACE_VERSION,
        "trace_id": packet.trace_id,
        "query_sha256": hashlib.sha256(packet.query.encode("utf-8")).hexdigest(),
        "query_terms": len(packet.query.split()),
        "as_of": packet.as_of,
        "scopes": sorted(request.scopes),
        "intent": request.intent,
        "audit": request.audit,
        "budget": {"unit": packet.budget.unit, "limit": packet.budget.limit, "used": packet.budget.used},
        "projection": packet.projection,
        "lanes": [_lane(run, candidate_pool, dense_min_cosine) for run in runs.values()],
        "fused": [[c.id, round(c.score, 6)] for c in ranked],
        "set_aside": [c.id for c in ranked if c.set_aside],  # never current: kept out of the lanes' pool
        "eligibility": _eligibility(selection),
        "freshness": [
            {
                "id": item.id,
                "observed_at": item.observed_at,
                "age_days": item.source_age_days,
                "fresh_for_days": item.fresh_for_days,
                "freshness": item.freshness,
                "live_verified": item.live_verified,
                "live_status": item.live_status,
                "verify_live_before_acting": item.verify_live is not None,
            }
            for item in packet.evidence
        ],
        "sources": [
            {
                "id": item.id,
                "path": item.path,
                "lines": [item.line_start, item.line_end],
                "source_sha256": item.source_sha256,
                "source_revision": item.source_revision,
                "note_revision": item.note_revision,
            }
            for item in packet.evidence
        ],
        "live": {
            "sources": [
                {"name": s.name, "status": s.status, "checked_at": s.checked_at, "detail": s.detail}
                for s in packet.live_sources
            ],
            "contradicted": [pid for value in packet.record_values for pid in value.contradicts],
        },
        "conflicts": [
            {
                "id": c.id,
                "proposition": c.proposition,
                "sides": [side.id for side in c.evidence],
                "resolution": c.resolution,
                "required_behavior": c.required_behavior,
            }
            for c in packet.conflicts
        ],
        "budget_decisions": {
            "admitted": [item.id for item in packet.evidence],
            "truncated": [item.id for item in packet.evidence if item.truncated],
            "left_out": [
                a.candidate.id for a in (*selection.admitted, *selection.history) if a.candidate.id not in in_packet
            ],
        },
        "final_order": [[item.ref, item.id, item.role] for item in packet.evidence],
        "exclusions": dict(packet.exclusions),
        "abstained": packet.abstained,
        "abstention_reason": packet.abstention_reason,
    }


def _lane(run: LaneRun, candidate_pool: int, dense_min_cosine: float) -> dict[str, Any]:
    report = run.report
    config: dict[str, Any] = {"candidate_pool": candidate_pool, "score_basis": report.score_basis}
    if report.name == "dense":
        config["min_cosine"] = dense_min_cosine
    return {
        "name": report.name,
        "status": report.status,
        "index_version": report.index_version,
        "high_water": report.high_water,
        "lag": report.lag,
        "reason": report.reason,
        "config": config,
        "candidates": [[pid, rank, round(score, 6)] for rank, (pid, score) in enumerate(run.ranking, 1)],
        "below_threshold": run.below_threshold,
    }


def _eligibility(selection: Selection) -> list[dict[str, Any]]:
    decisions = [  # no reason text: it quotes the query's matched words, and the trace keeps only a digest
        {
            "id": a.candidate.id,
            "decision": "admitted",
            "role": a.role,
            "lanes": [[hit.lane, hit.rank] for hit in a.candidate.retrieved_by],
            "successor_of": a.candidate.pulled_in_for,
            "duplicates": list(a.duplicates),
        }
        for a in selection.admitted
    ]
    decisions += [
        {"id": e.candidate.id, "decision": "excluded", "code": e.code, "detail": e.detail} for e in selection.excluded
    ]
    return decisions


def trace_text(trace: dict[str, Any]) -> str:
    """A readable rendering of a trace for ``%context_trace`` and ``retrieval-kernel trace``."""
    lines = [
        f"trace {trace['trace_id']}  as of {trace['as_of']}  intent {trace['intent']}  "
        f"scopes {', '.join(trace['scopes']) or '(none)'}  audit {trace['audit']}",
        f"query sha256 {trace['query_sha256'][:16]}…  projection {trace['projection']}  "
        f"budget {trace['budget']['used']:,}/{trace['budget']['limit']:,} {trace['budget']['unit']}",
    ]
    lines += _versions_lines(trace)
    lines.append("lanes:")
    for lane in trace["lanes"]:
        top = ", ".join(f"{pid} #{rank} ({score})" for pid, rank, score in lane["candidates"][:5])
        config = ", ".join(f"{key} {value}" for key, value in lane["config"].items())
        lines.append(
            f"  {lane['name']}: {lane['status']} v{lane['index_version']} hw {lane['high_water']} lag {lane['lag']}; "
            f"{len(lane['candidates'])} candidates{'; ' + top if top else ''}"
        )
        lines.append(f"    config: {config}")
    fused = ", ".join(f"{pid} ({score})" for pid, score in trace["fused"][:10])
    lines.append(f"fused ({len(trace['fused'])}): {fused or '(none)'}")
    lines.append("eligibility:")
    for decision in trace["eligibility"]:
        if decision["decision"] == "admitted":
            found = ", ".join(f"{lane} #{rank}" for lane, rank in decision["lanes"])
            how = found or f"successor of {decision['successor_of']}"
            lines.append(f"  + {decision['id']} [{decision['role']}] {how}")
        else:
            lines.append(f"  - {decision['id']} [{decision['code']}] {decision['detail']}")
    lines.append("freshness:")
    for check in trace["freshness"]:
        lines.append(
            f"  {check['id']}: observed {check['observed_at'] or 'unknown'}, age {check['age_days']} d, "
            f"fresh for {check['fresh_for_days']} d: {check['freshness']}; live {check.get('live_status', 'n/a')}"
            + ("; VERIFY LIVE BEFORE ACTING" if check.get("verify_live_before_acting") else "")
        )
    for source in trace.get("sources", []):
        lines.append(
            f"  source {source['path']}:{source['lines'][0]}-{source['lines'][1]} rev {source['source_revision']} "
            f"sha256 {(source['source_sha256'] or 'unknown')[:16]}"
        )
    for live in trace.get("live", {}).get("sources", []):
        detail = f" ({live['detail']})" if live["detail"] else ""
        lines.append(f"live source {live['name']}: {live['status']}{detail}")
    for conflict in trace["conflicts"]:
        lines.append(
            f"conflict {conflict['id']} on {conflict['proposition']}: {conflict['resolution']} "
            f"-> {conflict['required_behavior']}"
        )
    budget = trace["budget_decisions"]
    lines.append(
        f"budget: admitted {len(budget['admitted'])}, truncated {budget['truncated']}, left out {budget['left_out']}"
    )
    lines.append("final: " + (", ".join(f"{ref}={pid}" for ref, pid, _ in trace["final_order"]) or "(none)"))
    lines.append(f"exclusions: {json.dumps(trace['exclusions'])}")
    if trace["abstained"]:
        lines.append(f"abstained: {trace['abstention_reason']}")
    return "\n".join(lines)


def _versions_lines(trace: dict[str, Any]) -> list[str]:
    """What the packet was built with (traces from before version 2 have no such line)."""
    versions = trace.get("versions")
    if not versions:
        return []
    model = versions["embedding_model"]
    return [
        f"versions: retrieval_kernel {versions['package']}, packet v{versions['packet_version']}, "
        f"{model['name']} ({model['package'] or 'model package unknown'}), "
        f"answerability {(versions['answerability_model']['sha256'] or 'missing')[:12]}, "
        f"selector calibration {(versions['selector_calibration']['sha256'] or 'missing')[:12]}"
    ]
