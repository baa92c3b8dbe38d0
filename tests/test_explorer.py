"""The explorer panel: a thin ipywidgets view over :meth:`Workspace.query`.

User actions are simulated by setting widget values (``query_box.value`` runs the
query, as pressing Enter does) and by ``search_button.click()``. Every packet the
panel shows must be the one the core returns for the same arguments; every error
must land in the panel, never as a traceback; every piece of note text must be
escaped. Workspaces use the identity and lexical lanes (no embedding model) except
for the one ``slow`` test, whose dense lane fails without loading a model.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython
from IPython.testing.globalipapp import start_ipython

import retrieval_kernel
import retrieval_kernel.magics as magics_module
from retrieval_kernel import Budget, RetrievalKernelError, Workspace
from retrieval_kernel.errors import BudgetError
from retrieval_kernel.explorer import Explorer
from retrieval_kernel.magics import ContextMagics

# start_ipython() only builds the shell once per process; later calls return None.
ip = start_ipython() or get_ipython()

FAST = ("identity", "lexical")
AS_OF = "2026-10-15"
QUESTION = "Who owns a record?"
SETTINGS = ("notes_dir", "store_dir", "as_of", "max_bytes", "max_chars", "top", "refresh", "scope", "intent")


def md(title: str, body: str, **front: Any) -> str:
    head = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" if front else ""
    return f"{head}# {title}\n\n{body}\n"


REFUNDS = md(
    "Refund window",
    "Customers may request a refund within 30 days of purchase at the Zürich café counter.\n"
    "Refunds go back to the original card; the naïve rule of thumb is one receipt per refund.",
    id="refund-policy",
    observed="2026-10-01",
    authority="authoritative",
    status="current",
    asserts={"refund_window_days": 30},
)
SHIPPING = md(
    "Shipping refunds",
    "Shipping costs are refunded on request when a purchase arrives damaged; the courier collects returns.",
    observed="2026-09-01",
    authority="reference",
)
OLD_REFUNDS = md(
    "Old refund rule",
    "Refund requests were once accepted within 60 days of purchase, back when the counter opened.",
    id="old-refund-rule",
    status="deprecated",
)
STORE = {"refunds.md": REFUNDS, "shipping.md": SHIPPING, "old-refunds.md": OLD_REFUNDS}
REFUND_QUESTION = "How many days after purchase may customers request a refund?"

# Notes only tenant-a may see, disagreeing with each other (a scoped note never conflicts with a public one).
KESTREL = md(
    "Zephyrine acquisition memo",
    "The zephyrine merger grants quillfeather customers a refund within 90 days of purchase.",
    id="kestrel-memo",
    scope="tenant-a",
    authority="authoritative",
    asserts={"refund_window_days": 90},
)
KESTREL_ANNEX = md(
    "Kestrel annex",
    "The annex to the zephyrine memo limits quillfeather customers to a refund within 45 days of purchase.",
    id="kestrel-annex",
    scope="tenant-a",
    authority="authoritative",
    asserts={"refund_window_days": 45},
)
TENANT_A = {"tenant-a/kestrel-memo.md": KESTREL, "tenant-a/kestrel-annex.md": KESTREL_ANNEX}
KESTREL_MARKS = ("zephyrine", "quillfeather", "kestrel")

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"


# ---------------------------------------------------------------- helpers


@pytest.fixture
def fast_ws(tmp_path: Path, make_notes):
    """Build an identity+lexical workspace over ``{path: text}`` (not indexed: the explorer's query refreshes)."""
    opened: list[Workspace] = []

    def build(files: dict[str, str], lanes: tuple[str, ...] = FAST) -> Workspace:
        ws = Workspace(make_notes(files), store_dir=tmp_path / "store", lanes=lanes)
        opened.append(ws)
        return ws

    yield build
    for ws in opened:
        ws.close()


@pytest.fixture
def workshop_files(workshop_notes: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(workshop_notes.glob("*.md"))}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def text_of(fragment: str) -> str:
    """The visible text of an HTML fragment (tags dropped, entities decoded, <style> dropped)."""
    parser = _Text()
    parser.feed(re.sub(r"<style>.*?</style>", "", fragment, flags=re.S))
    parser.close()
    return "".join(parser.parts)


_ROW = re.compile(r'<details class="rk-row" data-evidence-id="([^"]*)"><summary>(.*?)</summary>(.*?)</details>', re.S)


def rows(explorer: Explorer) -> list[tuple[str, str, str]]:
    """``(evidence id, summary text, body html)`` for each result row."""
    return [(html.unescape(eid), text_of(summary), body) for eid, summary, body in _ROW.findall(explorer.results.value)]


def views(explorer: Explorer) -> dict[str, str]:
    return {
        "status": explorer.status.value,
        "results": explorer.results.value,
        "conflicts": explorer.conflicts.value,
        "packet_json": explorer.packet_json.value,
        "error_box": explorer.error_box.value,
    }


def lane_names(explorer: Explorer) -> list[str]:
    assert explorer.packet is not None
    return [lane.name for lane in explorer.packet.lanes]


def status_lanes(explorer: Explorer) -> str:
    match = re.search(r'<div class="rk-lanes">(.*?)</div>', explorer.status.value, re.S)
    assert match is not None, explorer.status.value
    return text_of(match.group(1))


def assert_panel_error(explorer: Explorer, message: str) -> None:
    assert explorer.error is not None
    assert message in explorer.error
    shown = text_of(explorer.error_box.value)
    assert message in shown
    assert explorer.error in shown
    assert "Traceback" not in explorer.error_box.value


# ---------------------------------------------------------------- typing a query


def test_typing_a_query_runs_it_and_shows_the_cores_packet(fast_ws, workshop_files) -> None:
    ws = fast_ws(workshop_files)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    assert explorer.packet is None  # nothing typed yet: nothing ran
    explorer.intent.value = "verify"
    explorer.unit.value = "bytes"
    explorer.budget.value = 6_000
    explorer.top.value = 3
    explorer.query_box.value = QUESTION  # what pressing Enter in the box does
    assert explorer.error is None
    packet = explorer.packet
    assert packet is not None
    core = ws.query(
        QUESTION,
        as_of=AS_OF,
        intent="verify",
        scopes=[],
        audit=False,
        top=3,
        lanes=list(FAST),
        max_bytes=6_000,
    )
    assert packet.to_json() == core.to_json()
    assert (packet.budget.unit, packet.budget.limit, packet.intent) == ("bytes", 6_000, "verify")
    assert 0 < len(packet.evidence) <= 3


def test_results_show_each_items_facts_and_its_exact_numbered_excerpt(fast_ws, workshop_files) -> None:
    ws = fast_ws(workshop_files)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query="workshop-record-ownership: who decides the owner?")
    packet = explorer.packet
    assert explorer.error is None and packet is not None and not packet.abstained
    shown = rows(explorer)
    assert [eid for eid, _, _ in shown] == [item.id for item in packet.evidence]
    assert any(hit.lane == "identity" for item in packet.evidence for hit in item.retrieved_by)
    for item, (_, summary, body) in zip(packet.evidence, shown, strict=True):
        assert item.module in summary
        assert item.heading in summary
        assert f"lines {item.line_start}-{item.line_end}" in summary
        assert f"observed {item.observed_at} ({item.freshness})" in summary
        assert f"indexed {item.indexed_at[:10]}" in summary
        assert (item.authority or "authority unknown") in summary
        assert (item.status or "status unknown") in summary
        assert item.role in summary
        for hit in item.retrieved_by:
            assert f"{hit.lane} #{hit.rank}" in summary
        pre = re.search(r"<pre>(.*?)</pre>", body, re.S)
        assert pre is not None
        numbered = text_of(pre.group(1)).split("\n")
        lines = item.excerpt.split("\n")
        assert len(numbered) == len(lines) == item.line_end - item.line_start + 1
        for number, (shown_line, line) in enumerate(zip(numbered, lines, strict=True), item.line_start):
            match = re.match(rf"\s*{number} ?(.*)$", shown_line, re.S)
            assert match is not None, shown_line
            assert match.group(1) == line
        assert f"why: {item.reason}" in text_of(body)
    # The workshop notes are observed 2026-10-01 with the default 7 fresh days: stale by the 15th.
    assert "observed 2026-10-01 (stale)" in shown[0][1]


