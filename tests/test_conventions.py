"""Decision records as written in the wild: the status vocabulary, key spellings, reference values,
dates, and one fixture per convention (PEP headers, partial supersession, MADR, RFC Obsoletes/Updates),
read from the files and in packets (partial supersession: both notes admitted, the amending one governs)."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.facts import parse_date
from retrieval_kernel.corpus.inventory import inventory
from retrieval_kernel.corpus.notes import parse_note
from retrieval_kernel.corpus.status import STATUSES, normalize_status, vocabulary_rows
from retrieval_kernel.output.render import to_html, to_markdown, to_text

REPO = Path(__file__).resolve().parents[1]
CONVENTIONS = REPO / "fixtures" / "conventions"
AS_OF = "2026-11-30"


def entries(folder: str) -> dict[str, dict]:
    listing = inventory(CONVENTIONS / folder)
    assert listing["problems"] == [] and listing["unresolved_links"] == [] and listing["ambiguous_links"] == []
    return {entry["path"]: entry for entry in listing["notes"]}


# ---------------------------------------------------------------- the vocabulary table


@pytest.mark.parametrize(("written", "normalised"), vocabulary_rows())
def test_every_row_of_the_vocabulary_table_normalises_as_it_says(written: str, normalised: str) -> None:
    assert normalised in STATUSES
    assert normalize_status(written) == normalised
    assert normalize_status(written.upper()) == normalised  # case is ignored


@pytest.mark.parametrize(
    ("written", "normalised"),
    [
        ("Final", "current"),
        ("Living", "current"),
        ("Last Call", "draft"),
        ("Review", "draft"),
        ("Stagnant", "draft"),
        ("Deferred", "draft"),
        ("Withdrawn", "withdrawn"),
        ("Moved", "moved"),
        ("Replaced", "superseded"),
        ("Obsolete", "superseded"),
        ("Implemented", "current"),
        ("Implementable", "current"),
        ("Active", "current"),
        ("Partly superseded by ADR-9", "partly_superseded"),
        ("Accepted, amended by [ADR 12](0012-x.md)", "partly_superseded"),
        ("Updated by RFC 9230", "partly_superseded"),
        ("Proposed Standard", "current"),
        ("Accepted or Rejected", None),
        ("Not accepted", None),
    ],
)
def test_statuses_from_the_wild(written: str, normalised: str | None) -> None:
    assert normalize_status(written) == normalised


def test_the_docs_table_is_the_code_table() -> None:
    """docs/notes.md lists exactly the rows the code maps (one table in code, the same in the docs)."""
    text = (REPO / "docs" / "notes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \| `([a-z_]+)` \|", text, re.MULTILINE)
    assert sorted(rows) == sorted(vocabulary_rows())


# ---------------------------------------------------------------- keys, values, dates


@pytest.mark.parametrize(
    "key", ["superseded_by", "superseded-by", "supersededby", "SupersededBy", "Superseded-By", "SUPERSEDED_BY"]
)
def test_successor_keys_are_read_in_every_common_spelling(key: str) -> None:
    note = parse_note("a.md", f"---\nstatus: Superseded\n{key}: 141\n---\nBody\n")
    assert note.facts.superseded_by == ("141",)
    assert note.facts.status == "superseded"


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("replaces", "supersedes"),
        ("Obsoletes", "supersedes"),
        ("updates", "amends"),
        ("amended_by", "amended_by"),
        ("Updated-By", "amended_by"),
        ("partly_superseded_by", "amended_by"),
        ("Requires", "requires"),
    ],
)
def test_relation_keys(key: str, field: str) -> None:
    note = parse_note("a.md", f"---\n{key}: 7\n---\nBody\n")
    assert getattr(note.facts, field) == ("7",)


@pytest.mark.parametrize(
    ("value", "refs"),
    [
        ("141", ("141",)),
        ("[141, 150]", ("141", "150")),
        ('"145, 609, 1014"', ("145", "609", "1014")),
        ("0005-use-grpc.md", ("0005-use-grpc.md",)),
        ('"[ADR-0005](0005-use-grpc.md)"', ("0005-use-grpc.md",)),
        ('["[A](a.md)", "RFC 9101"]', ("a.md", "RFC 9101")),
    ],
)
def test_reference_values_number_list_path_or_link(value: str, refs: tuple[str, ...]) -> None:
    assert parse_note("a.md", f"---\nsuperseded_by: {value}\n---\nBody\n").facts.superseded_by == refs


@pytest.mark.parametrize(
    "written", ["29-Oct-2019", "Oct 29, 2019", "October 29, 2019", "29 October 2019", "2019/10/29", "2019-10-29"]
)
def test_dates_as_written(written: str) -> None:
    assert parse_date(written) == dt.date(2019, 10, 29)
    note = parse_note("a.md", f"PEP: 1\nTitle: T\nCreated: {written}\n\nBody\n")
    assert note.observed_at == "2019-10-29"


@pytest.mark.parametrize("written", ["31-Feb-2019", "Foo 29, 2019", "2019/13/01"])
def test_impossible_dates_are_unknown_with_a_warning(written: str) -> None:
    note = parse_note("a.md", f"---\ncreated: {written}\n---\nBody\n")
    assert note.observed_at is None
    assert any("created" in warning for warning in note.warnings)


def test_a_header_block_needs_two_lines_and_a_known_key() -> None:
    assert parse_note("a.md", "Status: Accepted\n\nBody\n").facts.status_source == "status line"
    assert parse_note("a.md", "Note: x\nAuthor: y\n\nBody\n").metadata == {}
    header = parse_note("a.md", "PEP: 8\nStatus: Final\n\nBody\n")
    assert header.facts.status_source == "header"
    assert header.passages[0].line_start == 1  # the header stays visible, citable text


# ---------------------------------------------------------------- one fixture per convention


def test_pep_headers_status_successor_dates_and_requires() -> None:
    notes = entries("pep-headers")
    old, new, withdrawn = notes["tip-0007.md"], notes["tip-0012.md"], notes["tip-0015.md"]
    assert (old["status"], old["status_as_written"], old["status_source"]) == ("superseded", "Superseded", "header")
    assert old["superseded_by"] == ["tip-0012.md"] and old["observed"] == "2019-10-29"
    assert (new["status"], new["status_as_written"], new["observed"]) == ("current", "Final", "2020-10-29")
    assert new["supersedes"] == ["tip-0007.md", "tip-0015.md"]
    assert new["requires"] == ["tip-0003.md", "tip-0007.md"]
    assert notes["tip-0003.md"]["observed"] == "2019-10-29"  # 2019/10/29
    assert (withdrawn["status"], withdrawn["superseded_by"]) == ("withdrawn", ["tip-0012.md"])  # SupersededBy


def test_madr_status_with_a_link_names_the_successor() -> None:
    notes = entries("madr")
    old = notes["0003-use-rest-for-partner-api.md"]
    assert old["status"] == "superseded"
    assert old["status_as_written"] == "superseded by [ADR-0005](0005-use-grpc-for-partner-api.md)"
    assert old["superseded_by"] == ["0005-use-grpc-for-partner-api.md"]


def test_rfc_obsoletes_is_full_supersession_and_updates_is_partial() -> None:
    notes = entries("rfc")
    assert notes["rfc-9101.md"]["superseded_by"] == ["rfc-9230.md"]
    assert notes["rfc-9102.md"]["superseded_by"] == []
    assert notes["rfc-9102.md"]["partly_superseded_by"] == ["rfc-9230.md"]
    assert notes["rfc-9102.md"]["status"] == "current"  # "Proposed Standard": published, in force
    assert notes["rfc-9230.md"]["amends"] == ["rfc-9102.md"]
    assert notes["rfc-9230.md"]["observed"] == "2023-03-12"  # "12 March 2023"


def test_partial_supersession_from_front_matter_and_from_an_adr_status() -> None:
    notes = entries("partial")
    assert notes["0001-release-cadence.md"]["partly_superseded_by"] == ["0004-shorter-code-freeze.md"]
    assert notes["0001-release-cadence.md"]["status"] == "current"
    on_call = notes["0006-on-call-rota.md"]
    assert (on_call["status"], on_call["partly_superseded_by"]) == ("partly_superseded", ["0008-follow-the-sun.md"])


# ---------------------------------------------------------------- partial supersession in packets


@pytest.fixture(scope="module")
def partial_ws(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("partial")
    shutil.copytree(CONVENTIONS / "partial", root / "notes")
    ws = Workspace(root / "notes", root / "store", lanes=("identity", "lexical"))
    ws.index()
    yield ws
    ws.close()


def test_a_partly_superseded_decision_admits_both_and_the_amending_note_governs_the_change(partial_ws) -> None:
    packet = partial_ws.query("How long is the code freeze before a release?", as_of=AS_OF, top=4)
    assert not packet.abstained
    by_path = {item.path: item for item in packet.evidence}
    assert {"0001-release-cadence.md", "0004-shorter-code-freeze.md"} <= set(by_path)
    old = by_path["0001-release-cadence.md"]
    assert old.status == "partly_superseded" and old.partly_superseded_by == ("0004-shorter-code-freeze.md",)
    assert by_path["0004-shorter-code-freeze.md"].partly_superseded_by == ()
    (freeze,) = [c for c in packet.conflicts if c.proposition == "code_freeze_days"]
    assert freeze.resolution.startswith("partly_superseded(") and freeze.required_behavior == "use_winner"
    assert freeze.winner is not None and freeze.winner.startswith("0004-shorter-code-freeze")
    sides = {side.id.split("#")[0]: (side.value, side.status) for side in freeze.evidence}
    assert sides == {"0001-release-cadence": (3, "partly_superseded"), "0004-shorter-code-freeze": (1, "current")}
    first = [item.path for item in packet.evidence].index
    assert first("0004-shorter-code-freeze.md") < first("0001-release-cadence.md")  # the successor governs
    # The passage stating the changed value only explains; the rest of the old note is still current.
    stating = [i for i in packet.evidence if i.path == "0001-release-cadence.md" and "3 days" in i.excerpt]
    assert all(item.role == "explanation" for item in stating)


def test_the_unchanged_part_of_a_partly_superseded_decision_is_still_current(partial_ws) -> None:
    packet = partial_ws.query("How often do we ship a release?", as_of=AS_OF, top=3)
    item = next(item for item in packet.evidence if item.path == "0001-release-cadence.md")
    assert item.role == "current" and item.status == "partly_superseded"
    assert "partly superseded by 0004-shorter-code-freeze.md" in item.reason


def test_renderers_mark_a_partly_superseded_item(partial_ws) -> None:
    packet = partial_ws.query("How long is the code freeze before a release?", as_of=AS_OF, top=4)
    mark = "PARTLY SUPERSEDED by 0004-shorter-code-freeze.md"
    assert mark in to_text(packet)
    assert "PARTLY SUPERSEDED by 0004\\-shorter\\-code\\-freeze.md" in to_markdown(packet) or mark in to_markdown(
        packet
    )
    html = to_html(packet)
    assert "rk-partly" in html and mark in html
    assert packet.to_dict()["packet_version"] == 5
    assert packet.to_frame()["partly_superseded_by"].notna().any()


def test_a_fully_superseded_decision_is_still_excluded(tmp_path: Path) -> None:
    shutil.copytree(CONVENTIONS / "madr", tmp_path / "notes")
    with Workspace(tmp_path / "notes", tmp_path / "store", lanes=("lexical",)) as ws:
        ws.index()
        # asked in the notes' words: lexical-only, "Which protocol does the partner API use?" abstains
        # below_threshold since the judge's refit ("protocol", in no note, is most of the question's weight
        # where every passage holds "partner" and "api")
        packet = ws.query("Which option was chosen for the partner API?", as_of=AS_OF)
    assert [item.path for item in packet.evidence if item.role == "current"][:1] == ["0005-use-grpc-for-partner-api.md"]
    assert "0003-use-rest-for-partner-api.md" not in {item.path for item in packet.evidence}


def test_one_source_time_the_first_date_key_wins() -> None:
    note = parse_note("a.md", "---\ndate: 2021-03-04\ncreated: 2019-01-01\n---\nBody\n")
    assert note.observed_at == "2021-03-04" and note.warnings == ()
