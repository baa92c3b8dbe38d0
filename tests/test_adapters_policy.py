"""Policy through the adapters: CLI ``query`` / ``trace`` and the ``%context`` magics.

Caller scopes, intent and audit pass through; conflicts and excluded items are
rendered in every format; note text is inert in HTML; traces are readable from
the CLI and from ``%context_trace``; ``%%context_check`` grounds an answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from retrieval_kernel import Packet, Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.magics import ContextMagics

# start_ipython() only builds the shell once per process; later calls return None.
ip = start_ipython() or get_ipython()

AS_OF = "2026-10-15"
QUESTION = "refund window and shipping days"
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"

# Revision A (superseded by B, both authoritative), two same-authority notes that disagree
# on shipping_days (unresolved), and one note per tenant.
NOTES = {
    "refund-a.md": (
        "---\nid: refund-policy-a\nrevision: A\nauthority: authoritative\nstatus: superseded\n"
        "superseded_by: [refund-policy-b]\nobserved: 2026-09-01\nasserts: {refund_window_days: 30}\n---\n"
        "# Refund window (old)\n\nRefunds are accepted within 30 days of purchase.\n"
    ),
    "refund-b.md": (
        "---\nid: refund-policy-b\nrevision: B\nauthority: authoritative\nsupersedes: [refund-policy-a@A]\n"
        "observed: 2026-10-01\nasserts: {refund_window_days: 14}\n---\n"
        "# Refund window\n\nRefunds are accepted within 14 days of purchase.\n"
    ),
    "ship-east.md": (
        "---\nid: shipping-east\nauthority: reference\nobserved: 2026-10-05\nasserts: {shipping_days: 3}\n---\n"
        "# Shipping time east\n\nShipping takes 3 days from the east depot.\n"
    ),
    "ship-west.md": (
        "---\nid: shipping-west\nauthority: reference\nobserved: 2026-10-06\nasserts: {shipping_days: 5}\n---\n"
        "# Shipping time west\n\nShipping takes 5 days from the west depot.\n"
    ),
    "tenant-a.md": (
        "---\nid: tenant-a-refunds\nscope: [tenant-a]\nobserved: 2026-10-02\n---\n"
        "# Tenant A refund exception\n\nRefunds for tenant A may take longer after purchase.\n"
    ),
    "tenant-b.md": (
        "---\nid: tenant-b-refunds\nscope: [tenant-b]\nobserved: 2026-10-02\n---\n"
        "# Tenant B refund exception\n\nRefunds for tenant B are handled by the reseller.\n"
    ),
}
OLD, NEW = "refund-policy-a#refund-window-old", "refund-policy-b#refund-window"
EAST, WEST = "shipping-east#shipping-time-east", "shipping-west#shipping-time-west"
TENANT_A, TENANT_B = "tenant-a-refunds#tenant-a-refund-exception", "tenant-b-refunds#tenant-b-refund-exception"
SUPERSEDED_LINE = f"{OLD} (refund-a.md:10-12) superseded: superseded by refund-b.md"

# Hostile note text in an excerpt, a heading, an assertion value (conflicts), a note id
# and a written status (excluded section).
HOSTILE = {
    "east.md": (
        f'---\nid: ship-east\nauthority: reference\nasserts: {{shipping_days: "3 {SCRIPT}"}}\n---\n'
        f"# Shipping east {SCRIPT}\n\nShipping takes 3 days. {IMG}\n"
    ),
    "west.md": (
        f'---\nid: ship-west\nauthority: reference\nasserts: {{shipping_days: "5 {IMG}"}}\n---\n'
        f"# Shipping west\n\nShipping takes 5 days. {SCRIPT}\n"
    ),
    "draft.md": (
        f'---\nid: "ship-draft {IMG}"\nstatus: "draft {SCRIPT}"\n---\n# Shipping draft\n\nShipping takes 9 days.\n'
    ),
}


def write_notes(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def query_argv(notes: Path, *extra: str, text: str = QUESTION) -> list[str]:
    """``query`` against ``notes`` and its default store, lexical lane only (no model to load)."""
    return ["query", text, "--notes", str(notes), "--as-of", AS_OF, "--lanes", "lexical", *extra]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def notes(make_notes) -> Path:
    return make_notes(NOTES)


# ---------------------------------------------------------------- CLI query


def test_cli_query_passes_scope_intent_and_audit(notes: Path, capsys) -> None:
    code, out, err = run(query_argv(notes, "--scope", "tenant-a", "--intent", "verify", "--audit"), capsys)
    assert (code, err) == (0, "")
    packet = json.loads(out)
    assert packet["scopes"] == ["tenant-a"]
    assert packet["intent"] == "verify"
    roles = {item["id"]: item["role"] for item in packet["evidence"]}
    assert roles[TENANT_A] == "current"
    assert roles[OLD] == "historical"  # --audit: shown, as history
    assert TENANT_B not in out
    assert packet["exclusions"]["scope"] == 1
    assert packet["abstained"] is True
    assert packet["abstention_reason"] == "unresolved_conflict"
    conflicts = {c["proposition"]: c for c in packet["conflicts"]}
    assert conflicts["shipping_days"]["resolution"] == "unresolved"
    assert conflicts["shipping_days"]["required_behavior"] == "abstain_or_escalate"
    assert sorted(side["id"] for side in conflicts["shipping_days"]["evidence"]) == [EAST, WEST]
    assert conflicts["refund_window_days"]["winner"] == NEW
    assert [(e["id"], e["reason"]) for e in packet["excluded"]] == [(OLD, "superseded")]


def test_cli_query_without_scope_or_audit(notes: Path, capsys) -> None:
    code, out, _ = run(query_argv(notes), capsys)
    assert code == 0
    packet = json.loads(out)
    assert packet["scopes"] == []
    assert packet["intent"] == "orient"
    ids = {item["id"] for item in packet["evidence"]}
    assert TENANT_A not in ids and TENANT_B not in ids
    assert OLD not in ids  # without audit the superseded revision is not evidence ...
    assert [e["id"] for e in packet["excluded"]] == [OLD]  # ... only listed as excluded
    assert packet["exclusions"]["scope"] == 2


def test_cli_query_all_scopes(notes: Path, capsys) -> None:
    code, out, _ = run(query_argv(notes, "--scope", "*"), capsys)
    assert code == 0
    packet = json.loads(out)
    assert {TENANT_A, TENANT_B} <= {item["id"] for item in packet["evidence"]}
    assert packet["exclusions"]["scope"] == 0


@pytest.mark.parametrize(
    ("fmt", "markers"),
    [
        (
            "text",
            [
                "intent verify; scopes tenant-a",
                "Conflicts:",
                "on shipping_days: ",
                " = 3 (reference, ",
                " = 5 (reference, ",
                "→ unresolved; abstain_or_escalate",
                "on refund_window_days: ",
                "Excluded:",
                f"  {SUPERSEDED_LINE}",
                "observed 2026-10-05 (10 days before as-of; stale, fresh for 7 d) · indexed ",
            ],
        ),
        (
            "markdown",
            [
                "intent verify; scopes tenant-a",
                "**Conflicts**",
                "on shipping\\_days: ",
                "→ unresolved; abstain\\_or\\_escalate",
                "on refund\\_window\\_days: ",
                "**Excluded**",
                "- refund-policy-a\\#refund-window-old (refund-a.md:10-12) superseded: superseded by refund-b.md",
                "observed 2026-10-05 (10 days before as-of; stale, fresh for 7 d) · indexed ",
            ],
        ),
        (
            "html",
            [
                "intent verify; scopes tenant-a",
                '<div class="rk-conflicts"><b>Conflicts</b><ul>',
                '<li class="rk-conflict">c',
                "on shipping_days: ",
                "→ unresolved; abstain_or_escalate</li>",
                '<div class="rk-excluded rk-meta"><b>Excluded</b><ul>',
                f"<li>{SUPERSEDED_LINE}</li>",
                "observed 2026-10-05 (10 days before as-of; stale, fresh for 7 d) · indexed ",
            ],
        ),
    ],
)
def test_cli_query_formats_render_conflicts_and_excluded(notes: Path, capsys, fmt: str, markers: list[str]) -> None:
    code, out, err = run(
        query_argv(notes, "--scope", "tenant-a", "--intent", "verify", "--audit", "--format", fmt), capsys
    )
    assert (code, err) == (0, "")
    for marker in markers:
        assert marker in out, marker
    assert "tenant-b" not in out.lower()
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_cli_query_bad_intent_is_a_usage_error(notes: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(query_argv(notes, "--intent", "x"))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--intent" in err and "invalid choice: 'x'" in err


# ---------------------------------------------------------------- CLI trace


def test_cli_trace_prints_the_trace_as_text_and_json(notes: Path, capsys) -> None:
    code, out, _ = run(query_argv(notes, "--scope", "tenant-a", "--audit"), capsys)
    assert code == 0
    trace_id = json.loads(out)["trace_id"]

    code, text, err = run(["trace", trace_id, "--notes", str(notes)], capsys)
    assert (code, err) == (0, "")
    lines = text.rstrip("\n").split("\n")
    assert lines[0].startswith(f"trace {trace_id}  as of {AS_OF}  intent orient  scopes tenant-a  audit True")
    assert "lanes:" in lines and "eligibility:" in lines
    assert f"  - {OLD} [superseded] superseded by refund-b.md" in lines
    assert any(
        line.startswith("conflict c") and line.endswith(" on shipping_days: unresolved -> abstain_or_escalate")
        for line in lines
    )
    assert lines[-1] == "abstained: unresolved_conflict"
    assert QUESTION not in text

    code, raw, err = run(["trace", trace_id, "--notes", str(notes), "--json"], capsys)
    assert (code, err) == (0, "")
    trace = json.loads(raw)
    assert trace["trace_id"] == trace_id
    assert trace["scopes"] == ["tenant-a"]
    with Workspace(notes, lanes=("lexical",)) as ws:
        assert ws.trace(trace_id) == trace


def test_cli_trace_with_an_explicit_store(notes: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "elsewhere"
    code, out, _ = run(query_argv(notes, "--store", str(store)), capsys)
    trace_id = json.loads(out)["trace_id"]
    assert run(["trace", trace_id, "--notes", str(notes), "--store", str(store), "--json"], capsys)[0] == 0
    code, out, err = run(["trace", trace_id, "--notes", str(notes)], capsys)  # the default store never saw it
    assert code == 2
    assert out == ""
    assert "no store at" in err  # and reading a trace does not create one
    assert not (notes / ".retrieval_kernel").exists()


def test_cli_trace_unknown_id_exits_2_with_a_message(notes: Path, capsys) -> None:
    assert run(query_argv(notes), capsys)[0] == 0
    code, out, err = run(["trace", "feedfacefeedface", "--notes", str(notes)], capsys)
    assert code == 2
    assert out == ""
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1
    assert lines[0].startswith("retrieval-kernel trace: no trace 'feedfacefeedface' in the store ")
    assert "Traceback" not in err


def test_cli_trace_missing_notes_folder_exits_2(tmp_path: Path, capsys) -> None:
    code, out, err = run(["trace", "feedfacefeedface", "--notes", str(tmp_path / "nope")], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("retrieval-kernel trace: ")
    assert "does not exist" in err


# ---------------------------------------------------------------- hostile note text


@pytest.fixture
def hostile(make_notes) -> Path:
    return make_notes(HOSTILE)


def _hostile_output(hostile: Path, fmt: str, capsys) -> str:
    code, out, err = run(query_argv(hostile, "--audit", "--format", fmt, text="shipping days"), capsys)
    assert (code, err) == (0, "")
    return out


def test_html_renders_hostile_note_text_inert(hostile: Path, capsys) -> None:
    out = _hostile_output(hostile, "html", capsys)
    evidence = out.split('<div class="rk-item', 1)[1].split('<div class="rk-conflicts">')[0]
    conflicts = out.split('<div class="rk-conflicts">')[1].split('<div class="rk-excluded')[0]
    excluded = out.split('<div class="rk-excluded')[1]
    escaped_script, escaped_img = "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;"
    for name, section in (("evidence", evidence), ("conflicts", conflicts)):
        assert escaped_script in section, name
        assert escaped_img in section, name
    assert escaped_img in excluded  # the excluded note's hostile id; its details quote no note text
    assert "Shipping east &lt;script&gt;alert(1)&lt;/script&gt;</b>" in evidence
    lowered = out.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "onerror=alert(1)>" not in lowered
    # every tag left is one the renderer writes itself
    tags = set(re.findall(r"<\s*/?\s*([a-zA-Z][\w-]*)", out))
    assert tags <= {"style", "div", "i", "b", "ul", "li", "code", "span", "pre", "a"}, tags


def test_markdown_keeps_hostile_text_inside_fences_or_escaped(hostile: Path, capsys) -> None:
    out = _hostile_output(hostile, "markdown", capsys)
    outside = re.sub(r"^(`{3,})text\n.*?^\1$", "", out, flags=re.DOTALL | re.MULTILINE)
    assert "```" not in outside
    assert "<script" not in outside.lower()
    assert "<img" not in outside.lower()
    assert "**Conflicts**" in outside and "**Excluded**" in outside
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outside.split("**Conflicts**")[1]
    assert "&lt;img src=x onerror=alert(1)&gt;" in outside.split("**Excluded**")[1]


# ---------------------------------------------------------------- the magics


def _context_magics() -> list[ContextMagics]:
    return [c for c in ip.configurables if isinstance(c, ContextMagics)]


MAGIC_SETTINGS = ("notes_dir", "store_dir", "as_of", "max_bytes", "max_chars", "top", "refresh", "scope", "intent")


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Extension loaded, cwd in an empty tmp folder, settings and the last packet reset afterwards."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ip.run_line_magic("load_ext", "retrieval_kernel")
    for magics in _context_magics():
        magics.last_packet = None
        magics._last_workspace = None
    yield ip
    if "ContextMagics" in ip.config:
        del ip.config["ContextMagics"]
    for magics in _context_magics():
        for name in MAGIC_SETTINGS:
            setattr(magics, name, None)
        for workspace in magics._workspaces.values():
            workspace.close()
        magics._workspaces.clear()
        magics.last_packet = None
        magics._last_workspace = None
    ip.user_ns.pop("answer_packet", None)


@pytest.fixture(scope="module")
def magic_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("policy-magics") / "notes", NOTES)


@pytest.fixture(scope="module")
def magic_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module (the magic's workspace builds the dense lane once)."""
    return tmp_path_factory.mktemp("policy-magics-store") / "store"


