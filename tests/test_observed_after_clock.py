"""A note observed after the clock was not yet on file then: as of that clock it is not current evidence."""

from __future__ import annotations

from pathlib import Path

from test_answerability import md, workspace  # tests/ is on sys.path (rootdir-less test modules)


def _return(name: str, title: str, week: int, observed: str, sections: dict[str, str], **front: object) -> str:
    """The ``title`` return of one week (note ``name``-week-``week``), written on ``observed``."""
    return md(
        f"{title}, week {week}",
        sections,
        id=f"{name}-week-{week}",
        authority="reference",
        kind="record",
        observed=observed,
        **front,
    )


def _maintenance(week: int, closed: int, observed: str) -> str:
    sections = {"Maintenance": f"Maintenance closed {closed} repair jobs in the halls this week."}
    return _return("maintenance", "Weekly maintenance return", week, observed, sections, fresh_for="10d")


NOTES = {
    "records/maintenance-week-8.md": _maintenance(8, 58, "2027-03-01"),
    "records/maintenance-week-9.md": _maintenance(9, 64, "2027-03-08"),
    "policies/repairs.md": md(
        "Repairs policy",
        {"Urgent repairs": "Urgent repairs are attended within 4 hours, day or night."},
        id="repairs",
        authority="authoritative",
    ),
}


def test_a_return_written_after_the_clock_is_not_evidence_as_of_the_clock(tmp_path: Path) -> None:
    with workspace(tmp_path, NOTES) as ws:
        before = ws.query("How many repair jobs did maintenance close?", as_of="2027-03-04")
        after = ws.query("How many repair jobs did maintenance close?", as_of="2027-03-09")
    admitted_before = [item.id for item in before.evidence]
    assert "maintenance-week-8#maintenance" in admitted_before
    assert "maintenance-week-9#maintenance" not in admitted_before  # written on 8 March
    excluded = {item.id: item for item in before.excluded}
    assert excluded["maintenance-week-9#maintenance"].reason == "not_yet_observed"
    assert "observed 2027-03-08, after the clock 2027-03-04" in excluded["maintenance-week-9#maintenance"].detail
    assert "maintenance-week-9#maintenance" in [item.id for item in after.evidence]


def test_a_note_whose_window_has_begun_is_governed_by_its_window_however_late_it_was_written(tmp_path: Path) -> None:
    notes = NOTES | {
        "policies/quiet-hours.md": md(
            "Quiet hours",
            {"Quiet hours": "Quiet hours in the halls run from 23:00 to 07:00 every night."},
            id="quiet-hours",
            authority="authoritative",
            valid_from="2027-01-01",
            observed="2027-03-08",  # written down after the clock, in force before it
        ),
    }
    with workspace(tmp_path, notes) as ws:
        packet = ws.query("When do quiet hours start in the halls?", as_of="2027-03-04")
    assert not packet.abstained and packet.evidence[0].id == "quiet-hours#quiet-hours"


def test_a_value_in_a_return_written_after_the_clock_does_not_answer(tmp_path: Path) -> None:
    def takings(week: int, observed: str, bar: str) -> str:
        sections = {"Admissions": f"We had {1400 + week} admissions this week.", "Bar takings": bar}
        return _return("weekly-return", "Weekly return", week, observed, sections)

    returns = {
        "records/weekly-return-week-40.md": takings(40, "2037-10-05", "No bar takings figure was compiled."),
        "records/weekly-return-week-41.md": takings(41, "2037-10-12", "The bar took 5120 euro this week."),
    }
    with workspace(tmp_path, returns, lanes=("identity", "lexical", "dense")) as ws:
        before = ws.query("What were the bar takings last week?", as_of="2037-10-07")
        after = ws.query("What were the bar takings last week?", as_of="2037-10-14")
    assert before.abstained and before.abstention_reason == "below_threshold"  # week 41 was not on file yet
    assert not after.abstained and after.evidence[0].id == "weekly-return-week-41#bar-takings"
