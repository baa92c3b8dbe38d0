"""Assembly: every packet fits its budget, cites exact lines, and accounts for what it left out."""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.notes import HEADING_LINE
from retrieval_kernel.errors import BudgetError, BudgetTooSmallError
from retrieval_kernel.output.packet import MAX_BUDGET, MIN_BUDGET, Packet
from retrieval_kernel.pipeline.answerability import content_terms

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = REPO_ROOT / "fixtures" / "workshop" / "notes"
AS_OF = "2026-10-15"


def measure(text: str, unit: str) -> int:
    return len(text.encode("utf-8")) if unit == "bytes" else len(text)


@cache
def source_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def is_content(line: str) -> bool:
    return bool(line.strip()) and HEADING_LINE.match(line) is None


def check_packet(ws: Workspace, packet, unit: str, limit: int, top: int) -> None:
    """Invariants every packet must satisfy, checked against independent sources."""
    text = packet.to_json()
    assert json.loads(text) == packet.to_dict()
    assert packet.budget.unit == unit
    assert packet.budget.limit == limit
    assert packet.budget.used == measure(text, unit)
    assert packet.budget.used <= limit
    assert packet.size() == packet.budget.used

    evidence = packet.evidence
    assert len(evidence) <= top
    assert packet.abstained == (not evidence)
    assert (packet.abstention_reason is None) == bool(evidence)
    assert [e.ref for e in evidence] == [f"e{i}" for i in range(1, len(evidence) + 1)]
    assert [e.rank for e in evidence] == list(range(1, len(evidence) + 1))
    assert len({e.id for e in evidence}) == len(evidence)

    stored = ws.records.passages(e.id for e in evidence)
    for item in evidence:
        lines = source_lines(ws.notes_dir / item.path)
        assert 1 <= item.line_start <= item.line_end <= len(lines)
        assert item.excerpt == "\n".join(lines[item.line_start - 1 : item.line_end]), item.ref
        full = stored[item.id].passage
        assert (item.path, item.module, item.heading, item.line_start) == (
            full.path,
            full.module,
            full.heading,
            full.line_start,
        )
        if item.truncated:
            assert item.line_end < full.line_end
            assert full.text.startswith(item.excerpt)
            assert any(is_content(line) for line in item.excerpt.split("\n")), "truncated to a bare heading"
            assert item.excerpt.split("\n")[-1].strip(), "truncated excerpt ends with a blank line"
        else:
            assert item.line_end == full.line_end
            assert item.excerpt == full.text
        assert item.live_verified is False


# ---------------------------------------------------------------- shared workshop workspace


@pytest.fixture(scope="module")
def workshop_ws(workshop_notes: Path, tmp_path_factory: pytest.TempPathFactory):
    assert workshop_notes == WORKSHOP
    ws = Workspace(workshop_notes, store_dir=tmp_path_factory.mktemp("workshop_store"), lanes=("lexical",))
    report = ws.index()
    assert len(report.added) == 7 and not report.problems
    yield ws
    ws.close()


def _corpus_words() -> list[str]:
    words: set[str] = set()
    for path in sorted(WORKSHOP.glob("*.md")):
        words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]+", path.read_text(encoding="utf-8")))
    return sorted(words)


CORPUS_WORDS = _corpus_words()
queries = st.lists(st.sampled_from(CORPUS_WORDS), min_size=1, max_size=6).map(" ".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=queries,
    limit=st.integers(min_value=1_000, max_value=20_000),
    unit=st.sampled_from(["bytes", "chars"]),
    top=st.integers(min_value=1, max_value=10),
)
def test_property_packets_fit_the_budget_and_cite_exact_lines(workshop_ws, query, limit, unit, top) -> None:
    kwargs = {"max_bytes": limit} if unit == "bytes" else {"max_chars": limit}
    try:
        packet = workshop_ws.query(query, as_of=AS_OF, top=top, refresh=False, **kwargs)
    except BudgetTooSmallError as exc:
        assert exc.minimum > limit
        return
    check_packet(workshop_ws, packet, unit, limit, top)
    if packet.abstention_reason == "underspecified_query":  # one generic word: nothing is retrieved
        assert len(set(content_terms(query))) <= 1 and packet.evidence == ()
        return

    candidates = [hit.passage_id for hit in workshop_ws.lexical.search(query, 50)]
    shown = [e.id for e in packet.evidence]
    assert len(set(shown)) == len(shown) and set(shown) <= set(candidates)
    left_out = packet.exclusions["budget"]
    if candidates:  # each candidate is shown, cut for the budget, beyond top, or judged not to answer
        weak, beyond = packet.exclusions.get("weak_match", 0), packet.exclusions.get("beyond_top", 0)
        assert len(shown) + left_out + beyond + weak == len(candidates)
        assert len(shown) + left_out == min(top, len(candidates) - weak)
        assert packet.abstained == (not shown)
    else:
        assert (shown, left_out) == ([], 0)
        assert packet.abstention_reason in {"no_match", "underspecified_query"}
    for item in packet.evidence:
        assert [(h.lane, h.rank) for h in item.retrieved_by] == [("lexical", candidates.index(item.id) + 1)]
        assert (item.observed_at, item.source_age_days, item.freshness) == ("2026-10-01", 14, "stale")


