"""The grounding check: claims of a generated answer against an evidence packet (seed 003)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from retrieval_kernel.errors import InputError
from retrieval_kernel.output.grounding import (
    MAX_CLAIM_CHARS,
    Claim,
    GroundingReport,
    check_grounding,
    parse_claims,
)
from retrieval_kernel.output.packet import Budget, Packet
from retrieval_kernel.projections.lexical import analyze

# ---------------------------------------------------------------- packet factory


def item(ref: str, id: str, excerpt: str, **extra: Any) -> dict[str, Any]:
    """One evidence item in the packet's dict form; ``extra`` adds or overrides keys."""
    base = {
        "ref": ref,
        "id": id,
        "path": f"{id.split('#')[0]}.md",
        "line_start": 1,
        "line_end": 1,
        "excerpt": excerpt,
        "status": None,
        "authority": None,
        "role": "current",
        "asserts": {},
    }
    return base | extra


def packet(*evidence: dict[str, Any], conflicts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "query": "Can this order be refunded?",
        "abstained": False,
        "abstention_reason": None,
        "evidence": list(evidence),
        "conflicts": conflicts or [],
    }


def side(ref: str | None, id: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "id": id, "value": value, "authority": None, "status": None} | extra


FORUM = item(
    "e1",
    "forum/refunds#tip",
    "We usually allow refunds up to 60 days, no questions asked.",
    role="counter",
    authority="informal",
    asserts={"refund_window_days": 60},
)
REV_A = item(
    "e2",
    "policy/refunds-rev-a",
    "Refunds up to 30 days.",
    role="historical",
    status="superseded",
    authority="authoritative",
    asserts={"refund_window_days": 30},
)
REV_B = item(
    "e3",
    "policy/refunds-rev-b",
    "Current refund policy (rev B): refunds are accepted up to 14 days after purchase. "
    "Orders past that window are not eligible for a refund.",
    status="active",
    authority="authoritative",
    asserts={"refund_window_days": 14},
)
ORDER = item(
    "e4",
    "orders/1042",
    "Order 1042 was purchased 20 days ago. Refund eligibility follows the current refund policy.",
    asserts={"order_age_days": 20},
)
SUPERSEDED = {
    "id": "c1",
    "proposition": "refund_window_days",
    "evidence": [
        side("e2", REV_A["id"], 30, status="superseded", authority="authoritative"),
        side("e3", REV_B["id"], 14, authority="authoritative"),
    ],
    "resolution": "superseded(e2, by=e3)",
    "winner": REV_B["id"],
    "required_behavior": "use_winner",
}
AUTHORITY = {
    "id": "c2",
    "proposition": "refund_window_days",
    "evidence": [side("e1", FORUM["id"], 60), side("e3", REV_B["id"], 14, authority="authoritative")],
    "resolution": "authority(e3 over e1)",
    "winner": REV_B["id"],
    "required_behavior": "use_winner",
}
REFUND = packet(FORUM, REV_A, REV_B, ORDER, conflicts=[SUPERSEDED, AUTHORITY])

RUNBOOK = item("e5", "support/runbook", "Support runbook: refunds are accepted up to 45 days.")
UNRESOLVED = packet(
    FORUM,
    RUNBOOK,
    conflicts=[
        {
            "id": "c1",
            "proposition": "refund_window_days",
            "evidence": [side("e1", FORUM["id"], 60), side("e5", RUNBOOK["id"], 45)],
            "resolution": "unresolved",
            "winner": None,
            "required_behavior": "abstain_or_escalate",
        }
    ],
)

GROUNDED = """The current limit is 14 days [e3]
This order is 20 days old [e4]
It is not eligible under the current policy [e3][e4]
"""


def codes(report: GroundingReport) -> list[tuple[str, ...]]:
    return [tuple(f.code for f in claim.findings) for claim in report.claims]