def magic_line(notes: Path, store: Path, rest: str) -> str:
    return f"--notes {notes} --store {store} --as-of {AS_OF} --lanes lexical {rest}"


def run_cell_ok(source: str):
    result = ip.run_cell(source)
    assert result.error_before_exec is None, result.error_before_exec
    assert result.error_in_exec is None, result.error_in_exec
    return result


def test_context_magic_passes_scope_intent_and_audit(shell, magic_notes: Path, magic_store: Path) -> None:
    question = "refund window and shipping days?"
    rest = f"--scope tenant-a --intent verify --audit {question}"
    packet = run_cell_ok(f"%context {magic_line(magic_notes, magic_store, rest)}").result
    assert isinstance(packet, Packet)
    assert packet.query == question  # the trailing "?" is part of the question, not help
    assert packet.scopes == ("tenant-a",)
    assert packet.intent == "verify"
    roles = {item.id: item.role for item in packet.evidence}
    assert roles[TENANT_A] == "current"
    assert roles[OLD] == "historical"
    assert TENANT_B not in roles
    assert packet.abstention_reason == "unresolved_conflict"


def test_context_magic_without_caller_options(shell, magic_notes: Path, magic_store: Path) -> None:
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, QUESTION))
    assert packet.scopes == ()
    assert packet.intent == "orient"
    roles = {item.id: item.role for item in packet.evidence}
    assert TENANT_A not in roles
    assert OLD not in roles  # no --audit
    assert packet.exclusions["scope"] == 2


