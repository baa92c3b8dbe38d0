"""Notes → passages: front matter, identity, headings, splitting, discovery."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel.corpus.notes import discover_notes, parse_note, read_note
from retrieval_kernel.errors import FrontMatterError, NoteDecodeError, NoteError, NotesDirError

# ---------------------------------------------------------------- helpers


def file_lines(path: Path) -> list[str]:
    """Lines exactly as the module docstring defines them (universal newlines)."""
    return path.read_text(encoding="utf-8").split("\n")


HEADING = re.compile(r"^ {0,3}#{1,6}([ \t]|$)")


def cited(lines: list[str], line_start: int, line_end: int) -> str:
    return "\n".join(lines[line_start - 1 : line_end])


def content_lines(text: str) -> int:
    """Lines that are neither blank nor a Markdown heading."""
    return sum(1 for line in text.split("\n") if line.strip() and not HEADING.match(line))


def spans(note) -> list[tuple[str, int, int]]:
    return [(p.id, p.line_start, p.line_end) for p in note.passages]


# ---------------------------------------------------------------- front matter


def test_valid_front_matter_sets_metadata_module_title_and_body_start() -> None:
    text = (
        "---\nid: my-note\ntitle: My Note\nauthority: reference\ntags: [a, b]\n---\n\nBody line one.\nBody line two.\n"
    )
    note = parse_note("folder/file.md", text)
    assert note.module == "my-note"
    assert note.title == "My Note"
    assert note.metadata == {"id": "my-note", "title": "My Note", "authority": "reference", "tags": ["a", "b"]}
    assert spans(note) == [("my-note#my-note", 8, 9)]
    assert note.passages[0].text == "Body line one.\nBody line two."
    assert note.passages[0].heading == "My Note"
    assert note.warnings == ()


def test_front_matter_closed_with_dots_and_leading_bom() -> None:
    note = parse_note("a.md", "\ufeff---\ntitle: T\n...\nbody\n")
    assert note.title == "T"
    assert spans(note) == [("a#t", 4, 4)]


def test_malformed_yaml_raises_front_matter_error_with_file_line() -> None:
    text = "---\ntitle: ok\nfoo: bar: baz\n---\nbody\n"
    with pytest.raises(FrontMatterError) as info:
        parse_note("notes/bad.md", text)
    assert info.value.line == 3  # 1-based line in the file, not in the YAML block
    assert info.value.path == "notes/bad.md"
    assert str(info.value).startswith("notes/bad.md:3: ")
    assert "not valid YAML" in str(info.value)


def test_malformed_yaml_line_points_at_offending_line_deeper_in_block() -> None:
    text = "---\ntitle: ok\nlist:\n  - a\n - b\n---\nbody\n"
    with pytest.raises(FrontMatterError) as info:
        parse_note("bad.md", text)
    assert info.value.line == 5


@pytest.mark.parametrize("block", ["- a\n- b", "just a string", "42"])
def test_front_matter_that_is_not_a_mapping_is_an_error(block: str) -> None:
    with pytest.raises(FrontMatterError) as info:
        parse_note("a.md", f"---\n{block}\n---\nbody\n")
    assert "mapping" in info.value.detail
    assert info.value.line == 2


def test_unclosed_front_matter_is_an_error_at_line_one() -> None:
    with pytest.raises(FrontMatterError) as info:
        parse_note("a.md", "---\ntitle: never closed\n\n# Heading\n\nbody\n")
    assert info.value.line == 1
    assert "never closed" in str(info.value)


def test_empty_front_matter_is_an_empty_mapping() -> None:
    note = parse_note("a.md", "---\n---\nbody\n")
    assert note.metadata == {}
    assert spans(note) == [("a#a", 3, 3)]


def test_front_matter_errors_are_note_errors() -> None:
    assert issubclass(FrontMatterError, NoteError)
    assert issubclass(NoteDecodeError, NoteError)


def test_non_utf8_file_raises_note_decode_error(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "latin1.md"
    path.write_bytes("# Caf\u00e9\n\nna\u00efve text\n".encode("latin-1"))
    with pytest.raises(NoteDecodeError) as info:
        read_note(tmp_path, path)
    assert info.value.path == "sub/latin1.md"
    assert "UTF-8" in str(info.value)


def test_read_note_hashes_raw_bytes(tmp_path: Path) -> None:
    import hashlib

    raw = b"# T\r\n\r\nbody\r\n"
    (tmp_path / "a.md").write_bytes(raw)
    note = read_note(tmp_path, tmp_path / "a.md")
    assert note.sha256 == hashlib.sha256(raw).hexdigest()


# ---------------------------------------------------------------- identity and title


@pytest.mark.parametrize(
    ("rel", "text", "module"),
    [
        ("a/b/note.md", "body\n", "a/b/note"),
        ("x.markdown", "body\n", "x"),
        ("x.md", "---\nid: declared-id\n---\nbody\n", "declared-id"),
        ("x.md", "---\nid: '  spaced  '\n---\nbody\n", "spaced"),
        ("x.md", "---\nid: 42\n---\nbody\n", "42"),
    ],
)
def test_module_comes_from_id_else_path_without_suffix(rel: str, text: str, module: str) -> None:
    note = parse_note(rel, text)
    assert note.module == module
    assert all(p.module == module and p.id.startswith(module + "#") for p in note.passages)


@pytest.mark.parametrize("declared", ["[1, 2]", "''", "{k: v}"])
def test_unusable_id_falls_back_to_path_with_warning(declared: str) -> None:
    note = parse_note("dir/n.md", f"---\nid: {declared}\n---\nbody\n")
    assert note.module == "dir/n"
    assert any("not a usable name" in w for w in note.warnings)


def test_module_argument_overrides_declared_id() -> None:
    note = parse_note("n.md", "---\nid: declared\n---\nbody\n", module="override")
    assert note.module == "override"
    assert note.passages[0].id.startswith("override#")


def test_title_prefers_front_matter_then_first_h1_then_stem() -> None:
    assert parse_note("s.md", "---\ntitle: From FM\n---\n# From H1\n\nx\n").title == "From FM"
    assert parse_note("s.md", "## Level two\n\n# From H1 #\n\nx\n").title == "From H1"
    assert parse_note("dir/stem-name.md", "## Only level two\n\nx\n").title == "stem-name"


def test_title_ignores_h1_inside_fenced_code() -> None:
    text = "```\n# not a title\n```\n\n# Real Title\n\nbody\n"
    note = parse_note("n.md", text)
    assert note.title == "Real Title"


# ---------------------------------------------------------------- observed


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-10-01", "2026-10-01"),
        ("'2026-10-01'", "2026-10-01"),
        ("2026-10-01T12:30:00Z", "2026-10-01T12:30:00+00:00"),
        ("'2026-10-01T12:30:00+02:00'", "2026-10-01T12:30:00+02:00"),
        ("2026-10-01 10:00:00", "2026-10-01T10:00:00"),
    ],
)
def test_observed_parses_dates_and_datetimes(value: str, expected: str) -> None:
    note = parse_note("n.md", f"---\nobserved: {value}\n---\nbody\n")
    assert note.observed_at == expected
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["last tuesday", "'2026/10/01'", "01-10-2026", "[2026, 10, 1]"])
def test_invalid_observed_warns_and_is_none(value: str) -> None:
    note = parse_note("n.md", f"---\nobserved: {value}\n---\nbody\n")
    assert note.observed_at is None
    assert len(note.warnings) == 1
    assert "observed" in note.warnings[0]


def test_missing_observed_is_none_without_warning() -> None:
    note = parse_note("n.md", "---\ntitle: T\n---\nbody\n")
    assert note.observed_at is None
    assert note.warnings == ()


@pytest.mark.parametrize("value", ["2026-02-30", "2026-13-01"])
def test_impossible_calendar_date_is_a_note_problem_not_a_crash(value: str) -> None:
    """YAML resolves ``2026-02-30`` as a timestamp and fails to build it; that must surface as a
    NoteError (so the indexer reports it) or as an 'unknown source time' warning — never a bare
    ValueError that escapes ``sync_notes``."""
    text = f"---\nobserved: {value}\n---\nbody\n"
    try:
        note = parse_note("n.md", text)
    except NoteError:
        return
    assert note.observed_at is None
    assert note.warnings


# ---------------------------------------------------------------- headings and sections


def test_headings_inside_fenced_code_are_not_headings() -> None:
    text = (
        "# Title\n"  # 1
        "\n"  # 2
        "Intro line.\n"  # 3
        "\n"  # 4
        "```bash\n"  # 5
        "# a shell comment, not a heading\n"  # 6
        "## neither is this\n"  # 7
        "```\n"  # 8
        "~~~\n"  # 9
        "```\n"  # 10  (a backtick fence does not close a tilde fence)
        "# still code\n"  # 11
        "~~~\n"  # 12
        "\n"  # 13
        "## Real\n"  # 14
        "after\n"  # 15
    )
    note = parse_note("n.md", text)
    assert spans(note) == [("n#title", 1, 12), ("n#real", 14, 15)]
    assert [p.heading for p in note.passages] == ["Title", "Real"]


def test_heading_syntax_variants() -> None:
    text = "   ### Indented ok ###\nx\n    # four spaces is not a heading\n#hashtag is not a heading\n####### seven\n"
    note = parse_note("n.md", text)
    assert [(p.heading, p.line_start, p.line_end) for p in note.passages] == [("Indented ok", 1, 5)]


def test_heading_only_sections_produce_no_passage() -> None:
    text = "# Top\n## Empty one\n\n\n## Has body\ntext\n## Trailing empty\n\n"
    note = parse_note("n.md", text)
    assert [p.heading for p in note.passages] == ["Has body"]
    assert spans(note) == [("n#has-body", 5, 6)]


def test_preamble_before_first_heading_is_cited_under_the_title() -> None:
    note = parse_note("guide.md", "\n\nIntro text.\n\n## Section\nbody\n")
    first = note.passages[0]
    assert (first.heading, first.heading_path, first.line_start, first.line_end) == ("guide", ("guide",), 3, 3)


def test_heading_path_nests_by_level() -> None:
    text = (
        "# A\nx\n"  # 1-2
        "## B\nx\n"  # 3-4
        "### C\nx\n"  # 5-6
        "#### D\nx\n"  # 7-8
        "## E\nx\n"  # 9-10
        "#### F\nx\n"  # 11-12  (skips level 3)
        "### G\nx\n"  # 13-14  (pops F, stays under E)
        "# H\nx\n"  # 15-16
    )
    paths = {p.heading: p.heading_path for p in parse_note("n.md", text).passages}
    assert paths == {
        "A": ("A",),
        "B": ("A", "B"),
        "C": ("A", "B", "C"),
        "D": ("A", "B", "C", "D"),
        "E": ("A", "E"),
        "F": ("A", "E", "F"),
        "G": ("A", "E", "G"),
        "H": ("H",),
    }


def test_duplicate_headings_get_unique_ids() -> None:
    text = "## Setup\na\n## Setup\nb\n## Setup\nc\n## Setup 2\nd\n"
    ids = [p.id for p in parse_note("m.md", text).passages]
    assert ids[:3] == ["m#setup", "m#setup-2", "m#setup-3"]
    assert len(set(ids)) == 4


def test_heading_without_word_characters_gets_a_fallback_slug() -> None:
    ids = [p.id for p in parse_note("m.md", "## ???\na\n## !!!\nb\n").passages]
    assert ids == ["m#section", "m#section-2"]


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_files_parse_like_lf(newline: str, tmp_path: Path) -> None:
    lf = "---\ntitle: T\n---\n\n# Head\n\nfirst\nsecond\n\n## Sub\nthird\n"
    (tmp_path / "lf.md").write_bytes(lf.encode())
    (tmp_path / "other.md").write_bytes(lf.replace("\n", newline).encode())
    a = read_note(tmp_path, tmp_path / "lf.md")
    b = read_note(tmp_path, tmp_path / "other.md")
    assert [(p.heading, p.line_start, p.line_end, p.text) for p in a.passages] == [
        (p.heading, p.line_start, p.line_end, p.text) for p in b.passages
    ]
    assert all("\r" not in p.text for p in b.passages)
    lines = file_lines(tmp_path / "other.md")
    for p in b.passages:
        assert p.text == cited(lines, p.line_start, p.line_end)


# ---------------------------------------------------------------- splitting


def _paragraph(tag: str, n_lines: int, width: int = 40) -> list[str]:
    return [f"{tag} line {i} ".ljust(width, "x") for i in range(n_lines)]


def test_oversized_section_splits_at_paragraph_boundaries() -> None:
    paragraphs = [_paragraph(tag, 2) for tag in ("alpha", "beta", "gamma", "delta")]
    lines = ["## Big"]
    for para in paragraphs:
        lines += ["", *para]
    text = "\n".join(lines) + "\n"
    max_chars = 100  # one paragraph (2*40+1) fits; two do not
    note = parse_note("n.md", text, max_passage_chars=max_chars)
    ids = [p.id for p in note.passages]
    assert ids[0] == "n#big"
    assert ids[1:] == [f"n#big~{i}" for i in range(2, len(ids) + 1)]
    assert len(note.passages) >= 4
    src = text.split("\n")
    paragraph_starts = {i + 1 for i, line in enumerate(src) if line and (i == 0 or not src[i - 1])}
    paragraph_ends = {i + 1 for i, line in enumerate(src) if line and (i + 1 == len(src) or not src[i + 1])}
    for p in note.passages:
        assert len(p.text) <= max_chars
        assert p.line_start in paragraph_starts
        assert p.line_end in paragraph_ends
        assert p.heading == "Big"
    covered = [n for p in note.passages for n in range(p.line_start, p.line_end + 1)]
    assert {n for n, line in enumerate(src, 1) if line} <= set(covered)


def test_oversized_single_paragraph_splits_between_lines() -> None:
    para = _paragraph("word", 10, width=30)
    text = "\n".join(["Intro", *para]) + "\n"
    note = parse_note("n.md", text, max_passage_chars=70)
    src = text.split("\n")
    assert len(note.passages) > 1
    for p in note.passages:
        assert len(p.text) <= 70
        assert p.text == cited(src, p.line_start, p.line_end)
    assert [n for p in note.passages for n in range(p.line_start, p.line_end + 1)] == list(range(1, 12))


def test_single_line_longer_than_max_stays_whole() -> None:
    long_line = "long " * 300
    text = f"## H\n\n{long_line}\n\nshort after\n"
    note = parse_note("n.md", text, max_passage_chars=100)
    holding = [p for p in note.passages if long_line in p.text]
    assert len(holding) == 1
    # The long line is never cut; it keeps its heading, since a heading alone carries nothing to cite.
    assert holding[0].text == f"## H\n\n{long_line}"
    assert all(len(p.text) <= 100 or content_lines(p.text) == 1 for p in note.passages)


def test_split_never_yields_a_passage_that_is_only_the_heading_line() -> None:
    """A heading line alone carries nothing to cite (the same rule as heading-only sections)."""
    text = "## Calibration\n\n" + "calibration values drift " * 20 + "\n"
    note = parse_note("n.md", text, max_passage_chars=100)
    assert note.passages, "the body must still be cited"
    assert all(p.text.strip() != "## Calibration" for p in note.passages), spans(note)


# ---------------------------------------------------------------- property: passages cite their source exactly

_WORD_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\r\n")
_word = st.text(_WORD_CHARS, min_size=1, max_size=10)
_text_line = st.lists(_word, min_size=1, max_size=8).map(" ".join)
_LONG_TEXT = "lorem ipsum \u00e9t\u00e9 \u6f22\u5b57 "
_long_line = st.integers(min_value=120, max_value=1500).map(lambda n: (_LONG_TEXT * n)[:n])
_any_line = st.one_of(_text_line, _long_line)

_heading = st.builds(
    lambda indent, level, text, closing: " " * indent + "#" * level + (f" {text}" if text else "") + closing,
    st.integers(0, 3),
    st.integers(1, 6),
    st.one_of(st.just(""), _text_line),
    st.sampled_from(["", " #", " ###"]),
).map(lambda line: [line])
_paragraph_block = st.lists(_any_line, min_size=1, max_size=4)
_blank_block = st.lists(st.sampled_from(["", " ", "\t", "   "]), min_size=1, max_size=3)
_fence_block = st.builds(
    lambda marker, body, closed: [marker + "lang", *body, *([marker] if closed else [])],
    st.sampled_from(["```", "~~~", "````"]),
    st.lists(st.one_of(_text_line, st.sampled_from(["# not a heading", "## nope", "", "```", "~~~"])), max_size=4),
    st.booleans(),
)
_tricky_block = st.sampled_from(
    ["---", "...", "#hashtag", "####### seven", "    # indented code", "#", "## ", "#\t#", "\ufeff# bom"]
).map(lambda line: [line])
_block = st.one_of(_heading, _paragraph_block, _blank_block, _fence_block, _tricky_block)

_front_matter = st.one_of(
    st.none(),
    st.lists(
        st.sampled_from(["title: Generated note", "id: gen-note", "observed: 2026-10-01", "fresh_for: 30d", "x: 1"]),
        unique=True,
        max_size=4,
    ),
)


@st.composite
def markdown_documents(draw: st.DrawFn) -> tuple[str, int | None]:
    """(document text, 1-based line number of the closing front-matter fence or None)."""
    front = draw(_front_matter)
    lines: list[str] = []
    fm_end: int | None = None
    if front is not None:
        lines = ["---", *front, "---"]
        fm_end = len(lines)
    for block in draw(st.lists(_block, max_size=14)):
        lines += block
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    if draw(st.booleans()) and front is not None:
        text = "\ufeff" + text
    return text, fm_end


@pytest.fixture(scope="module")
def property_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notes_property")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=markdown_documents(), max_chars=st.integers(min_value=40, max_value=400))
def test_property_passages_cite_exact_source_lines(
    doc: tuple[str, int | None], max_chars: int, property_dir: Path
) -> None:
    text, fm_end = doc
    path = property_dir / "generated.md"
    path.write_bytes(text.encode("utf-8"))
    lines = file_lines(path)  # independent of the parser's own splitting
    try:
        note = read_note(property_dir, path, max_passage_chars=max_chars)
    except FrontMatterError:
        # Only possible when the body itself happens to open with '---' and no front matter was generated.
        assert fm_end is None and lines[0].lstrip("\ufeff").rstrip() == "---"
        return

    ids = [p.id for p in note.passages]
    assert len(ids) == len(set(ids)), ids
    previous_end = 0
    for p in note.passages:
        assert 1 <= p.line_start <= p.line_end <= len(lines), (p.id, p.line_start, p.line_end, len(lines))
        assert p.text == cited(lines, p.line_start, p.line_end), p.id
        assert p.line_start > previous_end, f"{p.id} overlaps or is out of order"
        previous_end = p.line_end
        assert lines[p.line_start - 1].strip(), f"{p.id} starts with a blank line"
        assert lines[p.line_end - 1].strip(), f"{p.id} ends with a blank line"
        assert len(p.text) <= max_chars or content_lines(p.text) <= 1, f"{p.id}: oversized, several lines"
        if fm_end is not None:
            assert p.line_start > fm_end, f"{p.id} cites front matter"
        assert p.path == "generated.md"


# ---------------------------------------------------------------- discovery


def test_discover_notes_suffixes_hidden_folders_and_order(make_notes) -> None:
    root = make_notes(
        {
            "b.md": "b",
            "A.MD": "a",
            "c.markdown": "c",
            "sub/deeper/d.md": "d",
            "e.txt": "not a note",
            "README": "no suffix",
            "mdfile": "no suffix",
            ".hidden.md": "hidden file",
            ".hidden/f.md": "hidden folder",
            ".retrieval_kernel/g.md": "store folder",
            "sub/.private/h.md": "nested hidden",
        }
    )
    found = [p.relative_to(root).as_posix() for p in discover_notes(root)]
    assert found == ["A.MD", "b.md", "c.markdown", "sub/deeper/d.md"]


def test_discover_notes_skips_symlinks_pointing_outside_the_root(make_notes, tmp_path: Path) -> None:
    root = make_notes({"inside.md": "in", "sub/target.md": "t"})
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    outside_dir = tmp_path / "outside_dir"
    outside_dir.mkdir()
    (outside_dir / "x.md").write_text("x\n")
    os.symlink(outside, root / "escape.md")
    os.symlink(root / "sub" / "target.md", root / "alias.md")
    os.symlink(outside_dir, root / "linked_dir")
    os.symlink(tmp_path / "missing.md", root / "dangling.md")
    found = [p.relative_to(root).as_posix() for p in discover_notes(root)]
    assert "escape.md" not in found
    assert not any(f.startswith("linked_dir") for f in found)
    assert "dangling.md" not in found
    assert found == ["alias.md", "inside.md", "sub/target.md"]


def test_discover_notes_rejects_missing_or_non_directory_root(tmp_path: Path) -> None:
    with pytest.raises(NotesDirError):
        discover_notes(tmp_path / "nope")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(NotesDirError):
        discover_notes(tmp_path / "file.md")


def test_passage_sha256_matches_text() -> None:
    import hashlib

    for p in parse_note("n.md", "# A\nx\n## B\ny \u00e9\n").passages:
        assert p.sha256 == hashlib.sha256(p.text.encode("utf-8")).hexdigest()
        assert re.fullmatch(r"[0-9a-f]{64}", p.sha256)


def test_workshop_notes_parse_into_intro_plus_three_sections(workshop_notes: Path) -> None:
    paths = discover_notes(workshop_notes)
    assert len(paths) == 7
    modules = set()
    for path in paths:
        note = read_note(workshop_notes, path)
        lines = file_lines(path)
        modules.add(note.module)
        assert note.module == "workshop-" + path.stem
        assert note.observed_at == "2026-10-01"
        assert note.metadata["authority"] == "reference"
        assert note.warnings == ()
        assert [len(p.heading_path) for p in note.passages] == [1, 2, 2, 2]
        assert note.passages[0].heading == note.title
        assert all(p.heading_path[0] == note.title for p in note.passages)
        for p in note.passages:
            assert p.text == cited(lines, p.line_start, p.line_end)
            assert lines[p.line_start - 1].startswith("#")
    assert len(modules) == 7
