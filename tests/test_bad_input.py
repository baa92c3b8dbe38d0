"""Bad input, with nothing lost (issue 5).

Undecodable and binary files, a 50 MB note, 10,000 headings, front matter that
is not a mapping, duplicate ids, symlinks out of the root and in loops, unusual
file names, empty and enormous queries, and hostile HTML/JS in every place a
note can put text: each is reported by name (or refused with a specific error),
the other notes still answer, and every HTML output stays inert.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
import urllib.parse
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_kernel.corpus.notes import DEFAULT_MAX_PASSAGE_CHARS, parse_note, read_note, scan_notes
from retrieval_kernel.errors import EmptyQueryError, InputError, NoteDecodeError, QueryTooLongError
from retrieval_kernel.output.packet import Packet
from retrieval_kernel.output.render import to_html, to_markdown

AS_OF = "2026-10-15"
FAST = ("identity", "lexical")
GOOD = "# Refunds\n\nThe refund window for kestrel orders is fourteen days.\n"


# ---------------------------------------------------------------- helpers


def file_lines(path: Path) -> list[str]:
    """The file's lines by universal newlines, read independently of the parser."""
    text = path.read_bytes().decode("utf-8")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def assert_cites_exact_lines(ws: Workspace, packet: Packet) -> None:
    for item in packet.evidence:
        lines = file_lines(ws.notes_dir / item.path)
        assert 1 <= item.line_start <= item.line_end <= len(lines), item.ref
        assert item.excerpt == "\n".join(lines[item.line_start - 1 : item.line_end]), item.ref


@pytest.fixture
def open_ws(tmp_path: Path, make_notes) -> Iterator:
    """``open_ws(files)``: an identity+lexical workspace over ``{path: text or bytes}`` (closed afterwards)."""
    opened: list[Workspace] = []

    def build(files: dict[str, str | bytes], lanes: tuple[str, ...] = FAST) -> Workspace:
        ws = Workspace(make_notes(files), store_dir=tmp_path / "store", lanes=lanes)
        opened.append(ws)
        return ws

    yield build
    for ws in opened:
        ws.close()


def bump_mtime(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 7_000_000_000))


# ---------------------------------------------------------------- undecodable bytes and binary files

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
SQLITE = b"SQLite format 3\x00\x10\x00\x01\x01\x00@  \x00\x00\x00\x02\xff\xfe\x00\x00"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("# Caf\xe9\n\ncaf\xe9 au lait\n".encode("latin-1"), "not valid UTF-8 (byte 5)", id="latin-1"),
        pytest.param(b"# Cut\n\ntruncated \xe2\x82", "not valid UTF-8 (byte 17)", id="truncated-sequence"),
        pytest.param("# BOM\n".encode("utf-16"), "is UTF-16 text, not UTF-8; re-save it as UTF-8", id="utf-16"),
        pytest.param("# BOM\n".encode("utf-32"), "is UTF-32 text, not UTF-8; re-save it as UTF-8", id="utf-32"),
        pytest.param(PNG, "is a binary file, not a text note", id="png"),
        pytest.param(SQLITE, "is a binary file, not a text note", id="sqlite"),
    ],
)
def test_undecodable_or_binary_note_is_reported_by_name_and_the_rest_still_answer(
    open_ws, content: bytes, expected: str
) -> None:
    ws = open_ws({"refunds.md": GOOD, "attachments/broken.md": content})
    report = ws.index()
    assert report.added == ("refunds.md",)
    (problem,) = report.problems
    assert problem.path == "attachments/broken.md"
    assert problem.message.startswith("attachments/broken.md: ")
    assert expected in problem.message
    assert problem.kept_last_good is False
    with pytest.raises(NoteDecodeError, match=re.escape(expected)):
        read_note(ws.notes_dir, ws.notes_dir / "attachments/broken.md")

    packet = ws.query("kestrel refund window", as_of=AS_OF)
    assert [item.path for item in packet.evidence] == ["refunds.md"]
    assert_cites_exact_lines(ws, packet)
    (warning,) = packet.warnings
    assert warning.startswith("attachments/broken.md: ") and expected in warning
    assert warning.endswith("(not indexed)")