def test_scope_and_intent_traitlets_apply_when_the_options_are_absent(
    shell, magic_notes: Path, magic_store: Path
) -> None:
    ip.run_line_magic("config", 'ContextMagics.scope = "tenant-a"')
    ip.run_line_magic("config", 'ContextMagics.intent = "plan"')
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, QUESTION))
    assert packet.scopes == ("tenant-a",)
    assert packet.intent == "plan"
    assert TENANT_A in {item.id for item in packet.evidence}
    override = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--scope tenant-b {QUESTION}"))
    assert override.scopes == ("tenant-b",)
    assert override.intent == "plan"
    ids = {item.id for item in override.evidence}
    assert TENANT_B in ids and TENANT_A not in ids
    verify = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--intent verify {QUESTION}"))
    assert (verify.scopes, verify.intent) == (("tenant-a",), "verify")


def test_scope_option_takes_a_comma_separated_list(shell, magic_notes: Path, magic_store: Path) -> None:
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--scope tenant-b,tenant-a {QUESTION}"))
    assert packet.scopes == ("tenant-a", "tenant-b")
    assert {TENANT_A, TENANT_B} <= {item.id for item in packet.evidence}


def test_bad_intent_option_is_a_usage_error(shell, magic_notes: Path, magic_store: Path) -> None:
    with pytest.raises(UsageError, match=r"invalid choice: 'x'"):
        ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--intent x {QUESTION}"))
    result = ip.run_cell(f"%context {magic_line(magic_notes, magic_store, f'--intent x {QUESTION}')}")
    assert isinstance(result.error_in_exec, UsageError)