# ---------------------------------------------------------------- explicit budget tests


def test_whole_workshop_answer_within_default_budget(workshop_ws) -> None:
    packet = workshop_ws.query("who approves a production deployment", as_of=AS_OF, refresh=False)
    check_packet(workshop_ws, packet, "chars", 20_000, 8)
    assert packet.evidence[0].module == "workshop-operation-boundaries"
    assert packet.evidence[0].heading == "Production approval"


def test_budget_below_empty_packet_size_raises_with_minimum(workshop_ws) -> None:
    query = " ".join(["ledger"] * 150)  # ~1,050 characters, all of them echoed in the packet
    with pytest.raises(BudgetTooSmallError) as info:
        workshop_ws.query(query, as_of=AS_OF, max_chars=1_000, refresh=False)
    minimum = info.value.minimum
    assert minimum > 1_000
    assert str(minimum) in str(info.value).replace(",", "")
    assert isinstance(info.value, BudgetError)
    # the minimum is exact: one less still fails, the minimum itself succeeds
    with pytest.raises(BudgetTooSmallError):
        workshop_ws.query(query, as_of=AS_OF, max_chars=minimum - 1, refresh=False)
    packet = workshop_ws.query(query, as_of=AS_OF, max_chars=minimum, refresh=False)
    assert packet.budget.used <= minimum
    check_packet(workshop_ws, packet, "chars", minimum, 8)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_chars": MIN_BUDGET - 1},
        {"max_bytes": MIN_BUDGET - 1},
        {"max_chars": MAX_BUDGET + 1},
        {"max_bytes": MAX_BUDGET + 1},
        {"max_bytes": 5_000, "max_chars": 5_000},
        {"max_chars": 5_000.0},
        {"max_chars": True},
        {"max_chars": -5},
        {"top": 0},
        {"top": 101},
    ],
)
def test_out_of_range_budget_is_a_budget_error(workshop_ws, kwargs) -> None:
    with pytest.raises(BudgetError) as info:
        workshop_ws.query("ledger record", as_of=AS_OF, refresh=False, **kwargs)
    assert not isinstance(info.value, BudgetTooSmallError)


@pytest.mark.parametrize("kwargs", [{"max_chars": MIN_BUDGET}, {"max_bytes": MAX_BUDGET}, {"top": 100}])
def test_budget_range_bounds_are_inclusive(workshop_ws, kwargs) -> None:
    packet = workshop_ws.query("ledger record", as_of=AS_OF, refresh=False, **kwargs)
    assert packet.budget.used <= packet.budget.limit


# ---------------------------------------------------------------- units and exclusions on purpose-built notes


CJK_NOTE = "---\nobserved: 2026-10-10\n---\n# 校准记录\n\ncalibration notes for the mill\n" + "".join(
    f"第{i}行\uff1a校准数值在每次长时间运行后漂移\uff0c需要重新测量并记录。\n" for i in range(12)
)


def test_bytes_and_chars_count_non_ascii_differently(ws_for) -> None:
    ws = ws_for({"cjk.md": CJK_NOTE, "other.md": "# Other\n\nplain ascii words\n"})
    as_bytes = ws.query("calibration", as_of=AS_OF, max_bytes=20_000, refresh=False)
    as_chars = ws.query("calibration", as_of=AS_OF, max_chars=20_000, refresh=False)
    check_packet(ws, as_bytes, "bytes", 20_000, 8)
    check_packet(ws, as_chars, "chars", 20_000, 8)
    assert [e.excerpt for e in as_bytes.evidence] == [e.excerpt for e in as_chars.evidence]
    assert "校准" in as_chars.evidence[0].excerpt
    assert "校准" in as_chars.to_json()  # non-ASCII kept, not \\u-escaped
    # identical content apart from the unit, so the byte count exceeds the char count by the
    # UTF-8 overhead of the non-ASCII characters (2 extra bytes per CJK character)
    json_chars = as_bytes.to_json()
    extra = sum(len(ch.encode("utf-8")) - 1 for ch in json_chars)
    assert extra > 0
    assert as_bytes.budget.used == len(json_chars) + extra
    assert as_chars.budget.used == len(as_chars.to_json())
    assert as_bytes.budget.used > as_chars.budget.used