def test_a_note_holding_a_nul_in_valid_utf8_is_text_and_stays_citable(open_ws) -> None:
    """NUL is valid UTF-8: such a note is indexed as text (only undecodable bytes with a NUL are 'binary')."""
    ws = open_ws({"odd.md": "# Odd\n\nkestrel \x00 marker line\n"})
    assert ws.index().problems == ()
    packet = ws.query("kestrel marker", as_of=AS_OF)
    assert [item.path for item in packet.evidence] == ["odd.md"]
    assert_cites_exact_lines(ws, packet)
    assert "\\u0000" in packet.to_json()


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        pytest.param(b"# Broken\n\n\xff save\n", "not valid UTF-8 (byte 10)", id="undecodable"),
        pytest.param(PNG, "is a binary file", id="binary"),
        pytest.param("---\n- a\n- b\n---\n# Refunds\n\nkestrel\n", "must be a mapping", id="front-matter-list"),
        pytest.param("---\ntitle: [never closed\n---\n# R\n\nkestrel\n", "not valid YAML", id="malformed-yaml"),
    ],
)
def test_a_bad_save_keeps_the_last_good_revision_and_says_so(open_ws, bad: bytes | str, expected: str) -> None:
    ws = open_ws({"refunds.md": GOOD, "other.md": "# Other\n\nUnrelated gearbox note.\n"})
    ws.index()
    before = ws.query("kestrel refund window", as_of=AS_OF)
    assert [item.path for item in before.evidence] == ["refunds.md"]

    path = ws.notes_dir / "refunds.md"
    path.write_bytes(bad if isinstance(bad, bytes) else bad.encode("utf-8"))
    bump_mtime(path)
    report = ws.index()
    (problem,) = report.problems
    assert (problem.path, problem.kept_last_good) == ("refunds.md", True)
    assert expected in problem.message

    after = ws.query("kestrel refund window", as_of=AS_OF)
    assert [(e.id, e.excerpt, e.line_start, e.line_end) for e in after.evidence] == [
        (e.id, e.excerpt, e.line_start, e.line_end) for e in before.evidence
    ]
    assert any(w.startswith("refunds.md") and w.endswith("(last good revision kept)") for w in after.warnings)
    assert ws.records.documents()["refunds.md"].revision == 1


# ---------------------------------------------------------------- front matter that is not a mapping


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        pytest.param(
            "- one\n- two", "refunds-x.md:2: front matter must be a mapping of keys to values, got list", id="list"
        ),
        pytest.param(
            "just a sentence", "refunds-x.md:2: front matter must be a mapping of keys to values, got str", id="str"
        ),
        pytest.param("42", "refunds-x.md:2: front matter must be a mapping of keys to values, got int", id="int"),
        pytest.param("title: a\n  bad: indent", "refunds-x.md:3: front matter is not valid YAML", id="bad-indent"),
        pytest.param("title: [unclosed", "refunds-x.md:", id="unclosed-flow"),
        pytest.param("a: 1\na: 2", None, id="duplicate-keys-are-valid"),
        pytest.param(
            "a: 1\n? [x]\n: y", "refunds-x.md:3: front matter is not valid YAML: found unhashable key", id="list-key"
        ),
        pytest.param(
            "observed: 2026-02-30", "refunds-x.md:2: front matter has a value YAML cannot build", id="bad-date"
        ),
        pytest.param("!!python/object:os.system ls", "refunds-x.md:", id="unsafe-tag"),
    ],
)
def test_front_matter_that_is_not_a_mapping_is_reported_and_the_rest_still_answer(
    open_ws, front: str, expected: str | None
) -> None:
    ws = open_ws({"refunds.md": GOOD, "refunds-x.md": f"---\n{front}\n---\n# Kestrel extra\n\nkestrel spare\n"})
    report = ws.index()
    if expected is None:
        assert report.problems == () and set(report.added) == {"refunds.md", "refunds-x.md"}
        return
    (problem,) = report.problems
    assert problem.path == "refunds-x.md"
    assert problem.message.startswith(expected)
    assert report.added == ("refunds.md",)
    packet = ws.query("kestrel refund window", as_of=AS_OF)
    assert [item.path for item in packet.evidence] == ["refunds.md"]
    assert any(w.startswith("refunds-x.md:") for w in packet.warnings)