def test_bad_intent_traitlet_is_refused_when_set(
    shell, magic_notes: Path, magic_store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ip.run_line_magic("config", 'ContextMagics.intent = "x"')  # %config logs the refusal; it does not raise
    assert "ContextMagics.intent = 'x': intent must be one of orient, verify, plan, audit" in caplog.text
    assert all(magics.intent is None for magics in _context_magics())
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, QUESTION))
    assert packet.intent == "orient"  # the refused value never reached a query


def test_pyproject_scope_and_intent_apply(shell, magic_notes: Path, magic_store: Path) -> None:
    (Path.cwd() / "pyproject.toml").write_text(
        f'[tool.retrieval_kernel]\nnotes_dir = "{magic_notes}"\nstore_dir = "{magic_store}"\n'
        'scope = "tenant-a"\nintent = "verify"\n',
        encoding="utf-8",
    )
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} --lanes lexical {QUESTION}")
    assert (packet.scopes, packet.intent) == (("tenant-a",), "verify")


# ---------------------------------------------------------------- %context_trace


def test_context_trace_before_any_context_is_a_usage_error(shell) -> None:
    with pytest.raises(UsageError, match="run %context first"):
        ip.run_line_magic("context_trace", "")
    with pytest.raises(UsageError, match="run %context first"):
        ip.run_line_magic("context_trace", "--json")