def test_a_limit_that_fits_in_chars_forces_truncation_in_bytes(ws_for) -> None:
    ws = ws_for({"cjk.md": CJK_NOTE})
    whole = ws.query("calibration", as_of=AS_OF, max_chars=20_000, refresh=False)
    limit = whole.budget.used  # exactly enough characters for the whole passage
    assert limit >= MIN_BUDGET
    in_chars = ws.query("calibration", as_of=AS_OF, max_chars=limit, refresh=False)
    in_bytes = ws.query("calibration", as_of=AS_OF, max_bytes=limit, refresh=False)
    check_packet(ws, in_chars, "chars", limit, 8)
    check_packet(ws, in_bytes, "bytes", limit, 8)
    assert not in_chars.evidence[0].truncated
    assert in_bytes.evidence[0].truncated
    assert in_bytes.evidence[0].line_end < in_chars.evidence[0].line_end


def test_small_budget_truncates_by_whole_lines(ws_for) -> None:
    body = "\n".join(f"Step {i}: check the gearbox oil level and log it in the ledger." for i in range(30))
    ws = ws_for({"gear.md": f"# Gearbox\n\n## Maintenance\n\n{body}\n"})
    whole = ws.query("gearbox", as_of=AS_OF, refresh=False)
    (full_item,) = whole.evidence
    assert not full_item.truncated
    limit = whole.budget.used - 400
    assert limit >= MIN_BUDGET
    packet = ws.query("gearbox", as_of=AS_OF, max_chars=limit, refresh=False)
    check_packet(ws, packet, "chars", limit, 8)
    (item,) = packet.evidence
    assert item.truncated
    assert item.line_start == full_item.line_start
    assert item.line_end < full_item.line_end
    # cut by whole lines, and as many of them as fit: one more line would not fit
    assert limit - packet.budget.used < 70
    assert packet.to_dict()["evidence"][0]["truncated"] is True


def _exclusion_notes() -> dict[str, str]:
    huge_line = "zephyr " + " ".join(f"filler{i % 97}" for i in range(3_000))  # one line, ~24,000 chars
    return {
        "huge.md": f"---\ntitle: Zephyr\n---\n{huge_line}\n",
        "s1.md": "# One\n\nA zephyr wind is light.\n",
        "s2.md": "# Two\n\nAnother zephyr mention here.\n",
    }


def test_candidates_that_cannot_fit_are_counted_as_budget_exclusions(ws_for) -> None:
    ws = ws_for(_exclusion_notes())
    candidates = [hit.passage_id for hit in ws.lexical.search("zephyr", 50)]
    assert sorted(candidates) == ["huge#zephyr", "s1#one", "s2#two"]
    packet = ws.query("zephyr", as_of=AS_OF, refresh=False)
    check_packet(ws, packet, "chars", 20_000, 8)
    assert [e.id for e in packet.evidence] == [c for c in candidates if c != "huge#zephyr"]
    assert packet.exclusions == {"budget": 1, "scope": 0}
    assert json.loads(packet.to_json())["exclusions"] == {"budget": 1, "scope": 0}


def test_when_nothing_fits_the_packet_abstains_and_counts_every_candidate(ws_for) -> None:
    ws = ws_for(_exclusion_notes())
    packet = ws.query("filler1", as_of=AS_OF, refresh=False)
    check_packet(ws, packet, "chars", 20_000, 8)
    assert packet.abstained
    assert packet.abstention_reason == "no_evidence_fits_budget"
    assert packet.evidence == ()
    assert packet.exclusions == {"budget": 1, "scope": 0}


def test_no_candidates_means_no_budget_exclusions(ws_for) -> None:
    ws = ws_for(_exclusion_notes())
    packet = ws.query("unrelatedword", as_of=AS_OF, refresh=False)
    assert packet.abstention_reason == "no_match"
    assert packet.exclusions == {"budget": 0, "scope": 0}


def _measured_by_reserializing(packet: Packet) -> Packet:
    """The reference ``with_measured_budget``: serialize, set ``used``, until it settles."""
    for _ in range(8):
        size = packet.size()
        if size == packet.budget.used:
            return packet
        packet = dataclasses.replace(packet, budget=dataclasses.replace(packet.budget, used=size))
    raise AssertionError("did not settle")


@pytest.mark.parametrize("used", [0, 7, 99, 999, 9_999, 123_456])
def test_measuring_by_digits_gives_the_packet_reserializing_gives(workshop_ws, used: int) -> None:
    for query in ("who approves a production deployment", "record owner moves team", "ledger"):
        for kwargs in ({}, {"max_bytes": 4_000}, {"max_chars": 2_500}):
            packet = workshop_ws.query(query, as_of=AS_OF, refresh=False, **kwargs)
            assert packet.with_measured_budget() is packet  # assembled packets are measured already
            wrong = dataclasses.replace(packet, budget=dataclasses.replace(packet.budget, used=used))
            assert wrong.with_measured_budget().to_json() == _measured_by_reserializing(wrong).to_json()
            assert wrong.with_measured_budget().to_json() == packet.to_json()
