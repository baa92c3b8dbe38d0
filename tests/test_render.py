"""Renderings of a packet: text, Markdown, HTML, DataFrame and repr. Note text is hostile input."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from retrieval_kernel import Packet, Workspace

AS_OF = "2026-10-15"

HOSTILE = """---
id: hostile-note
observed: 2026-10-01
---
## Gearbox <script>alert(1)</script> guard

The gearbox guard says <script>alert(1)</script> and <img src=x onerror=alert(1)> here.
Inline runs ``` and ```` of backticks in gearbox text.

`````
fenced gearbox block with ``` inside
`````
"""

PLAIN = """# Conveyor

conveyor belt tension without any observed date
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    notes = tmp_path_factory.mktemp("render") / "notes"
    notes.mkdir()
    (notes / "hostile.md").write_text(HOSTILE, encoding="utf-8")
    (notes / "plain.md").write_text(PLAIN, encoding="utf-8")
    with Workspace(notes, notes.parent / "store") as ws:
        ws.index()
        yield ws


@pytest.fixture
def hostile(workspace: Workspace) -> Packet:
    packet = workspace.query("gearbox guard", as_of=AS_OF)
    assert [item.path for item in packet.evidence] == ["hostile.md"]
    return packet


def longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


# ---------------------------------------------------------------- html


def test_html_escapes_note_text(hostile: Packet) -> None:
    page = hostile._repr_html_()
    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "hostile.md:5-12" in page


def test_html_escapes_the_query(workspace: Workspace) -> None:
    packet = workspace.query("gearbox <script>alert(2)</script>", as_of=AS_OF)
    page = packet._repr_html_()
    assert "<script" not in page
    assert "&lt;script&gt;alert(2)" in page


# ---------------------------------------------------------------- markdown


def fenced_blocks(markdown: str) -> list[tuple[str, str]]:
    """(fence, body) for every fenced block: an opening ```...text line up to the same fence alone."""
    blocks = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        opening = re.fullmatch(r"(`{3,})text", lines[index])
        if opening:
            fence = opening.group(1)
            end = lines.index(fence, index + 1)
            blocks.append((fence, "\n".join(lines[index + 1 : end])))
            index = end
        index += 1
    return blocks


def test_markdown_fence_is_longer_than_any_backtick_run(hostile: Packet) -> None:
    markdown = hostile._repr_markdown_()
    (item,) = hostile.evidence
    assert longest_backtick_run(item.excerpt) == 5
    blocks = fenced_blocks(markdown)
    assert len(blocks) == 1
    fence, body = blocks[0]
    assert len(fence) > longest_backtick_run(item.excerpt)
    assert body == item.excerpt


def test_markdown_outside_the_fence_has_no_raw_html(hostile: Packet) -> None:
    markdown = hostile._repr_markdown_()
    (fence, body) = fenced_blocks(markdown)[0]
    outside = markdown.replace(f"{fence}text\n{body}\n{fence}", "")
    assert body not in outside
    assert "<script" not in outside
    assert "&lt;script&gt;" in outside  # the heading, escaped
    assert "`hostile.md:5-12`" in outside


# ---------------------------------------------------------------- text


def test_text_shows_citation_both_clocks_and_live_state(hostile: Packet) -> None:
    text = str(hostile)
    assert "hostile.md:5-12" in text
    assert "observed 2026-10-01 (14 days before as-of" in text
    assert "stale, fresh for 7 d" in text
    assert "not live-verified" in text
    assert "indexed " in text
    numbered = [line for line in text.split("\n") if re.match(r"\s+\d+ \| ", line)]
    assert [int(line.split("|")[0]) for line in numbered] == list(range(5, 13))
    assert numbered[2].split("| ", 1)[1] == HOSTILE.split("\n")[6]


def test_unknown_observed_renders_as_unknown(workspace: Workspace) -> None:
    packet = workspace.query("conveyor belt tension", as_of=AS_OF)
    (item,) = packet.evidence
    assert item.observed_at is None
    assert "observed: unknown" in str(packet)
    assert "observed: unknown" in packet._repr_html_()
    assert "observed: unknown" in packet._repr_markdown_()
    assert "days before as-of" not in str(packet)


def test_abstained_packet_says_nothing_applies(workspace: Workspace) -> None:
    packet = workspace.query("zeppelin hangar", as_of=AS_OF)
    assert packet.abstained
    assert packet.evidence == ()
    reason = packet.abstention_reason
    assert f"Nothing applies ({reason}): " in str(packet)
    assert f"Nothing applies ({reason}): " in packet._repr_html_()
    assert "Nothing applies" in packet._repr_markdown_()
    assert "[e1]" not in str(packet)
    # The reason code is followed by a sentence for people, not by the code again.
    assert f"Nothing applies ({reason}): {reason}." not in str(packet)


def test_no_match_abstention_text(workspace: Workspace) -> None:
    """Rendering is a pure function of the packet: force the reason to check its wording."""
    packet = replace(workspace.query("zeppelin hangar", as_of=AS_OF), abstention_reason="no_match")
    text = str(packet)
    assert "Nothing applies (no_match): no passage shares a searchable word with the query." in text
    assert "Nothing applies (no_match)" in packet._repr_html_()
    assert "Nothing applies (no\\_match)" in packet._repr_markdown_()


# ---------------------------------------------------------------- frame and repr


def test_frame_has_one_row_per_evidence_with_citations(workspace: Workspace) -> None:
    packet = workspace.query("gearbox conveyor", as_of=AS_OF)
    assert len(packet.evidence) == 2
    frame = packet.to_frame()
    assert len(frame) == len(packet.evidence)
    assert "citation" in frame.columns
    assert list(frame["citation"]) == [f"{e.path}:{e.line_start}-{e.line_end}" for e in packet.evidence]
    assert set(frame["citation"]) == {"hostile.md:5-12", "plain.md:1-3"}
    assert list(frame["ref"]) == ["e1", "e2"]


def test_frame_of_abstained_packet_is_empty(workspace: Workspace) -> None:
    frame = workspace.query("zeppelin", as_of=AS_OF).to_frame()
    assert len(frame) == 0
    assert "citation" in frame.columns


@pytest.mark.parametrize(
    "question",
    ["gearbox guard", "gearbox " * 200, "gearbox\nguard\n" * 30, "gearbox 'guard' \"quoted\" " * 10],
    ids=["short", "long", "multi-line", "quotes"],
)
def test_repr_is_one_short_line(workspace: Workspace, question: str) -> None:
    packet = workspace.query(question, as_of=AS_OF)
    text = repr(packet)
    assert "\n" not in text
    assert len(text) < 120
    assert text.startswith("<Packet ")
    outcome = f"abstained: {packet.abstention_reason}" if packet.abstained else f"{len(packet.evidence)} evidence"
    assert outcome in text


def test_rendering_does_not_change_the_json(workspace: Workspace) -> None:
    for question in ("gearbox guard", "conveyor", "zeppelin"):
        packet = workspace.query(question, as_of=AS_OF, max_bytes=3000)
        before = packet.to_json()
        str(packet)
        repr(packet)
        packet._repr_html_()
        packet._repr_markdown_()
        packet.to_frame()
        assert packet.to_json() == before
        assert packet.size() == packet.budget.used