def one(claim: str, data: dict[str, Any] = REFUND) -> tuple[str, ...]:
    """The finding codes of a single claim line."""
    (result,) = check_grounding(data, claim).claims
    return tuple(f.code for f in result.findings)


# ---------------------------------------------------------------- the seed 003 answers


def test_grounded_answer_is_fully_supported() -> None:
    report = check_grounding(REFUND, GROUNDED)
    assert codes(report) == [(), (), ()]
    assert [c.supported for c in report.claims] == [True, True, True]
    assert report.citation_precision == 1.0
    assert report.citation_completeness == 1.0
    assert report.supported_fraction == 1.0
    assert report.unsupported_claims == 0
    assert report.claims[2].cites == ("e3", "e4")


def test_number_missing_from_the_cited_excerpt_is_unsupported() -> None:
    (result,) = check_grounding(REFUND, "Refunds are allowed up to 30 days [e3]").claims
    assert result.codes == ("unsupported", "contradicts_resolution")
    assert not result.supported
    assert "not in the cited evidence: 30" in result.findings[0].message
    assert "c1" in result.findings[1].message


def test_citing_the_superseded_revision_is_historical_and_contradicts() -> None:
    (result,) = check_grounding(REFUND, "Refunds up to 30 days [e2]").claims
    assert result.codes == ("cites_historical", "contradicts_resolution")
    assert "states 30 and cites e2" in result.findings[1].message
    assert "superseded(e2, by=e3)" in result.findings[1].message


def test_stating_the_authority_loser_contradicts_its_conflict() -> None:
    (result,) = check_grounding(REFUND, "Refunds are accepted up to 60 days [e1]").claims
    assert result.codes == ("contradicts_resolution",)
    assert "c2" in result.findings[0].message and "c1" not in result.findings[0].message


def test_citing_a_conflict_item_links_the_claim_without_naming_the_proposition() -> None:
    assert one("The limit is 30 [e3]") == ("unsupported", "contradicts_resolution")
    assert one("The limit is 30") == ("uncited",)


def test_conflict_sides_outside_the_packet_and_repeated_winner_values() -> None:
    hidden = side(None, "policy/refunds-rev-0", 30, status="superseded")  # not shown: no ref
    mapped = side(None, REV_A["id"], 45)  # ref found through the item's id
    same = side(None, "policy/refunds-copy", 14)  # a loser repeating the winner's value
    conflict = SUPERSEDED | {"evidence": [hidden, mapped, same, side("e3", REV_B["id"], 14)]}
    data = packet(REV_A, REV_B, conflicts=[conflict])
    assert one("The current limit is 14 days [e3]", data) == ()
    assert one("Refunds are accepted up to 30 days [e3]", data) == ("unsupported", "contradicts_resolution")
    assert one("Previously, refunds were accepted up to 30 days", data) == ("uncited",)  # superseded side
    assert one("Refunds were accepted up to 30 days", data) == ("uncited", "contradicts_resolution")
    (result,) = check_grounding(data, "Refunds were accepted up to 45 days [e2]").claims
    assert result.codes == ("unsupported", "cites_historical", "contradicts_resolution")
    assert "states 45 and cites e2" in result.findings[2].message


def test_claims_framed_as_history_may_cite_the_superseded_revision() -> None:
    assert one("Previously, refunds were allowed up to 30 days [e2]") == ()
    assert one("Refunds were allowed up to 30 days [e2]") == ("cites_historical", "contradicts_resolution")


def test_uncited_claim() -> None:
    report = check_grounding(REFUND, "The limit is 60 days")
    assert codes(report) == [("uncited",)]
    assert report.citation_completeness == 0.0
    assert report.citation_precision is None
    assert report.supported_fraction == 0.0


def test_uncited_claim_naming_the_proposition_is_linked_to_its_conflict() -> None:
    assert one("The refund window is 60 days") == ("uncited", "contradicts_resolution")
    assert one("Refunds are allowed for 60 days") == ("uncited", "contradicts_resolution")  # 2 of 3 words
    assert one("The refund window is 14 days") == ("uncited",)