def test_context_trace_prints_the_last_packets_trace(shell, magic_notes: Path, magic_store: Path) -> None:
    first = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--scope tenant-a {QUESTION}"))
    last = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--intent verify --audit {QUESTION}"))
    assert first.trace_id != last.trace_id
    with capture_output() as captured:
        returned = ip.run_line_magic("context_trace", "")
    assert returned is None
    lines = captured.stdout.rstrip("\n").split("\n")
    assert lines[0].startswith(f"trace {last.trace_id}  as of {AS_OF}  intent verify  scopes (none)  audit True")
    assert "eligibility:" in lines
    assert f"  - {OLD} [superseded] superseded by refund-b.md" in lines
    assert lines[-1] == "abstained: unresolved_conflict"
    final = ", ".join(f"{item.ref}={item.id}" for item in last.evidence)
    assert f"final: {final}" in lines

    with capture_output() as captured:
        ip.run_line_magic("context_trace", first.trace_id)
    assert captured.stdout.startswith(f"trace {first.trace_id}  as of {AS_OF}  intent orient  scopes tenant-a")


def test_context_trace_json(shell, magic_notes: Path, magic_store: Path) -> None:
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--scope tenant-a {QUESTION}"))
    with capture_output() as captured:
        ip.run_line_magic("context_trace", "--json")
    trace = json.loads(captured.stdout)
    assert trace["trace_id"] == packet.trace_id
    assert trace["scopes"] == ["tenant-a"]
    assert trace["final_order"] == [[item.ref, item.id, item.role] for item in packet.evidence]
    assert "query" not in trace and QUESTION not in captured.stdout
    with capture_output() as again:
        ip.run_line_magic("context_trace", f"{packet.trace_id} --json")
    assert json.loads(again.stdout) == trace