def test_citation_in_the_results_links_to_the_note(fast_ws, workshop_files, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ws = fast_ws(workshop_files)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=QUESTION)
    assert explorer.packet is not None
    item = explorer.packet.evidence[0]
    body = rows(explorer)[0][2]
    link = re.search(r'<a class="rk-cite" href="([^"]*)"', body)
    assert link is not None
    assert html.unescape(link.group(1)) == f"notes/{item.path}"  # relative to the cwd, opens in JupyterLab
    assert (tmp_path / html.unescape(link.group(1))).is_file()


# ---------------------------------------------------------------- the search button and the controls


def test_search_button_reruns_with_the_changed_intent(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert explorer.packet is not None and explorer.packet.intent == "orient"
    explorer.intent.value = "plan"
    explorer.search_button.click()
    assert explorer.packet.intent == "plan"
    assert "intent plan" in text_of(explorer.status.value)
    core = ws.query(REFUND_QUESTION, as_of=AS_OF, intent="plan", lanes=list(FAST), max_chars=20_000)
    assert explorer.packet.to_json() == core.to_json()


@pytest.mark.parametrize("unit", ["bytes", "chars"])
def test_budget_and_unit_set_the_packets_budget(fast_ws, unit: str) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    explorer.unit.value = unit
    explorer.budget.value = 3_000
    explorer.search_button.click()
    packet = explorer.packet
    assert explorer.error is None and packet is not None
    assert (packet.budget.unit, packet.budget.limit) == (unit, 3_000)
    text = packet.to_json()
    assert len(text.encode("utf-8")) != len(text)  # the notes are not ASCII: the units really differ
    assert packet.budget.used == (len(text.encode("utf-8")) if unit == "bytes" else len(text))
    assert packet.budget.used <= 3_000
    assert f"{packet.budget.used:,}/3,000 {unit}" in text_of(explorer.status.value)


def test_top_caps_the_evidence(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION, top=8)
    assert explorer.packet is not None
    assert len(explorer.packet.evidence) >= 2
    explorer.top.value = 1
    explorer.search_button.click()
    assert len(explorer.packet.evidence) == 1
    assert len(rows(explorer)) == 1
    assert explorer.packet.exclusions.get("beyond_top", 0) >= 1


def test_as_of_changes_source_ages(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert explorer.packet is not None
    before = {item.path: item for item in explorer.packet.evidence}
    assert before["refunds.md"].source_age_days == 14
    assert before["refunds.md"].freshness == "stale"
    explorer.as_of.value = dt.date(2026, 10, 5)
    explorer.search_button.click()
    after = {item.path: item for item in explorer.packet.evidence}
    assert explorer.packet.as_of == "2026-10-05"
    assert after["refunds.md"].source_age_days == 4
    assert after["refunds.md"].freshness == "fresh"
    summary = next(s for eid, s, _ in rows(explorer) if eid == after["refunds.md"].id)
    assert "observed 2026-10-01 (fresh)" in summary
    assert "as of 2026-10-05" in text_of(explorer.status.value)


def test_a_scoped_note_shows_only_with_its_scope(fast_ws) -> None:
    ws = fast_ws({**STORE, **TENANT_A})
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)

    def assert_hidden() -> None:
        assert explorer.error is None and explorer.packet is not None
        assert not {item.path for item in explorer.packet.evidence} & set(TENANT_A)
        assert explorer.packet.conflicts == ()
        for name, value in views(explorer).items():
            for mark in KESTREL_MARKS:
                assert mark not in value.lower(), (name, mark)
        assert explorer.packet.exclusions.get("scope") == 2  # only ever counted
        assert "2 scope" in text_of(explorer.status.value)
        assert "refund_window_days" not in explorer.conflicts.value

    assert_hidden()
    explorer.scopes.value = ["tenant-a"]
    explorer.search_button.click()
    assert {item.path for item in explorer.packet.evidence} >= set(TENANT_A)
    assert "zephyrine" in explorer.results.value.lower()
    shown = text_of(explorer.conflicts.value)  # the two tenant-a notes disagree
    assert "refund_window_days" in shown and " = 45 " in shown and " = 90 " in shown
    assert "scopes tenant-a" in text_of(explorer.status.value)
    explorer.scopes.value = []
    explorer.search_button.click()
    assert_hidden()


def test_audit_shows_excluded_items_as_historical(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert explorer.packet is not None
    assert all(item.path != "old-refunds.md" for item in explorer.packet.evidence)
    assert explorer.packet.exclusions.get("deprecated") == 1
    assert "60 days" not in explorer.results.value
    explorer.audit.value = True
    explorer.search_button.click()
    old = [item for item in explorer.packet.evidence if item.path == "old-refunds.md"]
    assert [item.role for item in old] == ["historical"]
    assert all(item.role != "historical" for item in explorer.packet.evidence if item.path != "old-refunds.md")
    summary = next(s for eid, s, _ in rows(explorer) if eid == old[0].id)
    assert "historical" in summary
    assert "60 days" in explorer.results.value


def test_changing_a_control_reruns_the_question_on_screen(fast_ws, monkeypatch) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    calls: list[dict[str, Any]] = []
    query = ws.query

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return query(*args, **kwargs)

    monkeypatch.setattr(ws, "query", counted)
    explorer.top.value = 2
    assert calls == [] and explorer.packet is None  # no question on screen yet: nothing runs
    explorer.query_box.value = REFUND_QUESTION
    assert len(calls) == 1
    explorer.top.value = 1
    assert len(calls) == 2 and calls[-1]["top"] == 1
    assert len(explorer.packet.evidence) == 1
    explorer.lane_toggles["identity"].value = False
    assert len(calls) == 3
    assert lane_names(explorer) == ["lexical"]


# ---------------------------------------------------------------- lane toggles


def test_unticking_a_lane_removes_it_from_the_packet_and_the_status(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert lane_names(explorer) == ["identity", "lexical"]
    assert "lexical" in status_lanes(explorer)
    explorer.lane_toggles["lexical"].value = False
    explorer.search_button.click()
    assert explorer.error is None
    assert lane_names(explorer) == ["identity"]
    assert "lexical" not in status_lanes(explorer)
    assert "identity" in status_lanes(explorer)
    explorer.lane_toggles["lexical"].value = True
    explorer.search_button.click()
    assert lane_names(explorer) == ["identity", "lexical"]


def test_lanes_argument_picks_the_ticked_lanes(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, lanes=["lexical"], query=REFUND_QUESTION)
    assert {lane: box.value for lane, box in explorer.lane_toggles.items()} == {"identity": False, "lexical": True}
    assert lane_names(explorer) == ["lexical"]


def test_a_lane_with_a_recorded_failure_is_disabled_with_its_reason(fast_ws, monkeypatch) -> None:
    ws = fast_ws(STORE, lanes=("identity", "lexical", "dense"))
    ws.lane_errors["dense"] = "boom"
    monkeypatch.setattr(ws.lane("dense"), "sync", lambda: None)  # keep the recorded failure; load no model
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    dense = explorer.lane_toggles["dense"]
    assert dense.disabled
    assert dense.tooltip == "boom"
    assert not explorer.lane_toggles["lexical"].disabled
    assert explorer.lane_toggles["lexical"].tooltip != "boom"
    assert explorer.chosen_lanes == ["identity", "lexical"]
    explorer.query_box.value = REFUND_QUESTION
    assert explorer.error is None
    assert lane_names(explorer) == ["identity", "lexical"]  # a disabled lane is not run
    assert dense.disabled and dense.tooltip == "boom"


def test_a_lane_that_recovers_is_enabled_again(fast_ws) -> None:
    ws = fast_ws(STORE)
    ws.lane_errors["lexical"] = "lexical index is broken"
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    assert explorer.lane_toggles["lexical"].disabled
    assert explorer.lane_toggles["lexical"].tooltip == "lexical index is broken"
    del ws.lane_errors["lexical"]
    explorer.query_box.value = REFUND_QUESTION  # runs without lexical, then re-reads availability
    assert lane_names(explorer) == ["identity"]
    assert not explorer.lane_toggles["lexical"].disabled
    explorer.search_button.click()
    assert lane_names(explorer) == ["identity", "lexical"]


@pytest.mark.slow
def test_a_workspace_whose_dense_lane_fails_disables_the_dense_toggle(tmp_path: Path, make_notes) -> None:
    ws = Workspace(make_notes(STORE), tmp_path / "store", embedder="no-such-embedder")
    try:
        explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
        assert explorer.error is None
        dense_report = next(lane for lane in explorer.packet.lanes if lane.name == "dense")
        assert dense_report.status == "unavailable"
        assert "no-such-embedder" in dense_report.reason
        box = explorer.lane_toggles["dense"]
        assert box.disabled
        assert box.tooltip == dense_report.reason == ws.lane_errors["dense"]
        assert "no-such-embedder" in status_lanes(explorer)
        explorer.search_button.click()
        assert explorer.error is None
        assert lane_names(explorer) == ["identity", "lexical"]
        assert not explorer.packet.abstained
    finally:
        ws.close()


def test_unticking_every_lane_is_an_error_in_the_panel(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    for box in explorer.lane_toggles.values():
        box.value = False
    explorer.query_box.value = REFUND_QUESTION
    assert explorer.packet is None
    assert_panel_error(explorer, "choose at least one lane")
    assert explorer.run() is None


# ---------------------------------------------------------------- errors inside the panel


def test_an_empty_query_is_an_error_in_the_panel_and_clears_on_success(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    explorer.query_box.value = "   "
    assert_panel_error(explorer, "the query is empty")
    explorer.query_box.value = REFUND_QUESTION
    assert explorer.error is None
    assert explorer.error_box.value == ""
    assert explorer.packet is not None and not explorer.packet.abstained


def test_a_budget_outside_the_cores_range_is_refused_with_the_cores_message(fast_ws) -> None:
    """The slider cannot hold it, so the constructor says so rather than clamping it."""
    ws = fast_ws(STORE)
    with pytest.raises(BudgetError, match=r"2,000,000 bytes is outside the accepted range"):
        Explorer(workspace=ws, as_of=AS_OF, budget=Budget("bytes", 2_000_000))


def test_the_budget_is_one_object_not_a_number(fast_ws) -> None:
    ws = fast_ws(STORE)
    with pytest.raises(BudgetError, match=r"budget must be a Budget such as Budget\(unit='chars', limit=20000"):
        Explorer(workspace=ws, as_of=AS_OF, budget=4000)  # type: ignore[arg-type]
    explorer = Explorer(workspace=ws, as_of=AS_OF, budget=Budget("bytes", 4000))
    assert (explorer.unit.value, explorer.budget.value) == ("bytes", 4000)
    assert explorer.chosen_budget == Budget("bytes", 4000)
    explorer.query_box.value = REFUND_QUESTION
    assert explorer.packet is not None
    assert (explorer.packet.budget.unit, explorer.packet.budget.limit) == ("bytes", 4000)


def test_a_notes_folder_removed_after_opening_is_an_error_in_the_panel(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    shutil.rmtree(ws.notes_dir)
    explorer.query_box.value = REFUND_QUESTION
    assert_panel_error(explorer, "does not exist")
    assert str(ws.notes_dir) in explorer.error


def test_an_unexpected_exception_is_shown_not_raised(fast_ws, monkeypatch) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("kaput")

    monkeypatch.setattr(ws, "query", broken)
    explorer.query_box.value = REFUND_QUESTION
    assert_panel_error(explorer, "RuntimeError: kaput")
    assert explorer.progress_line.layout.display == "none"


@pytest.mark.parametrize(
    "options",
    [{"budget": Budget("chars", 500)}, {"top": 0}, {"top": 500}],
    ids=["budget-500", "top-0", "top-500"],
)
def test_a_constructor_value_out_of_range_is_reported_not_clamped(fast_ws, options: dict[str, Any]) -> None:
    ws = fast_ws(STORE)
    budget = options.get("budget")
    with pytest.raises(RetrievalKernelError):
        ws.query(REFUND_QUESTION, as_of=AS_OF, max_chars=budget and budget.limit, top=options.get("top", 8))
    try:
        explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION, **options)
    except RetrievalKernelError:
        return
    assert explorer.error is not None
    assert explorer.packet is None


# ---------------------------------------------------------------- conflicts and packet JSON


def test_conflicts_panel_shows_both_sides_unresolved(fast_ws) -> None:
    shop = md(
        "Shop refund rule",
        "The shop grants a refund within 14 days of purchase.",
        id="shop-refunds",
        authority="authoritative",
        asserts={"refund_window_days": 14},
    )
    ws = fast_ws({"refunds.md": REFUNDS, "shop.md": shop})
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    packet = explorer.packet
    assert packet is not None
    assert [c.proposition for c in packet.conflicts] == ["refund_window_days"]
    conflict = packet.conflicts[0]
    assert conflict.resolution == "unresolved"
    assert sorted(side.value for side in conflict.evidence) == [14, 30]
    shown = text_of(explorer.conflicts.value)
    assert "refund_window_days" in shown
    assert "unresolved" in shown
    for side in conflict.evidence:
        assert side.ref is not None
        assert f"{side.ref} = {side.value}" in shown
    assert packet.abstained and packet.abstention_reason == "unresolved_conflict"
    assert {item.path for item in packet.evidence} >= {"refunds.md", "shop.md"}  # both sides shown
    assert "Nothing applies (unresolved_conflict)" in text_of(explorer.results.value)


def test_no_conflict_says_so(fast_ws) -> None:
    ws = fast_ws({"refunds.md": REFUNDS, "shipping.md": SHIPPING})
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert explorer.packet is not None and explorer.packet.conflicts == ()
    assert "No conflicts" in text_of(explorer.conflicts.value)


def test_packet_json_is_the_packets_json_after_every_run(fast_ws) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF, query=REFUND_QUESTION)
    assert explorer.packet is not None
    assert json.loads(explorer.packet_json.value) == explorer.packet.to_dict()
    explorer.unit.value = "bytes"
    explorer.top.value = 1
    explorer.search_button.click()
    data = json.loads(explorer.packet_json.value)
    assert data == explorer.packet.to_dict()
    assert data["budget"]["unit"] == "bytes"
    assert len(data["evidence"]) == 1


# ---------------------------------------------------------------- HTML injection


def test_note_text_is_escaped_in_every_view(fast_ws) -> None:
    evil = {
        "evil-a.md": md(
            f"Launch {SCRIPT} and {IMG}",
            f"The launch code is kept here {SCRIPT} next to {IMG} on the launch desk.",
            id="evil-a",
            authority="authoritative",
            asserts={"launch_code": SCRIPT},
        ),
        "evil-b.md": md(
            f"Other launch {IMG}",
            f"Another launch code note says {IMG} for the launch desk {SCRIPT}.",
            id="evil-b",
            authority="authoritative",
            asserts={"launch_code": IMG},
        ),
    }
    ws = fast_ws(evil)
    explorer = Explorer(workspace=ws, as_of=AS_OF, scopes=[IMG], audit=True)
    explorer.query_box.value = "launch code desk"
    packet = explorer.packet
    assert explorer.error is None and packet is not None
    assert {item.path for item in packet.evidence} == {"evil-a.md", "evil-b.md"}
    assert packet.conflicts  # the evil values are shown in the conflicts panel too
    for name, value in views(explorer).items():
        if name == "packet_json":
            continue  # plain text in a Textarea, not HTML
        assert "<script" not in value.lower(), name
        assert "<img" not in value.lower(), name
    assert "&lt;script&gt;" in explorer.results.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in explorer.results.value
    assert SCRIPT in text_of(explorer.results.value)  # escaped, not dropped
    assert IMG in text_of(explorer.results.value)
    assert SCRIPT in text_of(explorer.conflicts.value)
    assert IMG in text_of(explorer.conflicts.value)
    assert IMG in text_of(explorer.status.value)  # the scope name
    assert json.loads(explorer.packet_json.value)["evidence"][0]["excerpt"].count("<") >= 2


def test_an_error_message_is_escaped(tmp_path: Path) -> None:
    notes = tmp_path / IMG
    notes.mkdir()
    (notes / "a.md").write_text(REFUNDS, encoding="utf-8")
    with Workspace(notes, tmp_path / "store", lanes=FAST) as ws:
        explorer = Explorer(workspace=ws, as_of=AS_OF)
        shutil.rmtree(notes)
        explorer.query_box.value = REFUND_QUESTION
        assert explorer.error is not None and IMG in explorer.error
        assert "<img" not in explorer.error_box.value
        assert IMG in text_of(explorer.error_box.value)


# ---------------------------------------------------------------- progress and construction


def test_progress_shows_while_running_and_hides_after(fast_ws, monkeypatch) -> None:
    ws = fast_ws(STORE)
    explorer = Explorer(workspace=ws, as_of=AS_OF)
    assert explorer.progress_line.layout.display == "none"
    during: list[tuple[object, int, str]] = []
    query = ws.query

    def watched(*args: Any, **kwargs: Any) -> Any:
        during.append((explorer.progress_line.layout.display, explorer.progress.value, explorer.progress_label.value))
        return query(*args, **kwargs)

    monkeypatch.setattr(ws, "query", watched)
    explorer.query_box.value = REFUND_QUESTION
    assert len(during) == 1
    display, value, label = during[0]
    assert display != "none"
    assert 0 < value < explorer.progress.max
    assert label
    assert explorer.progress_line.layout.display == "none"
    assert explorer.progress.value == explorer.progress.max
    assert explorer.progress_label.value == ""


def test_explorer_without_notes_or_workspace_raises() -> None:
    with pytest.raises(RetrievalKernelError, match="notes folder or a Workspace"):
        Explorer()


def test_explorer_from_a_notes_folder_waits_for_a_question(tmp_path: Path, make_notes) -> None:
    explorer = Explorer(make_notes(STORE), tmp_path / "store", as_of=AS_OF)
    try:
        assert explorer.workspace.notes_dir == tmp_path / "notes"
        assert explorer.workspace.store_dir == tmp_path / "store"
        assert list(explorer.lane_toggles) == list(explorer.workspace.lanes)
        assert explorer.packet is None and explorer.error is None
        assert explorer.results.value == "" and explorer.packet_json.value == ""
        assert explorer.as_of.value == dt.date(2026, 10, 15)
        assert explorer.query_box.continuous_update is False  # runs on Enter, not on every keystroke
    finally:
        explorer.workspace.close()


# ---------------------------------------------------------------- %context_explore


def _context_magics() -> list[ContextMagics]:
    return [c for c in ip.configurables if isinstance(c, ContextMagics)]


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Extension loaded, cwd in an empty tmp folder, magics' workspaces identity+lexical; reset afterwards."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(magics_module, "Workspace", functools.partial(Workspace, lanes=FAST))
    ip.run_line_magic("load_ext", "retrieval_kernel")
    yield ip
    if "ContextMagics" in ip.config:
        del ip.config["ContextMagics"]
    for magics in _context_magics():
        for name in SETTINGS:
            setattr(magics, name, None)
        for workspace in magics._workspaces.values():
            workspace.close()
        magics._workspaces.clear()
        magics.last_packet = None
    ip.user_ns.pop("x", None)


@pytest.fixture
def notes(tmp_path: Path, workshop_notes: Path) -> Path:
    target = tmp_path / "notes"
    shutil.copytree(workshop_notes, target)
    return target


def explore_line(notes: Path, rest: str, lanes: str = "identity,lexical") -> str:
    return f"--notes {notes} --store {notes.parent / 'store'} --as-of {AS_OF} --lanes {lanes} {rest}"


def test_context_explore_returns_an_explorer_answering_the_question(shell, notes: Path) -> None:
    explorer = shell.run_line_magic("context_explore", explore_line(notes, QUESTION))
    assert isinstance(explorer, Explorer)
    assert explorer.error is None
    packet = explorer.packet
    assert packet is not None
    assert packet.query == QUESTION
    assert explorer.query_box.value == QUESTION
    assert packet.as_of == AS_OF
    assert lane_names(explorer) == ["identity", "lexical"]
    assert not packet.abstained
    assert packet.evidence[0].path == "record-ownership.md"
    same = shell.run_line_magic("context", explore_line(notes, QUESTION))
    assert packet.to_json() == same.to_json()  # the explorer shows what %context would


def test_context_explore_carries_options_into_the_controls(shell, notes: Path) -> None:
    rest = "--max-bytes 4000 --top 2 --intent plan --scope tenant-a,ops --audit " + QUESTION
    explorer = shell.run_line_magic("context_explore", explore_line(notes, rest, lanes="lexical"))
    assert explorer.error is None
    assert {lane: box.value for lane, box in explorer.lane_toggles.items()} == {"identity": False, "lexical": True}
    assert lane_names(explorer) == ["lexical"]
    assert (explorer.unit.value, explorer.budget.value, explorer.top.value) == ("bytes", 4000, 2)
    assert (explorer.intent.value, explorer.audit.value) == ("plan", True)
    assert sorted(explorer.scopes.value) == ["ops", "tenant-a"]
    packet = explorer.packet
    assert (packet.budget.unit, packet.budget.limit, packet.intent) == ("bytes", 4000, "plan")
    assert packet.scopes == ("ops", "tenant-a")
    assert len(packet.evidence) <= 2


def test_context_explore_without_a_question_runs_nothing(shell, notes: Path) -> None:
    explorer = shell.run_line_magic("context_explore", explore_line(notes, ""))
    assert isinstance(explorer, Explorer)
    assert explorer.packet is None and explorer.error is None
    explorer.query_box.value = QUESTION
    assert explorer.packet is not None and explorer.packet.query == QUESTION


@pytest.mark.parametrize("assign", ["", "x = "], ids=["bare", "assigned"])
def test_context_explore_line_with_a_trailing_question_mark(shell, notes: Path, assign: str) -> None:
    result = shell.run_cell(f"{assign}%context_explore {explore_line(notes, QUESTION)}")
    assert result.error_before_exec is None, result.error_before_exec
    assert result.error_in_exec is None, result.error_in_exec
    explorer = result.result if not assign else shell.user_ns["x"]
    assert isinstance(explorer, Explorer)
    assert explorer.packet is not None
    assert explorer.packet.query == QUESTION  # the "?" stayed in the question, it was not read as help


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("--bogus 1 " + QUESTION, "unrecognized"),
        ("--intent nope " + QUESTION, "invalid choice"),
        ("--as-of yesterday " + QUESTION, "yesterday"),
        ("--max-bytes 4000 --max-chars 4000 " + QUESTION, "not allowed with"),
        ("--top", "needs a value"),
    ],
    ids=["unknown-option", "bad-intent", "bad-as-of", "both-budgets", "top-without-value"],
)
def test_context_explore_bad_option_is_a_usage_error(shell, notes: Path, rest: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("context_explore", explore_line(notes, rest))


def test_context_explore_missing_notes_folder_is_a_usage_error(shell, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        shell.run_line_magic("context_explore", f"--notes {tmp_path / 'nope'} {QUESTION}")
    with pytest.raises(UsageError, match="no notes folder"):
        shell.run_line_magic("context_explore", QUESTION)


@pytest.mark.parametrize(
    "option",
    ["--max-bytes 10", "--max-bytes 0", "--top 0", "--top 1000", "--lanes lexical,nope"],
    ids=["max-bytes-10", "max-bytes-0", "top-0", "top-1000", "unknown-lane"],
)
def test_context_explore_reports_what_context_rejects(shell, notes: Path, option: str) -> None:
    magic_line = f"--notes {notes} --store {notes.parent / 'store'} --as-of {AS_OF} {option} {QUESTION}"
    with pytest.raises(UsageError):
        shell.run_line_magic("context", magic_line)
    try:
        explorer = shell.run_line_magic("context_explore", magic_line)
    except UsageError:
        return
    assert explorer.error is not None  # at least said in the panel, not run with other settings
    assert explorer.packet is None


def test_explorer_is_importable_lazily_from_the_package() -> None:
    script = (
        "import sys, retrieval_kernel\n"
        "assert 'ipywidgets' not in sys.modules, 'ipywidgets imported with the package'\n"
        "assert 'retrieval_kernel.explorer' not in sys.modules\n"
        "from retrieval_kernel import Explorer\n"
        "from retrieval_kernel.explorer import Explorer as Direct\n"
        "assert Explorer is Direct and 'ipywidgets' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert retrieval_kernel.Explorer is Explorer
    with pytest.raises(AttributeError, match="Nope"):
        retrieval_kernel.Nope  # noqa: B018