ALIAS_BOMB = "\n".join(
    ["l0: &l0 [x, x, x, x, x, x, x, x, x]"] + [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
)


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        pytest.param("a: &a [*a]", "nests deeper than 32 levels (or a YAML alias refers to itself)", id="self-alias"),
        pytest.param("x: " + "[" * 2000, "front matter is nested too deeply to read", id="2000-open-brackets"),
        pytest.param("x: " + "{a: " * 40 + "1" + "}" * 40, "nests deeper than 32 levels", id="40-levels"),
        pytest.param(ALIAS_BOMB, "expands to more than 10,000 values (through YAML aliases?)", id="billion-laughs"),
    ],
)
def test_front_matter_bombs_are_reported_quickly_instead_of_crashing_the_index(
    open_ws, front: str, expected: str
) -> None:
    ws = open_ws({"refunds.md": GOOD, "bomb.md": f"---\n{front}\n---\n# Bomb\n\nkestrel bomb\n"})
    started = time.monotonic()
    report = ws.index()
    assert time.monotonic() - started < 15
    (problem,) = report.problems
    assert problem.path == "bomb.md" and problem.message.startswith("bomb.md:2: front matter")
    assert expected in problem.message
    packet = ws.query("kestrel refund window", as_of=AS_OF)
    assert [item.path for item in packet.evidence] == ["refunds.md"]