def test_unknown_ref() -> None:
    assert one("[e9]") == ("unknown_ref",)
    report = check_grounding(REFUND, "The current limit is 14 days [e3][e9]")
    assert codes(report) == [("unknown_ref",)]
    assert report.citation_precision == 1.0  # only the known pair counts
    assert "e9" in report.claims[0].findings[0].message


def test_taking_a_side_of_an_unresolved_conflict() -> None:
    (result,) = check_grounding(UNRESOLVED, "Refunds are accepted up to 45 days [e5]").claims
    assert result.codes == ("takes_side_in_unresolved_conflict",)
    assert "abstaining or escalating" in result.findings[0].message


@pytest.mark.parametrize(
    "change",
    [
        {"winner": FORUM["id"], "required_behavior": "use_winner"},
        {"resolution": "authority(e1 over e5)", "winner": FORUM["id"]},
    ],
)
def test_unresolved_wins_over_a_stray_winner(change: dict[str, Any]) -> None:
    """``resolution: unresolved`` or ``required_behavior: abstain_or_escalate`` means nobody won."""
    conflict = UNRESOLVED["conflicts"][0] | change
    assert one("Refunds are accepted up to 45 days [e5]", UNRESOLVED | {"conflicts": [conflict]}) == (
        "takes_side_in_unresolved_conflict",
    )


def test_presenting_both_sides_or_escalating_is_not_taking_a_side() -> None:
    report = check_grounding(
        UNRESOLVED,
        "The refund window is disputed: 60 days [e1] or 45 days [e5]\nEscalate: the refund window is disputed",
    )
    assert codes(report) == [(), ("uncited",)]


# ---------------------------------------------------------------- the support test


def test_numbers_compare_by_value_with_units_stripped() -> None:
    fee = packet(item("e1", "billing/fees", "A fee of 2.5% applies to orders over 1,000 EUR (rule v2)."))
    assert one("The fee is 2.50 percent [e1]", fee) == ()
    assert one("Orders over 1000 EUR pay the fee [e1]", fee) == ()
    assert one("The fee is 2 percent [e1]", fee) == ("unsupported",)
    assert one("The fee follows rule v7 [e1]", fee) == ()  # "v7" is an identifier, not a number


def test_asserted_values_count_as_numbers_of_the_item() -> None:
    window = item("e1", "policy/refunds", "Refund window: two weeks.", asserts={"refund_window_days": 14})
    assert one("The refund window is 14 days [e1]", packet(window)) == ()
    assert one("The refund window is 14 days [e1]", packet(window | {"asserts": {}})) == ("unsupported",)


def test_content_word_threshold() -> None:
    # e3 has refund, after, purchase; the claims add need, approval (, written, finance)
    assert one("Refunds after purchase need approval from finance [e3]") == ()  # 3 of 6 words: exactly 50%
    assert one("Refunds after purchase need written approval from finance [e3]") == ("unsupported",)  # 3 of 7


def test_claim_with_nothing_to_check_is_unsupported() -> None:
    (result,) = check_grounding(REFUND, "It is. [e3]").claims
    assert result.codes == ("unsupported",)
    assert "no content words or numbers" in result.findings[0].message


def test_one_sentence_excerpts_do_not_carry_the_grounded_answer() -> None:
    """The test is lexical: "limit", "old", "eligible" must be in the excerpts, not inferred."""
    bare = packet(
        item("e3", "policy/refunds-rev-b", "Refunds are accepted up to 14 days after purchase"),
        item("e4", "orders/1042", "purchased 20 days ago"),
    )
    report = check_grounding(bare, GROUNDED)
    assert codes(report) == [("unsupported",)] * 3
    assert "missing: current, limit" in report.claims[0].findings[0].message


# ---------------------------------------------------------------- precision and completeness


