"""Note facts: front-matter fields, ADR status/date conventions, parse_date, NoteFacts round trip."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel.corpus.facts import AUTHORITY_LEVELS, STATUSES, NoteFacts, normalize_status, parse_date
from retrieval_kernel.corpus.notes import parse_note

ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# ---------------------------------------------------------------- helpers


def with_front(front: str, body: str = "# Title\n\nBody text.\n", path: str = "n.md"):
    """Parse a note made of ``front`` (YAML lines, no fences) and ``body``."""
    return parse_note(path, f"---\n{front}\n---\n{body}")


def adr(status_block: str, path: str = "0004-old.md", date: str = "Date: 2022-02-18"):
    """Parse an adr-tools style note (no front matter) with ``status_block`` after the date line."""
    return parse_note(path, f"# 4. Old decision\n\n{date}\n\n{status_block}\n\n## Context\n\nWhy we did it.\n")


# ---------------------------------------------------------------- front matter: identity-ish fields


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("refund policy", ("refund policy",)),
        ("[refund policy, returns]", ("refund policy", "returns")),
        ("[' a ', a, '', b]", ("a", "b")),  # stripped, deduplicated in order, blanks dropped
        ("[7, 8]", ("7", "8")),
    ],
)
def test_aliases_string_or_list(value: str, expected: tuple[str, ...]) -> None:
    note = with_front(f"aliases: {value}")
    assert note.facts.aliases == expected
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["{a: 1}", "[[a], b]", "[{a: 1}]"])
def test_aliases_of_the_wrong_shape_warn_and_are_ignored(value: str) -> None:
    note = with_front(f"aliases: {value}")
    assert note.facts.aliases == ()
    assert note.warnings == ("n.md: aliases must be a string or a list of strings; ignored",)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("tenant-a", ("tenant-a",)), ("[tenant-a, tenant-b, tenant-a]", ("tenant-a", "tenant-b"))],
)
def test_scope_string_or_list(value: str, expected: tuple[str, ...]) -> None:
    note = with_front(f"scope: {value}")
    assert note.facts.scope == expected
    assert note.warnings == ()


def test_scope_mapping_warns_and_is_ignored() -> None:
    note = with_front("scope: {tenant: a}")
    assert note.facts.scope == ()
    assert note.warnings == ("n.md: scope must be a string or a list of strings; ignored",)


def test_missing_fields_are_unknown_without_warnings() -> None:
    note = with_front("title: Plain")
    assert note.facts == NoteFacts()
    assert note.observed_at is None
    assert note.warnings == ()


# ---------------------------------------------------------------- front matter: dates


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-28", "2026-11-28"),
        ("2026-11-28T09:30:00Z", "2026-11-28T09:30:00+00:00"),
        ("'2026-11-28T09:30:00+02:00'", "2026-11-28T09:30:00+02:00"),
    ],
)
def test_observed_front_matter(value: str, expected: str) -> None:
    note = with_front(f"observed: {value}")
    assert note.observed_at == expected
    assert note.warnings == ()


def test_valid_from_and_valid_to_are_iso_days() -> None:
    note = with_front("valid_from: 2026-11-28\nvalid_to: '2027-06-30'")
    assert (note.facts.valid_from, note.facts.valid_to) == ("2026-11-28", "2027-06-30")
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["2026-11-28T23:00:00", "2026-11-28 23:00:00", "'2026-11-28T23:00:00Z'"])
def test_valid_from_datetime_is_cut_to_its_day(value: str) -> None:
    note = with_front(f"valid_from: {value}")
    assert note.facts.valid_from == "2026-11-28"
    assert note.warnings == ()


@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
@pytest.mark.parametrize("value", ["soon", "'2026-13-01'", "'2026-02-30'", "20261128", "[2026, 11, 28]"])
def test_invalid_validity_dates_warn_and_are_none(field: str, value: str) -> None:
    note = with_front(f"{field}: {value}")
    assert getattr(note.facts, field) is None
    shown = repr(yaml.safe_load(f"v: {value}")["v"])
    assert note.warnings == (f"n.md: {field} {shown} is not a date such as 2026-11-30; ignored",)


def test_valid_from_after_valid_to_warns_but_keeps_both() -> None:
    note = with_front("valid_from: 2027-01-01\nvalid_to: 2026-01-01")
    assert (note.facts.valid_from, note.facts.valid_to) == ("2027-01-01", "2026-01-01")
    assert note.warnings == ("n.md: valid_from 2027-01-01 is after valid_to 2026-01-01: the note is never valid",)


def test_valid_from_equal_to_valid_to_is_a_one_day_window_without_warning() -> None:
    note = with_front("valid_from: 2026-01-01\nvalid_to: 2026-01-01")
    assert note.facts.valid_from == note.facts.valid_to == "2026-01-01"
    assert note.warnings == ()


# ---------------------------------------------------------------- front matter: revision, authority, misc


@pytest.mark.parametrize(
    ("value", "expected"), [("B", "B"), ("3", "3"), ("' rev-2 '", "rev-2"), ("''", None), ("[A]", None)]
)
def test_revision_is_text(value: str, expected: str | None) -> None:
    assert with_front(f"revision: {value}").facts.revision == expected


@pytest.mark.parametrize(
    ("value", "expected", "level"),
    [("authoritative", "authoritative", 3), ("Reference", "reference", 2), ("' INFORMAL '", "informal", 1)],
)
def test_authority_is_normalised(value: str, expected: str, level: int) -> None:
    note = with_front(f"authority: {value}")
    assert note.facts.authority == expected
    assert note.facts.authority_level == level
    assert note.warnings == ()


@pytest.mark.parametrize(("value", "shown"), [("official", "'official'"), ("3", "'3'"), ("high", "'high'")])
def test_unknown_authority_warns_and_is_unknown(value: str, shown: str) -> None:
    note = with_front(f"authority: {value}")
    assert note.facts.authority is None
    assert note.facts.authority_level == 0
    assert note.warnings == (
        f"n.md: authority {shown} is not one of authoritative, reference, informal; treated as unknown",
    )


def test_fresh_for_and_kind_are_text() -> None:
    facts = with_front("fresh_for: 30d\nkind: policy").facts
    assert (facts.fresh_for, facts.kind) == ("30d", "policy")
    assert facts.is_counter_evidence is False


@pytest.mark.parametrize(
    ("kind", "counter"),
    [
        ("failure", True),
        ("incident", True),
        ("postmortem", True),
        ("counter-evidence", True),
        ("Incident", True),
        ("policy", False),
        ("failures", False),
    ],
)
def test_counter_evidence_kinds(kind: str, counter: bool) -> None:
    assert with_front(f"kind: {kind}").facts.is_counter_evidence is counter


def test_no_kind_is_not_counter_evidence() -> None:
    assert NoteFacts().is_counter_evidence is False


def test_asserts_mapping_is_sorted_and_keys_stripped() -> None:
    note = with_front("asserts: {refund_window_days: 14, ' currency ': EUR, '': dropped, enabled: true}")
    assert note.facts.asserts == {"currency": "EUR", "enabled": True, "refund_window_days": 14}
    assert list(note.facts.asserts) == ["currency", "enabled", "refund_window_days"]
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["[1, 2]", "refund_window_days=14", "14"])
def test_asserts_that_is_not_a_mapping_warns_and_is_empty(value: str) -> None:
    note = with_front(f"asserts: {value}")
    assert note.facts.asserts == {}
    assert note.warnings == ("n.md: asserts must map a proposition to a value (e.g. refund_window_days: 14); ignored",)


# ---------------------------------------------------------------- front matter: status and supersession


@pytest.mark.parametrize("status", STATUSES)
def test_every_front_matter_status_is_kept(status: str) -> None:
    facts = with_front(f"status: {status}").facts
    assert (facts.status, facts.status_text, facts.status_source) == (status, status, "front matter")


@pytest.mark.parametrize(
    ("written", "status"),
    [
        ("Accepted", "current"),
        ("Proposed", "draft"),
        ("obsolete", "superseded"),
        ("withdrawn", "withdrawn"),
        ("Last Call", "draft"),
        ("Moved", "moved"),
    ],
)
def test_front_matter_status_words_are_normalised(written: str, status: str) -> None:
    note = with_front(f"status: {written}")
    assert (note.facts.status, note.facts.status_text) == (status, written)
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["someday", "42", "'Accepted or Rejected'"])
def test_unknown_front_matter_status_warns(value: str) -> None:
    note = with_front(f"status: {value}")
    written = yaml.safe_load(f"v: {value}")["v"]
    assert note.facts.status is None
    assert note.facts.status_text == str(written)
    assert note.facts.status_source == "front matter"
    assert note.warnings == (
        f"n.md: status {str(written)!r} is not in the status vocabulary ({', '.join(STATUSES)}); treated as unknown",
    )


def test_front_matter_status_wins_over_body_status_and_its_links() -> None:
    note = with_front("status: draft", "# T\n\n## Status\n\nSuperseded by [ADR-2](0002-b.md)\n")
    assert (note.facts.status, note.facts.status_source) == ("draft", "front matter")
    assert note.facts.superseded_by == ()


def test_front_matter_status_text_yields_its_links_as_madr_writes_them() -> None:
    note = with_front('status: "superseded by [ADR-0002](0002-b.md)"')
    assert note.facts.status == "superseded"
    assert note.facts.superseded_by == ("0002-b.md",)


@pytest.mark.parametrize(
    ("front", "supersedes", "superseded_by"),
    [
        ("supersedes: refund-policy-a@A", ("refund-policy-a@A",), ()),
        ("supersedes: [a, b, a]\nsuperseded_by: [c]", ("a", "b"), ("c",)),
        ("superseded_by: 0019-new.md", (), ("0019-new.md",)),
    ],
)
def test_supersession_fields(front: str, supersedes: tuple[str, ...], superseded_by: tuple[str, ...]) -> None:
    note = with_front(front)
    assert (note.facts.supersedes, note.facts.superseded_by) == (supersedes, superseded_by)
    assert note.warnings == ()


def test_supersession_field_of_the_wrong_shape_warns() -> None:
    note = with_front("superseded_by: {id: b}")
    assert note.facts.superseded_by == ()
    assert note.warnings == ("n.md: superseded_by must be a reference or a list of references; ignored",)


def test_body_status_links_add_to_front_matter_references() -> None:
    note = with_front("superseded_by: [refund-policy-c]", "# T\n\n## Status\n\nSuperseded by [D](0004-d.md)\n")
    assert note.facts.status == "superseded"
    assert note.facts.status_source == "status section"
    assert note.facts.superseded_by == ("refund-policy-c", "0004-d.md")


def test_list_status_in_front_matter_warns() -> None:
    note = with_front("status: [superseded]", "# T\n\n## Status\n\nAccepted\n")
    assert any("status" in warning for warning in note.warnings)


def test_list_authority_in_front_matter_warns() -> None:
    note = with_front("authority: [authoritative]")
    assert note.facts.authority is None
    assert any("authority" in warning for warning in note.warnings)


# ---------------------------------------------------------------- ADR status conventions


@pytest.mark.parametrize(
    ("block", "status", "text", "source", "superseded_by", "supersedes"),
    [
        ("## Status\n\nAccepted", "current", "Accepted", "status section", (), ()),
        ("## Status\n\nApproved", "current", "Approved", "status section", (), ()),
        ("## Status\n\n> Accepted", "current", "Accepted", "status section", (), ()),
        ("## Status\n\n`Rejected`", "rejected", "Rejected", "status section", (), ()),
        ("## Status\n\n**Proposed**", "draft", "Proposed", "status section", (), ()),
        ("## Status\n\n✅ Accepted", "current", "✅ Accepted", "status section", (), ()),
        ("## Status\n\n❌ Rejected", "rejected", "❌ Rejected", "status section", (), ()),
        ("## Status\n\n🤔 Proposed", "draft", "🤔 Proposed", "status section", (), ()),
        ("### status\n\n\n  Deprecated  \n\nMore prose.", "deprecated", "Deprecated", "status section", (), ()),
        ("Status: Accepted", "current", "Accepted", "status line", (), ()),
        ("**Status:** Proposed", "draft", "Proposed", "status line", (), ()),
        ("**Status**: Superseded by ADR025", "superseded", "Superseded by ADR025", "status line", ("ADR025",), ()),
        ("## Status: Deprecated", "deprecated", "Deprecated", "status heading", (), ()),
        (
            "## Status: Superseded by [ADR-2](0002-b.md)",
            "superseded",
            "Superseded by [ADR-2](0002-b.md)",
            "status heading",
            ("0002-b.md",),
            (),
        ),
        (
            "## Status\n\nSuperseded by [ADR019 Use Amazon SES](ADR019-use-amazon-ses.md)",
            "superseded",
            "Superseded by [ADR019 Use Amazon SES](ADR019-use-amazon-ses.md)",
            "status section",
            ("ADR019-use-amazon-ses.md",),
            (),
        ),
        (
            "## Status\n\nSuperseded by [AD045: Remove forms-api](ADR045-use-forms-api.md)",
            "superseded",
            "Superseded by [AD045: Remove forms-api](ADR045-use-forms-api.md)",
            "status section",
            ("ADR045-use-forms-api.md",),
            (),
        ),
        (
            "## Status\n\nSuperseded by [B](0002-b.md) and [C](0003-c.md), see [B](0002-b.md).",
            "superseded",
            "Superseded by [B](0002-b.md) and [C](0003-c.md), see [B](0002-b.md).",
            "status section",
            ("0002-b.md", "0003-c.md"),
            (),
        ),
        ("## Status\n\nSuperseded by ADR025", "superseded", "Superseded by ADR025", "status section", ("ADR025",), ()),
        ("## Status\n\nSuperseded by DR008", "superseded", "Superseded by DR008", "status section", ("DR008",), ()),
        (
            "## Status\n\nSuperseded by ADR-0012",
            "superseded",
            "Superseded by ADR-0012",
            "status section",
            ("ADR-0012",),
            (),
        ),
        (
            "## Status\n\n⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)",
            "superseded",
            "⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)",
            "status section",
            ("0019-use-bash-go-as-core-languages.md",),
            (),
        ),
        (
            "## Status\n\n⌛ Superseded\n\nSee [issue](https://x.test/1).",
            "superseded",
            "⌛ Superseded",
            "status section",
            (),
            (),
        ),
        (
            "## Status\n\nSuperseded, see [the issue](https://github.com/o/r/issues/9) about ADR 12",
            "superseded",
            "Superseded, see [the issue](https://github.com/o/r/issues/9) about ADR 12",
            "status section",
            (),
            (),
        ),
        (
            "## Status\n\nAccepted. Supersedes [ADR-3](0003-c.md)",
            "current",
            "Accepted. Supersedes [ADR-3](0003-c.md)",
            "status section",
            (),
            ("0003-c.md",),
        ),
        (
            "## Status\n\n> Accepted or Rejected\n\n* Proposed\n* Accepted",
            None,
            "Accepted or Rejected",
            "status section",
            (),
            (),
        ),
        ("## Status\n\n## Context", None, None, None, (), ()),
        ("No status anywhere.", None, None, None, (), ()),
    ],
)
def test_adr_status_forms(
    block: str,
    status: str | None,
    text: str | None,
    source: str | None,
    superseded_by: tuple[str, ...],
    supersedes: tuple[str, ...],
) -> None:
    note = adr(block)
    facts = note.facts
    assert (facts.status, facts.status_text, facts.status_source) == (status, text, source)
    assert facts.superseded_by == superseded_by
    assert facts.supersedes == supersedes
    assert note.warnings == ()


def test_first_status_marker_wins() -> None:
    facts = adr("Status: Proposed\n\n## Status\n\nAccepted").facts
    assert (facts.status, facts.status_source) == ("draft", "status line")


def test_status_section_ends_at_the_next_heading() -> None:
    facts = adr("## Status\n\n\n## Decision\n\nAccepted by all.").facts
    assert (facts.status, facts.status_text, facts.status_source) == (None, None, None)


def test_status_in_a_note_with_front_matter_but_no_status_field() -> None:
    note = with_front("id: adr-7", "# ADR 7\n\n## Status\n\nRejected\n")
    assert (note.facts.status, note.facts.status_source) == ("rejected", "status section")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Accepted", "current"),
        ("ACCEPTED", "current"),
        ("approved", "current"),
        ("Accepted, amended later", "current"),  # two words, one status
        ("Superseded by ADR025", "superseded"),
        ("Replaced", "superseded"),
        ("Contested", "disputed"),
        ("Pending", "draft"),
        ("Retired", "deprecated"),
        ("Declined", "rejected"),
        ("Accepted or Rejected", None),  # template text left in
        ("Proposed, then Rejected", None),
        ("Accepted by the team; later rejected", "current"),  # only the first three words count
        ("", None),
        ("Lorem ipsum", None),
    ],
)
def test_normalize_status(text: str, expected: str | None) -> None:
    assert normalize_status(text) == expected


@pytest.mark.parametrize("text", ["Supersedes ADR-3", "Supersedes [ADR-3](0003-c.md)"])
def test_supersedes_alone_is_a_current_decision(text: str) -> None:
    assert normalize_status(text) == "current"


@pytest.mark.parametrize("label", ["Open API spec", "Active Directory controllers", "Rejected payments"])
def test_link_label_words_do_not_change_the_status(label: str) -> None:
    facts = adr(f"## Status\n\nSuperseded by [{label}](0012-x.md)").facts
    assert facts.status == "superseded"
    assert facts.superseded_by == ("0012-x.md",)


def test_bare_record_number_after_by_is_extracted() -> None:
    assert adr("## Status\n\nSuperseded by 0019").facts.superseded_by == ("0019",)


def test_date_in_status_is_not_a_record_number() -> None:
    facts = adr("## Status\n\nSuperseded by ADR019 on 2022-06-14").facts
    assert facts.superseded_by == ("ADR019",)


# ---------------------------------------------------------------- Date: lines


@pytest.mark.parametrize(
    ("line", "observed"),
    [
        ("Date: 2024-10-31", "2024-10-31"),
        ("Date: 2024-10-31 :ghost:", "2024-10-31"),
        ("Date: 08/01/24", "2024-01-08"),
        ("Date: 8/1/2024", "2024-01-08"),
        ("date: 31/12/2023", "2023-12-31"),
        ("**Date:** 2022-02-18", "2022-02-18"),
        ("  Date:   2022-02-18  ", "2022-02-18"),
    ],
)
def test_date_line_forms(line: str, observed: str) -> None:
    note = adr("## Status\n\nAccepted", date=line)
    assert note.observed_at == observed
    assert note.facts.date_line == line.strip()
    assert note.warnings == ()


@pytest.mark.parametrize("line", ["Date: sometime in spring", "Date: 12/31/2024", "Date: 2024-02-30", "Date: 5/3/7"])
def test_unreadable_date_line_warns_and_leaves_observed_unknown(line: str) -> None:
    note = adr("## Status\n\nAccepted", date=line)
    assert note.observed_at is None
    assert note.facts.date_line == line
    assert note.warnings == (f"0004-old.md: date line {line!r} holds no readable date; source time is unknown",)


def test_only_the_first_date_line_counts() -> None:
    note = parse_note("a.md", "# A\n\nDate: 2024-01-01\n\nDate: 2025-05-05\n")
    assert note.observed_at == "2024-01-01"
    assert note.facts.date_line == "Date: 2024-01-01"


def test_no_date_line_means_unknown_source_time() -> None:
    note = parse_note("a.md", "# A\n\nDated yesterday, updated: 2024-01-01\n")
    assert (note.observed_at, note.facts.date_line) == (None, None)
    assert note.warnings == ()


def test_front_matter_observed_wins_over_date_line() -> None:
    note = with_front("observed: 2026-11-28", "# T\n\nDate: 2024-01-01\n")
    assert note.observed_at == "2026-11-28"
    assert note.facts.date_line == "Date: 2024-01-01"
    assert note.warnings == ()


def test_invalid_observed_falls_back_to_the_date_line() -> None:
    note = with_front("observed: not-a-date", "# T\n\nDate: 2024-01-01\n")
    assert note.observed_at == "2024-01-01"
    assert len(note.warnings) == 1
    assert "observed 'not-a-date' is not an ISO date" in note.warnings[0]


def test_invalid_observed_warning_names_the_note() -> None:
    note = with_front("observed: not-a-date", path="dir/n.md")
    assert note.warnings == ("dir/n.md: observed 'not-a-date' is not an ISO date; it is ignored",)


# ---------------------------------------------------------------- parse_date


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-10-31", dt.date(2024, 10, 31)),
        ("Date: 2024-10-31 :ghost:", dt.date(2024, 10, 31)),
        ("08/01/24", dt.date(2024, 1, 8)),
        ("8/1/2024", dt.date(2024, 1, 8)),
        ("31/12/99", dt.date(2099, 12, 31)),
        ("on 1/2/2026 and 2026-03-04", dt.date(2026, 3, 4)),  # an ISO date anywhere wins
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("0000-01-01", None),
        ("12/31/2024", None),
        ("2024/01/05", dt.date(2024, 1, 5)),
        ("20241031", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_parse_date(text: str, expected: dt.date | None) -> None:
    assert parse_date(text) == expected


def test_parse_date_reads_the_day_of_an_iso_datetime() -> None:
    assert parse_date("2026-11-28T23:00:00+00:00") == dt.date(2026, 11, 28)


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.text(),
        st.from_regex(r"\A\d{1,5}[-/]\d{1,3}[-/]\d{1,5}\Z"),
        st.from_regex(r"[0-9/ -]{0,20}"),
    )
)
def test_property_parse_date_never_raises(text: str) -> None:
    result = parse_date(text)
    assert result is None or isinstance(result, dt.date)


@given(day=st.dates(min_value=dt.date(1000, 1, 1)))
def test_property_parse_date_reads_iso_and_day_first_dates(day: dt.date) -> None:
    assert parse_date(day.isoformat()) == day
    assert parse_date(f"Date: {day.day}/{day.month}/{day.year}") == day


@given(day=st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2099, 12, 31)))
def test_property_two_digit_years_are_this_century(day: dt.date) -> None:
    assert parse_date(f"{day.day:02d}/{day.month:02d}/{day.year % 100:02d}") == day


# ---------------------------------------------------------------- NoteFacts round trip

RICH_FRONT = """\
aliases: [refund policy]
valid_from: 2026-11-28
valid_to: 2027-06-30
revision: B
authority: authoritative
scope: [tenant-a, tenant-b]
status: current
supersedes: [refund-policy-a@A]
superseded_by: [refund-policy-c]
asserts: {refund_window_days: 14, regions: [eu, uk]}
fresh_for: 30d
kind: policy"""


def test_to_dict_lists_every_field_as_json_types() -> None:
    facts = with_front(RICH_FRONT, "# T\n\nDate: 2026-11-28\n").facts
    assert facts.to_dict() == {
        "aliases": ["refund policy"],
        "valid_from": "2026-11-28",
        "valid_to": "2027-06-30",
        "revision": "B",
        "authority": "authoritative",
        "scope": ["tenant-a", "tenant-b"],
        "status": "current",
        "status_text": "current",
        "status_source": "front matter",
        "supersedes": ["refund-policy-a@A"],
        "superseded_by": ["refund-policy-c"],
        "amends": [],
        "amended_by": [],
        "requires": [],
        "asserts": {"refund_window_days": 14, "regions": ["eu", "uk"]},
        "fresh_for": "30d",
        "kind": "policy",
        "date_line": "Date: 2026-11-28",
    }


def test_from_dict_round_trips_through_json() -> None:
    facts = with_front(RICH_FRONT).facts
    again = NoteFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again == facts
    assert isinstance(again.scope, tuple)
    assert again.authority_level == 3


def test_from_dict_ignores_unknown_keys_and_defaults_missing_ones() -> None:
    facts = NoteFacts.from_dict({"status": "draft", "scope": ["a"], "not_a_field": 1})
    assert facts == NoteFacts(status="draft", scope=("a",))


_short_text = st.text(max_size=12)
_strings = st.lists(_short_text, max_size=3).map(tuple)
_optional = st.none() | _short_text


@given(
    facts=st.builds(
        NoteFacts,
        aliases=_strings,
        valid_from=_optional,
        valid_to=_optional,
        revision=_optional,
        authority=st.none() | st.sampled_from(sorted(AUTHORITY_LEVELS)),
        scope=_strings,
        status=st.none() | st.sampled_from(STATUSES),
        status_text=_optional,
        status_source=_optional,
        supersedes=_strings,
        superseded_by=_strings,
        asserts=st.dictionaries(_short_text, st.none() | st.integers() | _short_text, max_size=3),
        fresh_for=_optional,
        kind=_optional,
        date_line=_optional,
    )
)
def test_property_to_dict_from_dict_round_trip(facts: NoteFacts) -> None:
    data = facts.to_dict()
    assert NoteFacts.from_dict(json.loads(json.dumps(data))) == facts


# ---------------------------------------------------------------- arbitrary front matter never crashes

FIELDS = (
    "id",
    "aliases",
    "observed",
    "valid_from",
    "valid_to",
    "revision",
    "authority",
    "scope",
    "status",
    "supersedes",
    "superseded_by",
    "asserts",
    "fresh_for",
    "kind",
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.dates()
    | st.sampled_from(["2026-11-28", "08/01/24", "Superseded by ADR025", "authoritative", "2026-02-30", "@"])
)
_yaml_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
_bodies = st.sampled_from(
    [
        "# T\n\nBody.\n",
        "# T\n\nDate: 08/01/24\n\n## Status\n\nSuperseded by [B](0002-b.md)\n",
        "# T\n\nDate: whenever\n\nStatus: Accepted or Rejected\n",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata=st.dictionaries(st.sampled_from(FIELDS), _yaml_values), body=_bodies)
def test_property_arbitrary_front_matter_values_only_warn(metadata: dict[str, object], body: str) -> None:
    front = yaml.safe_dump(metadata, sort_keys=False).rstrip("\n") if metadata else ""
    note = parse_note("n.md", f"---\n{front}\n---\n{body}")
    facts = note.facts
    assert all(isinstance(warning, str) and warning for warning in note.warnings)
    assert facts.status is None or facts.status in STATUSES
    assert facts.authority is None or facts.authority in AUTHORITY_LEVELS
    for day in (facts.valid_from, facts.valid_to):
        assert day is None or ISO_DAY.match(day)
    for values in (facts.aliases, facts.scope, facts.supersedes, facts.superseded_by):
        assert isinstance(values, tuple)
        assert all(isinstance(v, str) and v == v.strip() and v for v in values)
    assert isinstance(facts.asserts, dict)
    serialized = json.dumps(facts.to_dict(), sort_keys=True)
    assert json.dumps(NoteFacts.from_dict(json.loads(serialized)).to_dict(), sort_keys=True) == serialized
    if "authority" in metadata and isinstance(metadata["authority"], str) and metadata["authority"].strip():
        known = metadata["authority"].strip().lower() in AUTHORITY_LEVELS
        assert (facts.authority is not None) is known
        assert any("authority" in w for w in note.warnings) is not known
    if "asserts" in metadata and metadata["asserts"] is not None and not isinstance(metadata["asserts"], dict):
        assert facts.asserts == {}
        assert any("asserts must map" in w for w in note.warnings)


@pytest.mark.parametrize("text", ["Not accepted", "Proposed, then Rejected", "Accepted or Rejected"])
def test_negated_or_mixed_statuses_stay_unknown(text: str) -> None:
    assert normalize_status(text) is None


def test_year_zero_is_not_a_date() -> None:
    assert parse_date("31/12/0000") is None
    assert parse_date("31/12/00") == dt.date(2000, 12, 31)