def test_non_finite_numbers_in_front_matter_keep_the_packet_strict_json(open_ws) -> None:
    ws = open_ws({"refunds.md": "---\nasserts: {refund_window_days: .inf, fee: -.inf, rate: .nan}\n---\n" + GOOD})
    assert ws.index().problems == ()
    packet = ws.query("kestrel refund window", as_of=AS_OF)
    (item,) = packet.evidence
    assert dict(item.asserts) == {"refund_window_days": "inf", "fee": "-inf", "rate": "nan"}

    def reject(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    assert json.loads(packet.to_json(), parse_constant=reject)["evidence"][0]["asserts"]["rate"] == "nan"


def test_front_matter_that_is_never_closed_is_reported_at_line_one(open_ws) -> None:
    ws = open_ws({"refunds.md": GOOD, "open.md": "---\ntitle: open\n# Kestrel\n\nkestrel forever open\n"})
    (problem,) = ws.index().problems
    assert problem.message == "open.md:1: front matter opened with '---' is never closed"


# ---------------------------------------------------------------- a 50 MB note


def _big_note(target_bytes: int) -> str:
    """Realistic prose in headed sections (some long, some tiny), ~``target_bytes`` of UTF-8."""
    sentence = "The line technician checks the gearbox oil level every 400 operating hours and logs it. "
    out = ["# Maintenance log", ""]
    size, n = 0, 0
    while size < target_bytes:
        if n % 25 == 0:
            out += [f"## Section {n // 25}", ""]
        if n % 997 == 0:  # an unusually long paragraph (several passages' worth, no blank lines)
            out += [f"Marker para{n}: " + sentence * 3 for _ in range(60)]
        else:
            out.append(f"Marker para{n}: " + sentence * 4)
        out.append("")
        size += len(out[-2]) + 2
        n += 1
    return "\n".join(out) + "\n"


@pytest.mark.slow
def test_a_50_mb_note_indexes_obeys_passage_size_and_cites_exact_lines(tmp_path: Path, make_notes) -> None:
    notes = make_notes({"refunds.md": GOOD})
    big = notes / "big.md"
    big.write_text(_big_note(50_000_000), encoding="utf-8")
    assert big.stat().st_size >= 50_000_000
    lines = file_lines(big)

    with Workspace(notes, store_dir=tmp_path / "store", lanes=FAST) as ws:
        started = time.monotonic()
        report = ws.index()
        elapsed = time.monotonic() - started
        print(f"\n50 MB note indexed in {elapsed:.1f} s")
        assert report.problems == () and set(report.added) == {"big.md", "refunds.md"}

        passages = ws.records.passages_of("big.md")
        assert len(passages) > 20_000
        assert len({p.id for p in passages}) == len(passages)
        previous_end = 0
        for p in passages:
            assert p.line_start > previous_end
            previous_end = p.line_end
            assert p.line_end <= len(lines)
            assert len(p.text) <= DEFAULT_MAX_PASSAGE_CHARS, (p.id, len(p.text))
            # cheap spot check on every passage, exact check below on a sample
            assert p.text.startswith(lines[p.line_start - 1]) and p.text.endswith(lines[p.line_end - 1])
        for p in passages[:: max(1, len(passages) // 500)]:
            assert p.text == "\n".join(lines[p.line_start - 1 : p.line_end]), p.id

        for query in ("para4985 gearbox oil", "Marker para997", "kestrel refund window"):
            packet = ws.query(query, as_of=AS_OF, max_chars=8_000, refresh=False)
            assert packet.evidence, query
            assert packet.budget.used <= 8_000
            assert_cites_exact_lines(ws, packet)
        hit = ws.query("para4985", as_of=AS_OF, refresh=False).evidence[0]
        assert "para4985:" in hit.excerpt and hit.path == "big.md"


# ---------------------------------------------------------------- 10,000 headings


@pytest.mark.parametrize("same_heading", [True, False], ids=["10k-equal-headings", "10k-distinct-headings"])
def test_a_note_with_10000_headings_parses_fast_with_unique_ids_and_indexes(open_ws, same_heading: bool) -> None:
    sections = [f"## {'Step' if same_heading else f'Step {i}'}\n\nstep body zq{i} gearbox\n" for i in range(10_000)]
    text = "# Runbook\n\n" + "\n".join(sections)
    started = time.monotonic()
    note = parse_note("runbook.md", text)
    parse_seconds = time.monotonic() - started
    assert parse_seconds < 5.0, f"parsing 10,000 headings took {parse_seconds:.1f} s (quadratic id search?)"
    assert len(note.passages) == 10_000
    assert len({p.id for p in note.passages}) == 10_000
    if same_heading:
        assert [p.id for p in note.passages[:3]] == ["runbook#step", "runbook#step-2", "runbook#step-3"]
        assert note.passages[-1].id == "runbook#step-10000"

    ws = open_ws({"runbook.md": text})
    assert ws.index().problems == ()
    packet = ws.query("zq7777", as_of=AS_OF)
    (item,) = packet.evidence
    assert item.excerpt.endswith("step body zq7777 gearbox")
    assert_cites_exact_lines(ws, packet)


# ---------------------------------------------------------------- duplicate ids across notes


DUPLICATE_IDS = {
    "a/refunds.md": "---\nid: refunds\n---\n# Refunds A\n\nkestrel refunds take fourteen days.\n",
    "b/refunds.md": "---\nid: refunds\n---\n# Refunds B\n\nkestrel refunds need a receipt.\n",
}
DUPLICATE_WARNING = "b/refunds.md: id 'refunds' is already used by a/refunds.md; using 'b/refunds' as its id"


def test_duplicate_ids_are_reported_and_both_notes_stay_distinct_and_citable(open_ws) -> None:
    ws = open_ws(DUPLICATE_IDS)
    report = ws.index()
    assert report.problems == ()
    assert report.warnings == (DUPLICATE_WARNING,)

    packet = ws.query("kestrel refunds", as_of=AS_OF, top=10)
    by_path = {item.path: item for item in packet.evidence}
    assert set(by_path) == {"a/refunds.md", "b/refunds.md"}
    assert by_path["a/refunds.md"].module == "refunds"
    assert by_path["b/refunds.md"].module == "b/refunds"
    assert by_path["a/refunds.md"].id != by_path["b/refunds.md"].id
    assert "fourteen days" in by_path["a/refunds.md"].excerpt and "receipt" in by_path["b/refunds.md"].excerpt
    assert_cites_exact_lines(ws, packet)
    # each is reachable by its own identity
    assert [e.path for e in ws.query("refunds#refunds-a", as_of=AS_OF).evidence][:1] == ["a/refunds.md"]
    assert [e.path for e in ws.query("b/refunds", as_of=AS_OF).evidence][:1] == ["b/refunds.md"]


def test_duplicate_ids_are_reported_in_the_packet_whose_refresh_found_them(open_ws) -> None:
    ws = open_ws(DUPLICATE_IDS)  # not indexed: the query's refresh parses both notes
    packet = ws.query("kestrel refunds", as_of=AS_OF, top=10)
    assert DUPLICATE_WARNING in packet.warnings
    assert {item.path for item in packet.evidence} == {"a/refunds.md", "b/refunds.md"}


def test_duplicate_ids_stay_reported_in_later_packets(open_ws) -> None:
    ws = open_ws(DUPLICATE_IDS)
    ws.index()
    assert DUPLICATE_WARNING in ws.query("kestrel refunds", as_of=AS_OF).warnings


# ---------------------------------------------------------------- symlinks


@pytest.fixture
def linked_notes(tmp_path: Path, make_notes) -> Path:
    root = make_notes({"refunds.md": GOOD, "sub/real.md": "# Real\n\nkestrel alias target\n"})
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "creds.md").write_text("# Creds\n\nkestrel zephyrine password hunter2\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nkestrel zephyrine outside secret\n")
    os.symlink(tmp_path / "outside.md", root / "escape.md")
    os.symlink(secrets, root / "secrets")
    os.symlink(root / "sub" / "real.md", root / "alias.md")  # inside the root: followed
    os.symlink(tmp_path / "missing.md", root / "dangling.md")
    return root


def test_symlinks_out_of_the_root_are_not_followed_and_are_reported(linked_notes: Path, tmp_path: Path) -> None:
    scan = scan_notes(linked_notes)
    assert [p.relative_to(linked_notes).as_posix() for p in scan.paths] == ["alias.md", "refunds.md", "sub/real.md"]
    assert scan.skipped == (
        "dangling.md: symbolic link to a missing file; skipped",
        "escape.md: symbolic link to a file outside the notes folder; not followed",
        "secrets: symbolic link to a folder outside the notes folder; not followed",
    )
    with Workspace(linked_notes, store_dir=tmp_path / "store", lanes=FAST) as ws:
        report = ws.index()
        assert set(report.added) == {"alias.md", "refunds.md", "sub/real.md"}
        packet = ws.query("zephyrine", as_of=AS_OF)
        assert packet.evidence == () and packet.abstention_reason == "no_match"
        assert "zephyrine" not in packet.to_json().replace(packet.query, "", 1)


def test_skipped_symlinks_are_surfaced_by_index_and_in_the_packet(linked_notes: Path, tmp_path: Path) -> None:
    with Workspace(linked_notes, store_dir=tmp_path / "store", lanes=FAST) as ws:
        report = ws.index()
        assert any(w.startswith("escape.md: symbolic link") for w in report.warnings), report.warnings
        assert any(w.startswith("secrets: symbolic link") for w in report.warnings), report.warnings
        packet = ws.query("kestrel refund", as_of=AS_OF)
        assert any(w.startswith("escape.md: symbolic link") for w in packet.warnings), packet.warnings


def test_symlink_loops_are_reported_and_never_hang_discovery(tmp_path: Path, make_notes) -> None:
    root = make_notes({"refunds.md": GOOD, "deep/inner.md": "# Inner\n\nkestrel inner\n"})
    os.symlink("self.md", root / "self.md")
    os.symlink("pong.md", root / "ping.md")
    os.symlink("ping.md", root / "pong.md")
    os.symlink(".", root / "here")  # a folder loop inside the root
    os.symlink("..", root / "deep" / "up")  # back to the root from below
    os.symlink(tmp_path, root / "parent")  # the root's parent: outside, and it contains the root

    started = time.monotonic()
    scan = scan_notes(root)
    assert time.monotonic() - started < 5
    assert [p.relative_to(root).as_posix() for p in scan.paths] == ["deep/inner.md", "refunds.md"]
    assert scan.skipped == (
        "parent: symbolic link to a folder outside the notes folder; not followed",
        "ping.md: symbolic link loop; not followed",
        "pong.md: symbolic link loop; not followed",
        "self.md: symbolic link loop; not followed",
    )
    with Workspace(root, store_dir=tmp_path / "store", lanes=FAST) as ws:
        report = ws.index()
        assert set(report.added) == {"deep/inner.md", "refunds.md"} and report.problems == ()
        assert [e.path for e in ws.query("kestrel inner", as_of=AS_OF).evidence][:1] == ["deep/inner.md"]


# ---------------------------------------------------------------- unusual paths

UNUSUAL = [
    "with space.md",
    "ünïcødé 漢字.md",
    "hash#tag.md",
    "100% sure.md",
    "quote'\"s.md",
    "-leading-dash.md",
    "sub dir/nested #1.md",
    "q?a&b=c;d.md",
    "--.md",
]


def test_notes_with_unusual_path_characters_are_indexed_cited_and_linked(
    open_ws, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = open_ws({name: f"# Note {i}\n\nkestrel zq{i}marker\n" for i, name in enumerate(UNUSUAL)})
    report = ws.index()
    assert sorted(report.added) == sorted(UNUSUAL) and report.problems == ()
    monkeypatch.chdir(ws.notes_dir)  # citations link relative to the working directory
    for i, name in enumerate(UNUSUAL):
        packet = ws.query(f"zq{i}marker", as_of=AS_OF)
        (item,) = packet.evidence
        assert item.path == name
        assert item.module == name[: -len(".md")]
        assert_cites_exact_lines(ws, packet)
        (href,) = re.findall(r'<a class="rk-cite" href="([^"]*)"', to_html(packet))
        target = urllib.parse.unquote(html.unescape(href))
        assert target == name, (href, name)
        assert (ws.notes_dir / target).is_file()
        assert not href.startswith("-") or name.startswith("-")
        assert urllib.parse.urlsplit(href).scheme == "" and "#" not in href and "?" not in href
        # the module (path without suffix) is an identity of its own
        assert [e.path for e in ws.query(item.module, as_of=AS_OF).evidence][:1] == [name]


def test_cli_indexes_and_queries_a_notes_folder_with_a_leading_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    folder = tmp_path / "-notes dir"
    folder.mkdir()
    (folder / "refunds.md").write_text(GOOD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["index", "--store", "store", "--", "-notes dir"]) == EXIT_OK
    code = main(["query", "kestrel refund", "--notes=-notes dir", "--store", "store", "--as-of", AS_OF])
    out, err = capsys.readouterr()
    assert (code, err.strip()) == (EXIT_OK, "")
    assert '"path":"refunds.md"' in out


# ---------------------------------------------------------------- queries: empty, blank, enormous, not text


@pytest.fixture
def refunds_ws(open_ws) -> Workspace:
    ws = open_ws({"refunds.md": GOOD})
    ws.index()
    return ws


@pytest.mark.parametrize(
    "query", ["", " ", "\t\n  \r\n", "\u3000\u00a0"], ids=["empty", "space", "blank", "unicode-space"]
)
def test_empty_or_whitespace_query_is_an_empty_query_error(refunds_ws: Workspace, query: str) -> None:
    with pytest.raises(EmptyQueryError, match="the query is empty"):
        refunds_ws.query(query, as_of=AS_OF)


def test_a_100000_character_query_is_refused_before_any_work(refunds_ws: Workspace, monkeypatch) -> None:
    def no_refresh() -> None:
        raise AssertionError("a refused query must not refresh the index")

    monkeypatch.setattr(refunds_ws, "refresh", no_refresh)
    query = ("kestrel refund window " * 5_000)[:100_000]
    with pytest.raises(QueryTooLongError) as info:
        refunds_ws.query(query, as_of=AS_OF)
    assert "100,000 characters" in str(info.value) and "the limit is 4,000" in str(info.value)
    assert isinstance(info.value, InputError)
    # the limit counts the stripped query: padding does not make a short question too long
    assert refunds_ws.query(" " * 99_000 + "kestrel refund", as_of=AS_OF, refresh=False).evidence


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "the query is empty"), ("   ", "the query is empty"), ("x" * 100_000, "100,000 characters")],
    ids=["empty", "blank", "100k"],
)
def test_cli_bad_queries_exit_2_with_the_specific_message(
    refunds_ws: Workspace, capsys, text: str, message: str
) -> None:
    store = str(refunds_ws.store_dir)
    code = main(["query", text, "--notes", str(refunds_ws.notes_dir), "--store", store, "--format", "html"])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_BAD_INPUT, "")
    assert err.startswith("retrieval-kernel query: ") and message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("query", [12345, b"kestrel refund", ["kestrel"]], ids=["int", "bytes", "list"])