def test_precision_counts_an_unneeded_citation_as_imprecise() -> None:
    report = check_grounding(REFUND, "The current limit is 14 days [e3][e4]")
    assert codes(report) == [()]
    assert report.citation_precision == 0.5


def test_precision_credits_citations_needed_together() -> None:
    report = check_grounding(REFUND, "Order 1042 is 20 days old and the limit is 14 days [e3][e4]")
    assert codes(report) == [()]
    assert report.citation_precision == 1.0


def test_metrics_are_none_without_claims() -> None:
    report = check_grounding(REFUND, [])
    assert (report.citation_precision, report.citation_completeness, report.supported_fraction) == (None, None, None)
    assert report.unsupported_claims == 0


def test_completeness_and_counts_mix() -> None:
    report = check_grounding(REFUND, "The current limit is 14 days [e3]\nThe limit is 60 days")
    assert report.citation_completeness == 0.5
    assert report.supported_fraction == 0.5
    assert report.unsupported_claims == 1


# ---------------------------------------------------------------- packet forms


def test_older_packet_without_role_asserts_or_conflicts() -> None:
    old: dict[str, Any] = {
        "evidence": [{"ref": "e1", "id": "a", "excerpt": "Refunds up to 30 days", "status": "superseded"}]
    }
    assert one("Refunds up to 30 days [e1]", old) == ("cites_historical",)
    old["evidence"][0]["status"] = None
    assert one("Refunds up to 30 days [e1]", old) == ()
    old["evidence"][0]["role"] = "historical"
    assert one("Refunds up to 30 days [e1]", old) == ("cites_historical",)


def test_accepts_an_object_with_to_dict() -> None:
    class Stub:
        def to_dict(self) -> dict[str, Any]:
            return REFUND

    assert codes(check_grounding(Stub(), GROUNDED)) == [(), (), ()]


def test_accepts_a_packet() -> None:
    empty = Packet(
        query="refund window",
        as_of="2026-10-15",
        budget=Budget("chars", 20_000),
        projection="p",
        lanes=(),
        evidence=(),
        abstained=True,
        abstention_reason="no_match",
    )
    assert one("The limit is 14 days [e1]", empty) == ("unknown_ref",)  # type: ignore[arg-type]


# ---------------------------------------------------------------- parsing


def test_parse_claims_citation_forms() -> None:
    text = "The limit is 14 days [e3].\n\n  - Order is 20 days old [e4][e3]\n1. Not eligible [e1, e3] under [E4]\nNo"
    assert parse_claims(text) == (
        Claim("The limit is 14 days.", ("e3",)),
        Claim("Order is 20 days old", ("e4", "e3")),
        Claim("Not eligible under", ("e1", "e3", "e4")),
        Claim("No", ()),
    )


def test_parse_claims_leaves_non_citations_in_the_text() -> None:
    assert parse_claims("See [x3] and [e] or [e3 e4] [e2,e2]") == (Claim("See [x3] and [e] or [e3 e4]", ("e2",)),)


def test_repeated_citations_count_once() -> None:
    report = check_grounding(REFUND, [Claim("The current limit is 14 days", ["e3", "e3"])])  # type: ignore[arg-type]
    assert report.claims[0].cites == ("e3",)
    assert codes(report) == [()]


def test_list_numbers_are_not_claim_numbers() -> None:
    assert one("1. The current limit is 14 days [e3]") == ()


@given(
    text=st.text(alphabet=st.characters(categories=["L", "N", "Zs", "P"], exclude_characters="[]"), max_size=40),
    refs=st.lists(st.integers(1, 999).map(lambda n: f"e{n}"), max_size=4),
)
def test_parse_claims_round_trip(text: str, refs: list[str]) -> None:
    assume(text.strip())
    marks = "".join(f"[{ref}]" for ref in refs)
    (claim,) = parse_claims(f"{text} {marks}")
    assert claim.cites == tuple(dict.fromkeys(refs))
    assert "[" not in claim.text and claim.text == claim.text.strip()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("text", ["", "   \n\t\n"])