def test_context_trace_unknown_id_is_a_usage_error(shell, magic_notes: Path, magic_store: Path) -> None:
    ip.run_line_magic("context", magic_line(magic_notes, magic_store, QUESTION))
    with pytest.raises(UsageError, match="no trace 'feedfacefeedface'"):
        ip.run_line_magic("context_trace", "feedfacefeedface")


def test_context_trace_after_json_output(shell, magic_notes: Path, magic_store: Path) -> None:
    with capture_output() as captured:
        assert ip.run_line_magic("context", magic_line(magic_notes, magic_store, f"--json {QUESTION}")) is None
    trace_id = json.loads(captured.stdout)["trace_id"]
    with capture_output() as traced:
        ip.run_line_magic("context_trace", "")
    assert traced.stdout.startswith(f"trace {trace_id} ")


# ---------------------------------------------------------------- %%context_check


GROUNDED = "Refunds are accepted within 14 days of purchase [e1]"
UNGROUNDED = "Refunds are accepted within 90 days of purchase [e1]"


def test_context_check_reports_grounded_and_ungrounded_claims(shell, magic_notes: Path, magic_store: Path) -> None:
    grounding = pytest.importorskip("retrieval_kernel.output.grounding")
    packet = ip.run_line_magic("context", magic_line(magic_notes, magic_store, "refund window"))
    assert packet.evidence[0].id == NEW
    report = ip.run_cell_magic("context_check", "", f"{GROUNDED}\n\n- {UNGROUNDED}\n")
    assert isinstance(report, grounding.GroundingReport)
    assert [c.supported for c in report.claims] == [True, False]
    assert report.claims[0].cites == ("e1",)
    assert "unsupported" in report.claims[1].codes
    assert "90" in report.claims[1].findings[0].message
    assert report.supported_fraction == 0.5
    assert report.unsupported_claims == 1
    assert report.citation_completeness == 1.0


def test_context_check_through_run_cell_and_packet_option(shell, magic_notes: Path, magic_store: Path) -> None:
    pytest.importorskip("retrieval_kernel.output.grounding")
    run_cell_ok(f"answer_packet = %context {magic_line(magic_notes, magic_store, 'refund window')}")
    ip.run_line_magic("context", magic_line(magic_notes, magic_store, "shipping days"))  # a different last packet
    report = run_cell_ok(f"%%context_check --packet answer_packet\n{GROUNDED}\n").result
    assert [c.supported for c in report.claims] == [True]
    against_last = run_cell_ok(f"%%context_check\n{GROUNDED}\n").result
    assert [c.supported for c in against_last.claims] == [False]


def test_context_check_without_a_packet_is_a_usage_error(shell) -> None:
    pytest.importorskip("retrieval_kernel.output.grounding")
    with pytest.raises(UsageError, match="no packet to check against"):
        ip.run_cell_magic("context_check", "", f"{GROUNDED}\n")
    ip.user_ns["answer_packet"] = {"not": "a packet"}
    with pytest.raises(UsageError, match="no packet to check against"):
        ip.run_cell_magic("context_check", "--packet answer_packet", f"{GROUNDED}\n")


def test_context_check_empty_answer_is_a_usage_error(shell, magic_notes: Path, magic_store: Path) -> None:
    pytest.importorskip("retrieval_kernel.output.grounding")
    ip.run_line_magic("context", magic_line(magic_notes, magic_store, "refund window"))
    with pytest.raises(UsageError, match="%%context_check: no claims to check"):
        ip.run_cell_magic("context_check", "", "  \n")