def test_a_query_that_is_not_text_is_an_input_error(refunds_ws: Workspace, query: object) -> None:
    with pytest.raises(InputError):
        refunds_ws.query(query, as_of=AS_OF)  # type: ignore[arg-type]


# ---------------------------------------------------------------- hostile HTML/JS renders inert everywhere

PAYLOADS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "[click me](javascript:alert(1))",
    "<a href='javascript:alert(1)'>j</a>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    "<math><mtext><style><img src=x onerror=alert(1)>",
)
HOSTILE_FILES = {
    # file names cannot hold '/', so these carry the parts of the payloads that matter
    "<img src=x onerror=alert(1)>.md": ("img-file", "Plain heading"),
    '"><svg onload=alert(1)>.md': ("svg-file", "Plain heading"),
    "javascript:alert(1).md": ("js-file", "Plain heading"),
    "<script>alert(1).md": ("script-file", "Plain heading"),
    "body.md": ("body", "Plain heading"),
    "heading.md": ("heading", " ".join(PAYLOADS)),
    "title.md": ("title", None),
}
# tags the renderers write themselves; anything else came from a note
RENDERER_TAGS = {"style", "div", "i", "b", "ul", "li", "code", "span", "pre", "a", "details", "summary", "br"}
MARKDOWN_TAGS = {"p", "strong", "em", "code", "pre", "ul", "li", "blockquote", "a", "br"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "srcdoc"}