def test_empty_claims_text(text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        parse_claims(text)
    with pytest.raises(InputError, match="empty"):
        check_grounding(REFUND, text)


def test_overlong_claim_line() -> None:
    ok = "a" * MAX_CLAIM_CHARS
    assert len(parse_claims(ok)) == 1
    with pytest.raises(InputError, match=r"line 2 .*10,000"):
        parse_claims("fine [e3]\n" + ok + "b")
    with pytest.raises(InputError, match="10,000"):
        check_grounding(REFUND, [Claim(ok + "b", ("e3",))])


def test_bad_packet_and_claim_types() -> None:
    with pytest.raises(InputError, match="packet"):
        check_grounding(["not", "a", "packet"], GROUNDED)
    with pytest.raises(InputError, match="Claim"):
        check_grounding(REFUND, ["The limit is 14 days [e3]"])  # type: ignore[list-item]


# ---------------------------------------------------------------- display


def test_html_escapes_every_text() -> None:
    hostile = AUTHORITY | {"proposition": "<i>window</i>"}
    data = REFUND | {"conflicts": [hostile]}
    report = check_grounding(data, "<script>alert(1)</script> refunds up to 14 days [e3]\n<b>bold</b> & co [e1]")
    assert report.claims[1].codes == ("unsupported", "contradicts_resolution")  # the message names the proposition
    page = report._repr_html_()
    assert "<script>" not in page and "<b>bold</b>" not in page and "<i>" not in page
    assert "&lt;i&gt;window&lt;/i&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in page


def test_text_table_and_dict() -> None:
    report = check_grounding(REFUND, "The current limit is 14 days [e3]\nRefunds up to 30 days [e2]")
    table = str(report)
    assert table.splitlines()[0] == (
        "Grounding: 1 of 2 claims supported · citation precision 1.00 · citation completeness 1.00"
    )
    assert "ok  e3" in table and "NO  e2" in table and "cites_historical:" in table
    data = report.to_dict()
    assert data["claims"][1]["findings"][0]["code"] == "cites_historical"
    assert data["claims"][0] == {
        "text": "The current limit is 14 days",
        "cites": ["e3"],
        "supported": True,
        "findings": [],
    }
    assert (data["citation_precision"], data["unsupported_claims"]) == (1.0, 1)


# ---------------------------------------------------------------- property


WORD = st.text(alphabet=st.characters(categories=["Ll", "Lu"]), min_size=1, max_size=12)
NUMBER = st.one_of(
    st.integers(0, 10**7).map(str),
    st.integers(1_000, 10**9).map(lambda n: f"{n:,}"),
    st.decimals(0, 10_000, places=2, allow_nan=False).map(str),
    st.integers(0, 100).map(lambda n: f"{n}%"),
    st.tuples(st.integers(0, 999), st.sampled_from(["d", "kg", "h"])).map(lambda p: f"{p[0]}{p[1]}"),
    st.integers(0, 999).map(lambda n: f"${n}"),
)
CHUNK = st.tuples(st.one_of(WORD, NUMBER), st.sampled_from(["", ",", ".", ":", ";"])).map("".join)


@given(data=st.data(), chunks=st.lists(CHUNK, min_size=1, max_size=30))
def test_claim_built_from_one_excerpt_passes_the_support_test(data: st.DataObject, chunks: list[str]) -> None:
    picked = data.draw(st.lists(st.sampled_from(chunks), min_size=1, max_size=12))
    claim = " ".join(picked)
    assume(analyze(claim) or any(c[:1].isdigit() or c[:1] == "$" for c in picked))
    report = check_grounding(packet(item("e1", "notes/x", " ".join(chunks))), [Claim(claim, ("e1",))])
    assert codes(report) == [()]
    assert report.citation_precision == 1.0
