"""A note observed after the clock was not yet on file then: as of that clock it is not current evidence."""

from __future__ import annotations

from pathlib import Path

from test_answerability import md, workspace  # tests/ is on sys.path (rootdir-less test modules)


def _return(week: int, closed: int, observed: str) -> str:
    return md(
        f"Weekly maintenance return, week {week}",
        {"Maintenance": f"Maintenance closed {closed} repair jobs in the halls this week."},
        id=f"maintenance-week-{week}",
        authority="reference",
        kind="record",
        observed=observed,
        fresh_for="10d",
    )


NOTES = {
    "records/maintenance-week-8.md": _return(8, 58, "2027-03-01"),
    "records/maintenance-week-9.md": _return(9, 64, "2027-03-08"),
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