_DISTINCT = {  # enough different words that no two hostile notes are near-duplicates of each other
    "img-file": "amber falcon harbour lantern meadow orchard quarry ribbon saddle thimble",
    "svg-file": "basalt cinder drizzle ember fjord glacier hollow inlet juniper kelp",
    "js-file": "cobalt dune estuary fern grotto heath isthmus jetty knoll lagoon",
    "script-file": "delta escarpment foothill gorge headland iceberg jungle karst levee mesa",
    "body": "elm fir ginkgo hazel ivy jasmine kapok larch maple nutmeg",
    "heading": "falconer gondolier herald innkeeper jester keeper lamplighter miller navigator ostler",
    "title": "garnet hematite iolite jasper kyanite lazurite malachite nephrite opal peridot",
}


def _hostile_note(kind: str, heading: str | None) -> str:
    payload = " ".join([*PAYLOADS, *[_DISTINCT[kind]] * 3])
    title = f"title: '{payload.replace(chr(39), chr(39) * 2)} zqhostile'\n" if kind == "title" else ""
    front = f"---\nid: hostile-{kind}\n{title}authority: authoritative\n---\n"
    intro = f"Intro zqhostile {kind} {payload}\n\n" if kind == "title" else ""
    body = f"zqhostile {kind} text {payload} and [a link](javascript:alert(1)) <javascript:alert(1)>\n"
    head = f"## {heading}\n\n" if heading is not None else ""
    return f"{front}{intro}{head}{body}"


