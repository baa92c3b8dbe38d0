"""Applicability selection: capsules, conditions, the rule selector, the judge fallback, adapters."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.applicability import (
    BELOW_THRESHOLD,
    CONTRADICTING_CONDITION,
    DIAGNOSTIC_NO_CLAIMS,
    DISPUTED,
    DUPLICATE_RULE,
    FEATURES,
    SUPERSEDED,
    UNKNOWN_CONDITION,
    CandidateRecord,
    Capsule,
    JudgeSelector,
    PassageRef,
    RuleSelector,
    Thresholds,
    check_conditions,
    clause_texts,
    conditions_from_text,
    parse_conditions,
    select_applicable,
    select_packet,
)
from retrieval_kernel.applicability.conditions import context_of, task_conditions
from retrieval_kernel.applicability.derived import derive_claims
from retrieval_kernel.applicability.needs import need_parts, question_parts
from retrieval_kernel.cli import main
from retrieval_kernel.errors import BudgetError, InputError
from retrieval_kernel.output.selection_packet import SelectionPacket

# Hand-set parameters: the score is driven by how much of the query (and of its best part)
# a record's capsule covers, so these tests do not depend on the calibrated file.
WEIGHTS = dict.fromkeys(FEATURES, 0.0) | {"capsule_coverage": 6.0, "clause_coverage": 6.0, "coverage": 2.0}
PARAMS = Thresholds(weights=tuple(WEIGHTS[name] for name in FEATURES), bias=-5.0, min_first=0.5, min_keep=0.5)


def lesson(
    record: str,
    title: str,
    claims: list[str],
    body: str = "",
    applies_when: dict[str, object] | None = None,
    status: str = "active",
    rule: str | None = None,
    kind: str = "lesson",
    critical: bool = False,
    superseded_by: str | None = None,
) -> str:
    """A lesson note with its claim capsule in the front matter."""
    lines = ["---", f"id: {record}", f"title: {title}", f"kind: {kind}", "claims:"]
    lines += [f"- {json.dumps(claim)}" for claim in claims] or ["  []"]
    if claims == []:
        lines[-1] = "claims: []"
        lines.pop(-2)
    if applies_when:
        lines.append("applies_when:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in applies_when.items()]
    lines.append(f"status: {status}")
    if superseded_by:
        lines.append(f"superseded_by: {superseded_by}")
    lines.append(f"rule: {rule or record}")
    lines.append(f"critical: {'true' if critical else 'false'}")
    lines += [
        "evidence:",
        "  supports: ['INC-1: it happened']",
        "  contradicts: []",
        "---",
        f"# {title}",
        "",
        body or " ".join(claims),
    ]
    return "\n".join(lines) + "\n"


LESSONS = {
    "hooks/raw-body.md": lesson(
        "hooks-raw-body",
        "Verify webhook signatures over the raw request body",
        ["Compute the HMAC signature over the raw request body bytes before parsing JSON."],
        applies_when={"signature_input": "raw-body"},
        rule="signature-over-raw-body",
        critical=True,
    ),
    "hooks/raw-bytes.md": lesson(
        "hooks-raw-bytes",
        "HMAC the raw bytes of the webhook body",
        ["Feed the raw body bytes of the webhook into the HMAC signature check."],
        applies_when={"signature_input": "raw-body"},
        rule="signature-over-raw-body",
    ),
    "hooks/canonical.md": lesson(
        "hooks-canonical-json",
        "Verify webhook signatures over canonical JSON",
        ["Canonicalise the JSON body (sorted keys) before computing the HMAC signature."],
        applies_when={"signature_input": "canonical-json"},
        rule="signature-over-canonical-json",
    ),
    "hooks/compare.md": lesson(
        "hooks-constant-time",
        "Compare webhook signatures in constant time",
        ["Compare the computed signature with the header value using a constant-time comparison."],
        rule="constant-time-compare",
    ),
    "hooks/replay-old.md": lesson(
        "hooks-replay-15m",
        "Allow a 15-minute replay window for webhook timestamps",
        ["Accept webhook timestamps within 900 seconds to stop replayed requests."],
        status="superseded",
        superseded_by="hooks-replay-5m",
        rule="replay-window-old",
    ),
    "hooks/replay-new.md": lesson(
        "hooks-replay-5m",
        "Reject replayed webhook requests older than five minutes",
        ["Reject webhook timestamps older than 300 seconds to stop replayed requests."],
        rule="replay-window",
    ),
    "hooks/drop-old.md": lesson(
        "hooks-drop-out-of-order",
        "Drop out-of-order webhook events",
        ["Drop webhook events older than the last applied event."],
        status="disputed",
    ),
    "hooks/diag.md": lesson(
        "hooks-diag-401",
        "Signature check 401s on staging",
        [],
        body="Webhook signature checks return 401 on staging for large payloads. Still investigating.",
        kind="diagnostic",
    ),
    "cache/shared.md": lesson(
        "cache-shared-key",
        "One cache entry per resource for shared reference data",
        ["For shared data, store one cache entry per resource that everyone reads."],
        applies_when={"data": "shared"},
    ),
    "cache/per-customer.md": lesson(
        "cache-per-customer-key",
        "Prefix per-customer cache keys with the tenant",
        ["For per-customer data, prefix every cache key with the tenant id."],
        applies_when={"data": ["per-customer", "per-user"]},
    ),
}


@pytest.fixture
def workspace(tmp_path: Path, make_notes) -> Workspace:
    ws = Workspace(make_notes(LESSONS), store_dir=tmp_path / "store", lanes=("lexical",))
    ws.index()
    yield ws
    ws.close()


def select(ws: Workspace, query: str, **kwargs: object):
    return select_applicable(ws, query, selector=RuleSelector(PARAMS), **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- capsules and conditions


def test_capsule_copies_front_matter_as_written() -> None:
    metadata = {
        "title": "T",
        "kind": "lesson",
        "claims": ["Use X-Signature-256, not X-Hub-Signature."],
        "applies_when": {"signature_input": "raw-body", "Data": ["Per Customer", "shared"]},
        "status": "active",
        "rule": "r1",
        "critical": True,
        "evidence": {"supports": ["INC-2291"], "contradicts": ["INC-1"]},
        "superseded_by": "next",
    }
    capsule = Capsule.from_metadata("a", "a.md", "heading", metadata)
    assert capsule.claims == ("Use X-Signature-256, not X-Hub-Signature.",)  # exact identifiers kept verbatim
    assert capsule.status == "current" and capsule.status_text == "active"
    assert capsule.applies_when == {"signature_input": ("raw-body",), "data": ("per-customer", "shared")}
    assert capsule.critical and capsule.rule == "r1" and capsule.superseded_by == ("next",)
    assert capsule.supports == ("INC-2291",) and capsule.contradicts == ("INC-1",)
    assert "X-Signature-256" in json.dumps(capsule.to_dict())
    assert Capsule.from_metadata("d", "d.md", "h", {"kind": "diagnostic", "claims": []}).is_diagnostic
    assert not Capsule.from_metadata("a", "a.md", "h", {"critical": "yes", "claims": ["c"]}).critical


def test_parse_conditions_accepts_key_value_and_mappings() -> None:
    assert parse_conditions(["signature_input=raw-body", "Data=Per Customer,shared"]) == {
        "signature_input": frozenset({"raw-body"}),
        "data": frozenset({"per-customer", "shared"}),
    }
    assert parse_conditions({"pool_mode": ["transaction"]}) == {"pool_mode": frozenset({"transaction"})}
    assert parse_conditions("a=b") == {"a": frozenset({"b"})}
    assert parse_conditions(None) == {}
    for bad in (["no-equals"], ["=x"], ["k="]):
        with pytest.raises(InputError):
            parse_conditions(bad)


VOCABULARY = [
    ("signature_input", "raw-body"),
    ("signature_input", "canonical-json"),
    ("format", "json"),
    ("delivery", "at-least-once"),
    ("data", "per-customer"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The provider HMACs the raw body it sends", {("signature_input", "raw-body")}),
        ("they sign the raw-bodies", {("signature_input", "raw-body")}),
        ("the signature covers canonical JSON", {("signature_input", "canonical-json"), ("format", "json")}),
        ("the queue delivers at least once", {("delivery", "at-least-once")}),
        ("we cache per customer dashboards", {("data", "per-customer")}),
        ("we do not use the raw body", set()),
        ("without canonical json", set()),
        ("the body is raw", set()),  # the words must form one run, in order
    ],
)
def test_conditions_from_text(text: str, expected: set[tuple[str, str]]) -> None:
    assert {(m.key, m.value) for m in conditions_from_text(text, VOCABULARY)} == expected


def test_a_value_inside_a_longer_one_of_the_same_key_yields() -> None:
    vocabulary = [("signature_input", "json"), ("signature_input", "canonical-json")]
    found = conditions_from_text("we verify canonical JSON", vocabulary)
    assert [(m.key, m.value, m.words) for m in found] == [("signature_input", "canonical-json", "canonical JSON")]


def test_check_conditions_states() -> None:
    capsule = Capsule("a", "a.md", "t", claims=("c",), applies_when={"data": ("per-customer", "per-user")})
    assert check_conditions(capsule, {"data": frozenset({"per-user"})}).state == "matched"
    assert check_conditions(capsule, {}).state == "unknown"
    contradicting = check_conditions(capsule, {"data": frozenset({"shared"})})
    assert contradicting.state == "contradicting" and "shared" in contradicting.contradicting[0]
    assert check_conditions(Capsule("b", "b.md", "t", claims=("c",)), {"data": frozenset({"x"})}).state == "universal"


def test_clause_texts_split_a_multi_part_query() -> None:
    parts = clause_texts("How do we stop replays, and what about duplicates? Also: secrets.")
    assert parts == ["How do we stop replays", "what about duplicates", "secrets"]
    assert clause_texts("what?") == ["what?"]


# ---------------------------------------------------------------- the rule selector, end to end


def test_condition_in_the_text_selects_one_record_per_rule(workspace: Workspace) -> None:
    selection = select(workspace, "What do I feed into the HMAC signature check when the provider signs the raw body?")
    assert selection.ids == ["hooks-raw-body"] or selection.ids == ["hooks-raw-bytes"]
    reasons = {r.record: r.reason for r in selection.rejected}
    assert reasons["hooks-canonical-json"] == CONTRADICTING_CONDITION
    assert DUPLICATE_RULE in reasons.values()
    assert reasons.get("hooks-diag-401", DIAGNOSTIC_NO_CLAIMS) == DIAGNOSTIC_NO_CLAIMS
    assert selection.condition_matches[0].source == "query"
    record = selection.records[0]
    assert record.conditions == "matched" and "signature_input" in record.why and record.needs


def test_stated_condition_overrides_and_contradicts(workspace: Workspace) -> None:
    selection = select(
        workspace,
        "How do we compute the HMAC signature of the webhook body?",
        conditions=["signature_input=canonical-json"],
    )
    assert selection.ids[0] == "hooks-canonical-json"
    assert not {"hooks-raw-body", "hooks-raw-bytes"} & set(selection.ids)
    rejected = {r.record: r for r in selection.rejected}
    assert rejected["hooks-raw-body"].reason == CONTRADICTING_CONDITION
    assert "canonical-json" in rejected["hooks-raw-body"].detail


def test_unknown_conditions_are_flagged_and_rank_below_matched(workspace: Workspace) -> None:
    selection = select(
        workspace, "How should cache keys be built for per-customer data, and cache entries for shared data?"
    )
    assert set(selection.ids) == {"cache-per-customer-key", "cache-shared-key"}
    assert all(r.conditions == "matched" for r in selection.records)
    unknown = select(workspace, "How should the cache key be prefixed with the tenant id?")
    assert unknown.ids == ["cache-per-customer-key"]
    assert unknown.records[0].conditions == "unknown"
    assert any(flag.startswith(UNKNOWN_CONDITION) for flag in unknown.records[0].flags)


def test_multi_part_query_covers_every_need(workspace: Workspace) -> None:
    selection = select(
        workspace,
        "How do we stop replayed webhook requests by timestamp, and how do we compare the signature with the header?",
    )
    assert set(selection.ids) == {"hooks-replay-5m", "hooks-constant-time"}
    reasons = {r.record: r.reason for r in selection.rejected}
    assert reasons["hooks-replay-15m"] == SUPERSEDED


def test_superseded_and_disputed_are_shown_only_for_audit(workspace: Workspace) -> None:
    query = "Should we drop out-of-order webhook events older than the last applied event?"
    orient = select(workspace, query)
    assert "hooks-drop-out-of-order" not in orient.ids
    assert {r.record: r.reason for r in orient.rejected}["hooks-drop-out-of-order"] == DISPUTED
    audit = select(workspace, query, intent="audit")
    shown = {r.record: r for r in audit.records}
    assert "hooks-drop-out-of-order" in shown
    assert any("disputed" in flag for flag in shown["hooks-drop-out-of-order"].flags)


def test_an_undocumented_value_gets_an_empty_answer(workspace: Workspace) -> None:
    selection = select(workspace, "Which mTLS client certificate bundle should the webhook ingress trust?")
    assert selection.empty and selection.ids == []
    assert selection.candidates > 0  # related lessons were found, and none applies
    assert BELOW_THRESHOLD in {r.reason for r in selection.rejected}
    assert "Nothing applies" in str(selection)
    nothing = select(workspace, "zebra giraffe savanna")
    assert nothing.empty and nothing.candidates == 0


def test_a_diagnostic_symptom_without_a_fix_is_never_returned(workspace: Workspace) -> None:
    selection = select(workspace, "Signature checks return 401 on staging for large payloads: what is the fix?")
    assert "hooks-diag-401" not in selection.ids
    assert {r.record: r.reason for r in selection.rejected}["hooks-diag-401"] == DIAGNOSTIC_NO_CLAIMS


def test_renderers_show_why_need_and_rejections_escaped(tmp_path: Path, make_notes) -> None:
    notes = make_notes(
        {
            "x.md": lesson(
                "x-script", "Escape <script>alert(1)</script> in titles", ["Escape <b>html</b> in claim text always."]
            ),
            "y.md": lesson("y-other", "Escape html in claim", ["Escape html in claim text always."], status="disputed"),
        }
    )
    with Workspace(notes, store_dir=tmp_path / "s", lanes=("lexical",)) as ws:
        ws.index()
        selection = select(ws, "How do we escape html in claim text?")
    assert selection.ids == ["x-script"]
    html = selection._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html and "why:" in html and DISPUTED in html
    markdown = selection._repr_markdown_()
    assert "<script>" not in markdown and "y-other" in markdown and "why:" in markdown
    text = str(selection)
    assert "why:" in text and "need:" in text and "rejected" in text
    data = json.loads(selection.to_json())
    assert data["records"][0]["capsule"]["claims"] == ["Escape <b>html</b> in claim text always."]


# ---------------------------------------------------------------- selection speed


def _candidates(count: int) -> list[CandidateRecord]:
    words = "cache key tenant webhook signature replay retry backoff queue migration flag rollout".split()  # noqa: SIM905
    return [
        CandidateRecord(
            Capsule(
                f"r{i}",
                f"r{i}.md",
                f"Lesson {i} about {words[i % len(words)]}",
                claims=(f"Do {words[i % len(words)]} {words[(i * 7) % len(words)]} properly {i}.",),
                applies_when={"data": ("shared",)} if i % 3 == 0 else {},
                rule=f"rule-{i % 17}",
            ),
            (PassageRef(f"r{i}#p", 1, 5, " ".join(words[j % len(words)] for j in range(i, i + 80))),),
            rank=i + 1,
            lanes={"dense": (i + 1, 0.7 - i / 100), "lexical": (i + 1, 20.0 - i / 3)},
            clause_cosines=(0.6 - i / 100, 0.5 - i / 200),
        )
        for i in range(count)
    ]


def test_selection_of_fifty_candidates_takes_milliseconds() -> None:
    candidates = _candidates(50)
    selector = RuleSelector(PARAMS)
    query = "How should the cache key include the tenant, and how do we retry the queue with backoff?"
    selector.select(query, candidates, ["data=shared"])  # warm the analyser
    times = []
    for _ in range(20):
        started = time.perf_counter()
        selector.select(query, candidates, ["data=shared"])
        times.append((time.perf_counter() - started) * 1000)
    assert sorted(times)[18] < 50, times


# ---------------------------------------------------------------- the judge and its fallback


def _judge_workspace_candidates(workspace: Workspace) -> list[CandidateRecord]:
    from retrieval_kernel.applicability import retrieve_candidates

    candidates, _ = retrieve_candidates(workspace, "webhook signature HMAC raw body canonical JSON")
    return candidates


def test_judge_choice_is_used_and_hard_rules_still_hold(workspace: Workspace) -> None:
    seen: dict[str, object] = {}

    def judge(query, capsules, conditions):
        seen["capsules"], seen["conditions"] = capsules, conditions
        return {"hooks-canonical-json": "signs canonical JSON", "hooks-raw-body": "raw body", "hooks-raw-bytes": "raw"}

    candidates = _judge_workspace_candidates(workspace)
    selection = JudgeSelector(judge, budget_s=2).select(
        "verify the signature", candidates, ["signature_input=raw-body"]
    )
    assert selection.selector == "judge" and selection.fallback is None
    assert selection.ids == ["hooks-raw-body"]
    reasons = {r.record: r.reason for r in selection.rejected}
    assert reasons["hooks-canonical-json"] == CONTRADICTING_CONDITION
    assert reasons["hooks-raw-bytes"] == DUPLICATE_RULE
    assert seen["conditions"] == {"signature_input": ["raw-body"]}
    capsules = {c["record"]: c for c in seen["capsules"]}  # type: ignore[union-attr]
    assert capsules["hooks-raw-body"]["claims"] and capsules["hooks-raw-body"]["applies_when"]


def test_slow_judge_falls_back_to_the_rule_selector_within_budget(workspace: Workspace) -> None:
    def slow(query, capsules, conditions):
        time.sleep(2)
        return ["hooks-canonical-json"]

    candidates = _judge_workspace_candidates(workspace)
    query = "What do I feed into the HMAC signature check when the provider signs the raw body?"
    started = time.perf_counter()
    selection = JudgeSelector(slow, budget_s=0.2, fallback=RuleSelector(PARAMS)).select(query, candidates)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.5
    assert selection.fallback is not None and "0.2 s budget" in selection.fallback
    assert selection.selector == "judge->rule"
    expected = RuleSelector(PARAMS).select(query, candidates)
    assert selection.ids == expected.ids and selection.ids


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        (lambda q, c, k: (_ for _ in ()).throw(RuntimeError("model offline")), "RuntimeError: model offline"),
        (lambda q, c, k: 42, "unusable answer"),
    ],
)
def test_failing_judge_falls_back(workspace: Workspace, judge, message: str) -> None:
    candidates = _judge_workspace_candidates(workspace)
    selection = JudgeSelector(judge, fallback=RuleSelector(PARAMS)).select("raw body HMAC signature", candidates)
    assert selection.fallback is not None and message in selection.fallback
    assert selection.selector == "judge->rule"


def test_judge_budget_must_be_positive() -> None:
    with pytest.raises(InputError):
        JudgeSelector(lambda q, c, k: [], budget_s=0)


# ---------------------------------------------------------------- adapters


def test_cli_query_select_with_when(tmp_path: Path, make_notes, capsys) -> None:
    notes = make_notes(LESSONS)
    args = ["query", "How do we compute the HMAC signature of the webhook body?", "--notes", str(notes)]
    args += [
        "--store",
        str(tmp_path / "store"),
        "--lanes",
        "lexical",
        "--select",
        "--when",
        "signature_input=canonical-json",
    ]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)["selection"]
    assert data["conditions"] == {"signature_input": ["canonical-json"]}
    assert "hooks-raw-body" not in [r["record"] for r in data["records"]]
    assert {r["record"]: r["reason"] for r in data["rejected"]}["hooks-raw-body"] == CONTRADICTING_CONDITION
    assert main([*args, "--format", "text"]) == 0
    assert "rejected" in capsys.readouterr().out


def test_cli_when_without_select_or_malformed_is_bad_input(tmp_path: Path, make_notes, capsys) -> None:
    notes = make_notes(LESSONS)
    base = ["query", "raw body", "--notes", str(notes), "--store", str(tmp_path / "store"), "--lanes", "lexical"]
    assert main([*base, "--when", "a=b"]) == 2
    assert "--select" in capsys.readouterr().err
    assert main([*base, "--select", "--when", "oops"]) == 2
    assert "key=value" in capsys.readouterr().err


def test_context_magic_select(tmp_path: Path, make_notes, monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.error import UsageError
    from IPython.core.getipython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from retrieval_kernel.applicability import ApplicabilitySelection

    ip = start_ipython() or get_ipython()
    monkeypatch.chdir(tmp_path)
    ip.run_line_magic("load_ext", "retrieval_kernel")
    notes = make_notes(LESSONS)
    line = (
        f"--notes {notes} --store {tmp_path / 'store'} --lanes lexical --select --when signature_input=canonical-json "
        "How do we compute the HMAC signature of the webhook body?"
    )
    packet = ip.run_line_magic("context", line)
    assert isinstance(packet, SelectionPacket)
    result = packet.selection
    assert isinstance(result, ApplicabilitySelection)
    assert "hooks-raw-body" not in result.ids
    assert result.conditions == {"signature_input": ("canonical-json",)}
    with pytest.raises(UsageError, match="--select"):
        ip.run_line_magic("context", f"--notes {notes} --store {tmp_path / 'store'} --when a=b raw body")
    for magics in [c for c in ip.configurables if hasattr(c, "_workspaces")]:
        for ws in magics._workspaces.values():
            ws.close()
        magics._workspaces.clear()


# ---------------------------------------------------------------- needs, forks, context (issue 20)


def _record(record: str, path: str, title: str, claim: str, rank: int, **capsule: object) -> CandidateRecord:
    return CandidateRecord(
        Capsule(record, path, title, claims=(claim,), **capsule),  # type: ignore[arg-type]
        (PassageRef(f"{record}#p", 1, 3, f"{title}. {claim}"),),
        rank=rank,
        lanes={"lexical": (rank, 10.0 / rank)},
    )


def test_need_parts_keep_the_asking_parts() -> None:
    parts = [need.text for need in need_parts("Our cron runs twice. How do we dedupe it, and who owns the pager?")]
    assert parts == ["How do we dedupe it", "who owns the pager"]
    assert [need.text for need in need_parts("cache keys for tenants")] == ["cache keys for tenants"]


def test_an_unknown_deciding_condition_is_a_needs_condition_outcome() -> None:
    candidates = [
        _record(
            "shared",
            "cache/shared.md",
            "Cache key layout",
            "Build one cache key per resource.",
            1,
            applies_when={"data": ("shared",)},
        ),
        _record(
            "per-customer",
            "cache/per-customer.md",
            "Cache key layout per tenant",
            "Build the cache key with the tenant prefix per resource.",
            2,
            applies_when={"data": ("per-customer",)},
        ),
    ]
    params = Thresholds(weights=PARAMS.weights, bias=PARAMS.bias, min_first=0.02, min_keep=0.01)
    selection = RuleSelector(params).select("How should the cache key be built for each resource?", candidates)
    assert selection.outcome == "needs_condition"
    assert selection.fork is not None and selection.fork.key == "data"
    assert selection.fork.sides == {"per-customer": ("per-customer",), "shared": ("shared",)}
    assert selection.ids == []  # no side is returned until the caller states the condition
    data = selection.to_dict()
    assert data["outcome"] == "needs_condition" and data["needs_condition"]["key"] == "data"
    for shown in (str(selection), selection._repr_markdown_(), selection._repr_html_()):
        assert "needs_condition" in shown and "data=per-customer" in shown
    stated = RuleSelector(params).select(
        "How should the cache key be built for each resource?", candidates, {"data": "shared"}
    )
    assert stated.outcome == "selected" and stated.ids == ["shared"]


def test_conditions_are_read_within_the_question_context() -> None:
    candidates = [
        _record("a", "hooks/a.md", "Verify webhook signature", "Verify the webhook signature.", 1),
        _record("b", "hooks/b.md", "Webhook retries", "Retry webhook deliveries.", 2),
        _record("c", "cache/c.md", "Shared cache", "Share the cache.", 3, applies_when={"data": ("shared",)}),
    ]
    assert context_of(candidates) == "hooks"
    task, matches = task_conditions("How do we verify the shared webhook signature?", candidates, {})
    assert task == {} and matches == []


def test_open_questions_name_the_parts_nothing_answers(workspace: Workspace) -> None:
    selection = select(
        workspace, "How do we compare the signature with the header, and who owns the billing pager rotation?"
    )
    assert selection.ids == ["hooks-constant-time"]
    assert selection.open_questions == ("who owns the billing pager rotation",)
    assert selection.to_dict()["open_questions"] == ["who owns the billing pager rotation"]
    assert any("open question" in line for line in str(selection).splitlines())
    assert "Open questions" in selection._repr_markdown_() and "Open questions" in selection._repr_html_()


def test_records_outside_the_question_context_need_a_high_score() -> None:
    candidates = [
        _record("a", "hooks/a.md", "Verify webhook signature", "Verify the webhook signature over the raw body.", 1),
        _record("b", "hooks/b.md", "Webhook retries", "Retry webhook deliveries.", 2),
        _record("c", "cache/c.md", "Webhook signature cache", "Cache the webhook signature secret.", 3),
    ]
    params = Thresholds(weights=PARAMS.weights, bias=PARAMS.bias, min_first=0.02, min_keep=0.01, min_other_context=2.0)
    selection = RuleSelector(params).select("How do we verify the webhook signature and cache the secret?", candidates)
    assert "c" not in selection.ids
    assert {r.record: r.reason for r in selection.rejected}["c"] == "other_context"


def _dense(record: CandidateRecord, cosine: float) -> CandidateRecord:
    return replace(record, lanes={"dense": (record.rank, cosine)})


def test_a_far_phrased_question_keeps_the_dense_lanes_clear_leader_alone() -> None:
    """Below ``min_first`` (no shared words), the best record is kept when the dense lane singles it out."""
    question = "We never tried getting the data back from last year's archives; would we even know they work?"
    drills = _dense(_record("drills", "backup/drills.md", "Restore drills", "Run a monthly restore drill.", 1), 0.58)
    others = [
        _dense(_record("offsite", "backup/offsite.md", "Offsite copies", "Keep one immutable offsite copy.", 2), 0.47),
        _dense(_record("keys", "backup/keys.md", "Backup keys", "Hold backup keys in a separate account.", 3), 0.41),
    ]
    params = Thresholds(weights=PARAMS.weights, bias=PARAMS.bias, min_first=0.5, min_keep=0.5, lead_cosine=0.5)
    selection = RuleSelector(params).select(question, [drills, *others])
    assert selection.ids == ["drills"]
    assert any(flag.startswith("dense_lead:") and "0.11 above" in flag for flag in selection.records[0].flags)
    assert {r.record for r in selection.rejected} == {"offsite", "keys"}
    # no clear leader (0.02 ahead), a leader below the cosine floor, or the rule off: nothing applies
    close = [drills, _dense(others[0], 0.56), others[1]]
    assert RuleSelector(params).select(question, close).ids == []
    assert RuleSelector(replace(params, lead_cosine=0.6)).select(question, [drills, *others]).ids == []
    assert RuleSelector(replace(params, lead_cosine=2.0)).select(question, [drills, *others]).ids == []
    # the best-scoring record must be the leader: a question sharing a word with another record keeps nothing
    worded = question.replace("archives", "copies")
    assert RuleSelector(params).select(worded, [drills, *others]).ids == []


# ---------------------------------------------------------------- derived claims (notes without capsules)


def test_derive_claims_reads_rules_values_and_conditions() -> None:
    text = (
        "Some background about the team and its history here.\n\n"
        "- Calibration values are trusted for 30 days after their observed date.\n"
        "- If the note has no observed date, treat it as unverified.\n\n"
        "```\nmust not be read: code\n```\n"
    )
    claims, conditions = derive_claims([(("Source age", "Limits"), text)])
    assert claims == (
        "Source age > Limits: Calibration values are trusted for 30 days after their observed date.",
        "Source age > Limits: If the note has no observed date, treat it as unverified.",
    )
    assert conditions == ("If the note has no observed date, treat it as unverified.",)


PLAIN = {
    "adr/0001-queue.md": "---\nstatus: accepted\n---\n# Use Kestrel streams for order events\n\n"
    "## Decision\n\nWe decided to use Kestrel streams for every order event. Consumers must be idempotent.\n",
    "adr/0002-cache.md": "# Cache stock availability\n\n## Decision\n\nStock availability is cached for 60 seconds.\n",
    "adr/0003-lesson.md": lesson(
        "queue-lesson",
        "Order events need a dead-letter stream",
        ["Give every order event stream a dead-letter stream."],
    ),
}


def test_select_on_notes_without_capsules_uses_derived_claims(tmp_path: Path, make_notes) -> None:
    ws = Workspace(make_notes(PLAIN), store_dir=tmp_path / "store", lanes=("lexical",))
    ws.index()
    try:
        params = Thresholds(weights=PARAMS.weights, bias=PARAMS.bias, min_first=0.3, min_keep=0.3)
        selection = select_applicable(ws, "Which stream do we use for order events?", selector=RuleSelector(params))
        assert "adr/0001-queue" in selection.ids
        record = selection.records[selection.ids.index("adr/0001-queue")]
        assert record.capsule is not None and record.capsule.derived
        assert any("We decided to use Kestrel streams" in claim for claim in record.capsule.claims)
        assert any(flag.startswith("derived_claims") for flag in record.flags)
        authored = select_applicable(ws, "dead-letter stream for order events", selector=RuleSelector(params))
        lesson_record = authored.records[authored.ids.index("queue-lesson")]
        assert lesson_record.capsule is not None and not lesson_record.capsule.derived
        assert lesson_record.capsule.claims == ("Give every order event stream a dead-letter stream.",)
        nothing = select_applicable(ws, "What is the office coffee budget?", selector=RuleSelector(params))
        assert nothing.empty
    finally:
        ws.close()


# ---------------------------------------------------------------- a selection is a packet


def test_a_selection_has_the_packet_contract_and_its_own_fields(workspace: Workspace) -> None:
    query = "How do we compare the signature with the header, and who owns the billing pager rotation?"
    packet = workspace.query(query, as_of="2026-11-01", max_chars=6000)
    chosen = select_packet(
        workspace, query, selector=RuleSelector(PARAMS), as_of="2026-11-01", max_chars=6000, refresh=False
    )
    plain, selected = packet.to_dict(), chosen.to_dict()
    assert list(selected)[: len(plain)] == list(plain)
    assert list(selected)[len(plain) :] == ["selection"]
    assert selected["as_of"] == "2026-11-01"
    assert selected["budget"] == {"unit": "chars", "limit": 6000, "used": len(chosen.to_json())}
    assert selected["budget"]["used"] <= 6000
    assert {item["path"] for item in selected["evidence"]} == {"hooks/compare.md"}
    fields = selected["selection"]
    assert fields["outcome"] == "selected"
    assert [r["record"] for r in fields["records"]] == ["hooks-constant-time"]
    assert fields["records"][0]["needs"] and fields["records"][0]["why"]
    assert fields["open_questions"] == ["who owns the billing pager rotation"]
    assert all(r["reason"] and r["detail"] for r in fields["rejected"])
    assert chosen.trace_id and selected["trace_id"] == chosen.trace_id
    again = select_packet(
        workspace, query, selector=RuleSelector(PARAMS), as_of="2026-11-01", max_chars=6000, refresh=False
    )
    assert again.trace_id == chosen.trace_id and again.evidence == chosen.evidence  # timings never move the room
    for shown in (str(chosen), chosen._repr_markdown_(), chosen._repr_html_()):
        assert "hooks-constant-time" in shown and "pager rotation" in shown
    empty = select_packet(workspace, "What is the office coffee budget?", selector=RuleSelector(PARAMS), refresh=False)
    assert empty.abstained and empty.evidence == () and empty.selection is not None and empty.selection.empty
    with pytest.raises(BudgetError):
        select_packet(workspace, query, selector=RuleSelector(PARAMS), max_chars=1000, refresh=False)


def test_a_part_naming_no_subject_is_not_a_need_of_its_own() -> None:
    parts = question_parts(
        "Redis failed over and every request hung; separately the local cache grows. What should we change?"
    )
    assert [need.text for need in parts] == [
        "Redis failed over and every request hung",
        "separately the local cache grows",
    ]