class _Audit(HTMLParser):
    """Collects every start tag with its attributes, and the visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(markup: str, allowed: set[str], where: str) -> str:
    """No script, no on* handler, no script URL, only the renderer's own tags; return the visible text."""
    assert "<script" not in markup.lower(), where
    audit = _Audit()
    audit.feed(markup)
    audit.close()
    for tag, attrs in audit.tags:
        assert tag in allowed, (where, tag, attrs)
        for name, value in attrs:
            assert not name.lower().startswith("on"), (where, tag, name, value)
            if name.lower() in URL_ATTRIBUTES and value is not None:
                scheme = urllib.parse.urlsplit(html.unescape(value).strip()).scheme.lower()
                assert scheme in {"", "http", "https"}, (where, tag, name, value)
    return "".join(audit.text)


@pytest.fixture
def hostile_ws(tmp_path: Path, make_notes, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    files: dict[str, str | bytes] = {name: _hostile_note(kind, head) for name, (kind, head) in HOSTILE_FILES.items()}
    files["<img src=x onerror=alert(1)> broken.md"] = b"\xff\xfe not text"  # its name shows in a warning
    root = make_notes(files)
    monkeypatch.chdir(root)  # citation links are then bare relative paths: the most dangerous shape
    with Workspace(root, store_dir=tmp_path / "store", lanes=FAST) as ws:
        yield ws


def _hostile_packet(ws: Workspace) -> Packet:
    packet = ws.query("zqhostile <script>alert(1)</script>", as_of=AS_OF, top=20, audit=True)
    paths = {item.path for item in packet.evidence}
    assert paths == set(HOSTILE_FILES), paths
    assert any("<img src=x onerror=alert(1)> broken.md" in w for w in packet.warnings)
    return packet


def _assert_payloads_shown_as_text(text: str, where: str) -> None:
    for payload in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>'):
        assert payload in text, (where, payload)  # escaped, never dropped


def test_packet_html_renders_hostile_headings_bodies_titles_and_file_names_inert(hostile_ws: Workspace) -> None:
    packet = _hostile_packet(hostile_ws)
    for where, markup in (("to_html", to_html(packet)), ("_repr_html_", packet._repr_html_())):
        text = assert_inert(markup, RENDERER_TAGS, where)
        _assert_payloads_shown_as_text(text, where)
        for name in HOSTILE_FILES:
            assert name in text, (where, name)  # the citation names the hostile file, as text
    titled = next(item for item in packet.evidence if item.path == "title.md")
    assert titled.heading.startswith("<script>alert(1)</script>")  # the front matter title heads the intro


def test_explorer_panel_renders_hostile_note_text_inert(hostile_ws: Workspace) -> None:
    from retrieval_kernel.explorer import Explorer

    explorer = Explorer(workspace=hostile_ws, as_of=AS_OF, top=20, audit=True, scopes=['"><svg onload=alert(1)>'])
    explorer.query_box.value = "zqhostile <script>alert(1)</script>"
    assert explorer.error is None and explorer.packet is not None
    assert {item.path for item in explorer.packet.evidence} == set(HOSTILE_FILES)
    shown = ""
    for where in ("status", "results", "conflicts", "error_box"):
        shown += assert_inert(getattr(explorer, where).value, RENDERER_TAGS, f"explorer.{where}")
    _assert_payloads_shown_as_text(shown, "explorer")
    assert "<img src=x onerror=alert(1)> broken.md" in shown  # the warning, in the status view

    explorer.query_box.value = "<script>alert(1)</script>" * 1_000  # an error inside the panel is inert too
    assert explorer.error is not None
    assert_inert(explorer.error_box.value, RENDERER_TAGS, "explorer.error_box")


def test_cli_query_format_html_renders_hostile_note_text_inert(hostile_ws: Workspace, capsys) -> None:
    argv = ["query", "zqhostile <script>alert(1)</script>", "--notes", str(hostile_ws.notes_dir)]
    argv += [
        "--store",
        str(hostile_ws.store_dir),
        "--as-of",
        AS_OF,
        "--top",
        "20",
        "--audit",
        "--lanes",
        "identity,lexical",
    ]
    code = main([*argv, "--format", "html"])
    out, err = capsys.readouterr()
    assert (code, err) == (EXIT_OK, "")
    text = assert_inert(out, RENDERER_TAGS, "cli --format html")
    _assert_payloads_shown_as_text(text, "cli")
    for name in HOSTILE_FILES:
        assert name in text


def test_markdown_output_renders_to_inert_html(hostile_ws: Workspace) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    packet = _hostile_packet(hostile_ws)
    # raw HTML allowed and no sanitizer: only the renderer's escaping keeps it inert
    page = markdown_it.MarkdownIt("commonmark", {"html": True}).render(to_markdown(packet))
    text = assert_inert(page, MARKDOWN_TAGS, "markdown via markdown-it")
    _assert_payloads_shown_as_text(text, "markdown")


def test_grounding_report_html_is_inert_for_hostile_claims(hostile_ws: Workspace) -> None:
    from retrieval_kernel.output.grounding import check_grounding

    packet = _hostile_packet(hostile_ws)
    report = check_grounding(packet, "\n".join(f"{payload} zqhostile [e1]" for payload in PAYLOADS))
    text = assert_inert(report._repr_html_(), {"div", "table", "tr", "th", "td", "b", "br"}, "grounding")
    _assert_payloads_shown_as_text(text, "grounding")
