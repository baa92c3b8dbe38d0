"""Fuzzing (issue 5): the Markdown/front-matter parser and the packet serializer.

Deterministic (``derandomize=True``, no example database) and bounded (4,400
generated cases in all). Beyond the property tests in ``test_notes.py``
(well-formed documents) and ``test_assembly.py`` (workshop queries), these throw
hostile input at the same invariants:

* the parser: random front matter (mappings of any YAML type, non-mappings,
  broken YAML, aliases, tags, unclosed blocks), headings, fences, CRLF/CR/mixed
  newlines, BOMs, Unicode line separators, control characters and long lines,
  as text and as raw bytes. Only ``NoteError`` subclasses may be raised; every
  passage's text equals its cited lines of the source (split independently, by
  Python's universal-newline reader) and every range is inside the file.
* assembly and serialization: generated passages, conflicts and exclusions under
  byte and character budgets from tiny to 1,000,000: every packet's canonical
  JSON is within its cap, ``budget.used`` is its exact size, every excerpt equals
  its cited lines, and what was left out is counted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel.corpus.facts import NoteFacts
from retrieval_kernel.corpus.notes import HEADING_LINE, Note, Passage, parse_note, read_note
from retrieval_kernel.errors import BudgetTooSmallError, FrontMatterError, NoteDecodeError
from retrieval_kernel.output.packet import Budget, LaneHit, LaneReport, Packet, serialize
from retrieval_kernel.pipeline.assembly import assemble
from retrieval_kernel.pipeline.candidates import Admission, Candidate, ConflictDraft, Exclusion, Selection, Side
from retrieval_kernel.store.records import StoredPassage

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


# ---------------------------------------------------------------- the oracle


def reference_lines(text: str) -> list[str]:
    """Lines as Python's universal-newline reader sees the file (independent of ``notes.source_lines``)."""
    decoded = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8", newline=None).read()
    lines = decoded.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def check_note(note: Note, lines: list[str], rel: str, max_chars: int) -> None:
    """Every invariant a parsed note promises, against the independently split source."""
    assert note.path == rel
    json.dumps(dict(note.metadata), allow_nan=False)  # metadata is plain JSON (no NaN, no Infinity, no dates)
    ids = [p.id for p in note.passages]
    assert len(ids) == len(set(ids)), ids
    previous_end = 0
    for p in note.passages:
        assert 1 <= p.line_start <= p.line_end <= len(lines), (p.id, p.line_start, p.line_end, len(lines))
        assert p.text == "\n".join(lines[p.line_start - 1 : p.line_end]), p.id
        assert p.line_start > previous_end, f"{p.id} overlaps or is out of order"
        previous_end = p.line_end
        assert p.text.split("\n")[0].strip() and p.text.split("\n")[-1].strip(), f"{p.id} starts or ends blank"
        content = [line for line in p.text.split("\n") if line.strip() and not HEADING_LINE.match(line)]
        assert len(p.text) <= max_chars or len(content) <= 1, f"{p.id}: {len(p.text)} chars in several lines"
        assert p.sha256 == hashlib.sha256(p.text.encode("utf-8")).hexdigest()
        assert (p.path, p.module) == (rel, note.module)
        assert p.heading_path and p.heading_path[-1] == p.heading


# ---------------------------------------------------------------- strategies: text

_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\r\n")
_ODD = st.sampled_from(
    [
        "\x00",
        "\x0b",
        "\x0c",
        "\x1c",
        "\x85",
        "\u2028",
        "\u2029",
        "\ufeff",
        "\u200b",
        "\t",
        "\u00a0",
        "\u3000",
        "é",
        "漢字",
        "🙂",
        "\U0001f469\u200d\U0001f4bb",
        '"',
        "\\",
        "<script>alert(1)</script>",
        "`",
        "~",
        "#",
        "---",
        "...",
        ":",
        "&anchor",
        "*alias",
        "!!tag",
    ]
)
_word = st.one_of(st.text(_CHARS, min_size=1, max_size=8), _ODD)
_line = st.lists(_word, min_size=0, max_size=6).map(" ".join)
_long_line = st.builds(lambda unit, n: (unit * n)[:n], st.text(_CHARS, min_size=1, max_size=7), st.integers(200, 6000))

_heading = st.builds(
    lambda indent, level, text, closing: [" " * indent + "#" * level + (f" {text}" if text else "") + closing],
    st.integers(0, 4),
    st.integers(1, 7),
    _line,
    st.sampled_from(["", " #", " ###", "#", " \\#"]),
)
_paragraph = st.lists(st.one_of(_line, _line, _long_line), min_size=1, max_size=5)
_blank = st.lists(st.sampled_from(["", " ", "\t", "   ", "\u3000", "\x0c"]), min_size=1, max_size=3)
_fence = st.builds(
    lambda opener, info, body, closer: [opener + info, *body, *([closer] if closer is not None else [])],
    st.sampled_from(["```", "~~~", "````", "   ```", "    ```"]),
    st.sampled_from(["", "python", " yaml", "``"]),
    st.lists(st.one_of(_line, st.sampled_from(["# not a heading", "---", "```", "~~~~", "````"])), max_size=5),
    st.one_of(st.none(), st.sampled_from(["```", "~~~", "````", "``", "```` ", "~~~~~"])),
)
_tricky = st.sampled_from(
    [["---"], ["..."], ["#hashtag"], ["#"], ["## "], ["#\t#"], ["\ufeff# bom"], ["####### seven"], ["    # code"]]
)
_block = st.one_of(_heading, _paragraph, _blank, _fence, _tricky)

# ---------------------------------------------------------------- strategies: front matter

_KEYS = st.one_of(
    st.sampled_from(
        [
            "id",
            "title",
            "observed",
            "fresh_for",
            "status",
            "authority",
            "scope",
            "supersedes",
            "superseded_by",
            "valid_from",
            "valid_to",
            "valid_until",
            "asserts",
            "aliases",
            "revision",
            "kind",
            "date",
        ]
    ),
    st.text(_CHARS, min_size=1, max_size=10),
)
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(_CHARS, max_size=30),
    _ODD,
    st.dates(min_value=dt.date(1, 1, 1)),
    st.datetimes(timezones=st.one_of(st.none(), st.just(dt.UTC))),
)
_value = st.recursive(
    _scalar,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=4)),
    max_leaves=6,
)


def _dump(data: Any) -> list[str]:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=60).rstrip("\n").split("\n")


_mapping_block = st.dictionaries(_KEYS, _value, max_size=8).map(_dump)
_not_mapping_block = st.one_of(st.lists(_value, min_size=1, max_size=4), _scalar.filter(lambda v: v is not None)).map(
    _dump
)
_yaml_noise = st.text(st.sampled_from(list(":-[]{}&*!|>'\"#%@`?, \tab1\\")), max_size=40)
_broken_block = st.lists(_yaml_noise, min_size=1, max_size=5)
_special_block = st.sampled_from(
    [
        ["a: &a [*a]"],
        ["a: &x 1", "b: *x", "c: *missing"],
        ["x: " + "[" * 300 + "]" * 300],
        ["x: " + "[" * 600],
        ["x: " + "{a: " * 1500],
        ["!!python/object/apply:os.system ['true']"],
        ["x: !!binary zz"],
        ["x: !!timestamp 2026-13-45"],
        ["observed: 2026-02-30"],
        ["x: !!float abc"],
        ["<<: 5"],
        ["? [a, b]", ": c"],
        ["a: 1", "a: 2"],
        ["title: |", "  multi", "  line"],
        ["id: [not, a, name]", "title: {a: 1}"],
        ["asserts: {days: .nan, limit: .inf}", "fresh_for: -.inf"],
        ["scope: !!set {b, a}"],
        ["\ttabbed: 1"],
        ["%YAML 1.1", "---", "a: 1"],
        ["a: 1", "...", "b: 2"],
        [
            f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" if i else "b0: &b0 [x, x, x, x, x, x, x, x, x]"
            for i in range(9)
        ],
    ]
)
_front = st.one_of(
    st.none(),
    _mapping_block,
    _mapping_block,
    _not_mapping_block,
    _broken_block,
    _special_block,
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A note: optional front matter (any of the kinds above, possibly unclosed), then body blocks."""
    front = draw(_front)
    lines: list[str] = []
    if front is not None:
        closer = draw(st.sampled_from(["---", "---", "...", "--- ", None]))
        lines = ["---", *front, *([closer] if closer is not None else [])]
    for block in draw(st.lists(_block, max_size=8)):
        lines += block
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r", "mixed"]))
    if newline == "mixed":
        ends = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=len(lines), max_size=len(lines)))
        text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    else:
        text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    return text


# ---------------------------------------------------------------- the parser


@settings(FUZZ, max_examples=1800)
@given(text=documents(), max_chars=st.one_of(st.integers(20, 400), st.integers(400, 5000)))
def test_fuzz_parse_note_only_raises_note_errors_and_cites_exact_lines(text: str, max_chars: int) -> None:
    try:
        note = parse_note("fuzz/note.md", text, max_passage_chars=max_chars)
    except FrontMatterError as exc:
        assert exc.path == "fuzz/note.md" and str(exc).startswith("fuzz/note.md")
        assert exc.line is None or exc.line >= 1
        assert reference_lines(text)[0].lstrip("\ufeff").rstrip() == "---"  # only a note that opens front matter
        return
    check_note(note, reference_lines(text), "fuzz/note.md", max_chars)


_FRONT_ONLY = st.builds(
    lambda front, body: "\n".join(["---", *front, "---", *body]) + "\n",
    st.one_of(_mapping_block, _not_mapping_block, _broken_block, _special_block),
    st.lists(st.sampled_from(["# Title", "", "Body line.", "## Part", "more text"]), max_size=6),
)


@settings(FUZZ, max_examples=1500)
@given(text=_FRONT_ONLY)
def test_fuzz_front_matter_of_any_shape_is_metadata_or_a_front_matter_error(text: str) -> None:
    lines = reference_lines(text)
    closing = next(n for n, line in enumerate(lines[1:], 2) if line.rstrip() in {"---", "..."})
    try:
        note = parse_note("fm.md", text, max_passage_chars=200)
    except FrontMatterError as exc:
        assert exc.path == "fm.md"
        assert exc.line is not None and 1 <= exc.line <= closing, (exc.line, closing)
        assert exc.detail.startswith("front matter"), exc.detail
        return
    check_note(note, lines, "fm.md", 200)
    assert all(key == str(key) for key in note.metadata)
    assert all(p.line_start > closing for p in note.passages), "a passage cites front matter"


@pytest.fixture(scope="module")
def bytes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz_bytes")


_raw = st.one_of(
    st.binary(max_size=400),
    documents().map(lambda text: text.encode("utf-8")),
    st.builds(
        lambda text, at, junk: (lambda raw: raw[: at % (len(raw) + 1)] + junk + raw[at % (len(raw) + 1) :])(
            text.encode("utf-8")
        ),
        documents(),
        st.integers(0, 10_000),
        st.binary(min_size=1, max_size=8),
    ),
    documents().map(lambda text: text.encode("utf-16")),
)


@settings(FUZZ, max_examples=600)
@given(raw=_raw, max_chars=st.integers(20, 3000))
def test_fuzz_read_note_on_raw_bytes(raw: bytes, max_chars: int, bytes_dir: Path) -> None:
    path = bytes_dir / "raw.md"
    path.write_bytes(raw)
    try:
        note = read_note(bytes_dir, path, max_passage_chars=max_chars)
    except NoteDecodeError as exc:
        assert exc.path == "raw.md" and str(exc).startswith("raw.md: ")
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
        return
    except FrontMatterError as exc:
        assert exc.path == "raw.md"
        return
    assert note.sha256 == hashlib.sha256(raw).hexdigest()
    lines = path.read_text(encoding="utf-8").split("\n")  # Path.read_text: universal newlines, as documented
    check_note(note, lines[:-1] if lines[-1] == "" else lines, "raw.md", max_chars)


# ---------------------------------------------------------------- assembly and serialization

AS_OF = dt.date(2026, 10, 15)
_packet_text = st.one_of(st.text(_CHARS, max_size=60), _ODD)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[dict[str, list[str]], list[Passage]]:
    """1-4 generated notes with their reference lines and parsed passages."""
    sources: dict[str, list[str]] = {}
    passages: list[Passage] = []
    max_chars = draw(st.sampled_from([60, 400, 2400, 6000]))
    for number in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(["a.md", "dir/ü b.md", 'q"uote\\.md', "<img onerror=x>.md", "漢/字.md"]))
        rel = f"{number}-{name}"
        blocks = draw(st.lists(st.one_of(_heading, _paragraph, _paragraph, _fence), min_size=1, max_size=8))
        text = "\n".join(line for block in blocks for line in block) + "\n"
        try:
            note = parse_note(rel, text, max_passage_chars=max_chars)
        except FrontMatterError:
            continue
        sources[rel] = reference_lines(text)
        passages += note.passages
    return sources, passages


def _stored(passage: Passage, draw: st.DrawFn) -> StoredPassage:
    asserts = draw(st.dictionaries(st.text(_CHARS, min_size=1, max_size=8), _packet_text, max_size=2))
    facts = NoteFacts(
        authority=draw(st.sampled_from([None, "authoritative", "reference", "<b>x</b>"])),
        scope=tuple(draw(st.lists(_packet_text, max_size=2))),
        asserts=asserts,
    )
    observed = draw(st.sampled_from([None, "2026-10-01", "2026-10-01T23:30:00+00:00", "2027-01-01"]))
    metadata = {"fresh_for": draw(st.sampled_from(["7d", "30d", "2w"]))}
    return StoredPassage(passage, observed, "2026-10-15T08:00:00Z", metadata, 1, facts)


@st.composite
def selections(draw: st.DrawFn) -> tuple[dict[str, list[str]], Selection, int]:
    sources, passages = draw(corpora())
    chosen = draw(st.permutations(passages)) if passages else []
    chosen = chosen[: draw(st.integers(0, 12))]
    admissions = []
    for rank, passage in enumerate(chosen, 1):
        hits = (LaneHit(draw(st.sampled_from(["identity", "lexical", "dense"])), rank, draw(st.floats(-1e6, 1e6))),)
        candidate = Candidate(_stored(passage, draw), draw(st.floats(0, 1)), hits, tuple(draw(st.lists(_word))))
        role = draw(st.sampled_from(["current", "current", "explanation", "counter", "historical"]))
        admissions.append(
            Admission(candidate, role, draw(_packet_text), tuple(draw(st.lists(_packet_text, max_size=2))))
        )
    history = tuple(a for a in admissions if a.role == "historical")
    admitted = tuple(a for a in admissions if a.role != "historical")
    left_out = draw(st.lists(st.sampled_from(admissions), max_size=25)) if admissions else []
    excluded = tuple(
        Exclusion(a.candidate, draw(st.sampled_from(["superseded", "expired", "duplicate"])), draw(_packet_text))
        for a in left_out
    )
    conflicts = []
    for number in range(draw(st.integers(0, 3)) if admissions else 0):
        sides = draw(st.lists(st.sampled_from(admissions), min_size=2, max_size=3))
        drafted = tuple(
            Side(a.candidate.id, a.candidate.path, draw(_packet_text), a.candidate.stored.facts.authority, None)
            for a in sides
        )
        kind = draw(st.sampled_from(["superseded", "authority", "unresolved"]))
        winners = (drafted[0].passage_id,) if kind != "unresolved" else ()
        losers = tuple(side.passage_id for side in drafted[1:]) if kind != "unresolved" else ()
        conflicts.append(
            ConflictDraft(f"prop{number}-{draw(_packet_text)}", drafted, kind, winners, losers, draw(st.booleans()))
        )
    counts = {"beyond_top": draw(st.integers(0, 10**6))}
    return sources, Selection(admitted, history, excluded, tuple(conflicts), counts), len(admissions)


def _shell(draw_query: str, warnings: list[str], budget: Budget) -> Packet:
    lanes = (
        LaneReport("identity", "ok", 3, None, 12, "exact identifiers"),
        LaneReport("lexical", "stale", 50, 7, 12_345, "BM25F", lag=3, reason=None),
        LaneReport("dense", "unavailable", 0, None, None, "cosine", reason="Chroma failed: <img onerror=x>"),
    )
    return Packet(
        query=draw_query,
        as_of=AS_OF.isoformat(),
        budget=budget,
        projection="consistent",
        lanes=lanes,
        evidence=(),
        abstained=True,
        abstention_reason="no_match",
        exclusions={"scope": 2},
        warnings=tuple(warnings),
        trace_id="0123456789abcdef",
        scopes=("team-a", "é"),
        intent="verify",
    )


_limits = st.one_of(
    st.integers(50, 999),  # below the accepted range: only assembly's own check applies
    st.integers(1_000, 4_000),
    st.integers(4_000, 40_000),
    st.sampled_from([200_000, 1_000_000]),
)


def measure(text: str, unit: str) -> int:
    return len(text.encode("utf-8")) if unit == "bytes" else len(text)


@settings(FUZZ, max_examples=500)
@given(
    generated=selections(),
    unit=st.sampled_from(["bytes", "chars"]),
    limit=_limits,
    query=_packet_text,
    warnings=st.lists(_packet_text, max_size=3),
)
def test_fuzz_assembled_packets_fit_their_cap_and_cite_exact_lines(
    generated: tuple[dict[str, list[str]], Selection, int], unit: str, limit: int, query: str, warnings: list[str]
) -> None:
    sources, selection, total = generated
    shell = _shell(query or "q", warnings, Budget(unit, limit))  # type: ignore[arg-type]
    try:
        packet = assemble(shell, selection, AS_OF)
    except BudgetTooSmallError as exc:
        assert exc.minimum > limit
        roomy = _shell(query or "q", warnings, Budget(unit, exc.minimum + 10))  # type: ignore[arg-type]
        assert assemble(roomy, selection, AS_OF).budget.used <= exc.minimum + 10  # the minimum it named suffices
        return

    text = packet.to_json()
    assert text == serialize(packet.to_dict())
    assert json.loads(text) == packet.to_dict()
    assert packet.budget.used == measure(text, unit), "budget.used is not the exact serialized size"
    assert packet.budget.used <= limit
    assert packet.size() == packet.budget.used

    order = [a.candidate.id for a in (*selection.admitted, *selection.history)]
    shown = [item.id for item in packet.evidence]
    assert shown == [pid for pid in order if pid in shown], "evidence out of the policy's order"
    assert len(shown) + packet.exclusions["budget"] == total
    assert packet.exclusions["beyond_top"] == selection.counts["beyond_top"]
    assert [item.ref for item in packet.evidence] == [f"e{n}" for n in range(1, len(shown) + 1)]
    full = {a.candidate.id: a.candidate.stored.passage for a in (*selection.admitted, *selection.history)}
    for item in packet.evidence:
        lines = sources[item.path]
        assert 1 <= item.line_start <= item.line_end <= len(lines)
        assert item.excerpt == "\n".join(lines[item.line_start - 1 : item.line_end]), item.ref
        passage = full[item.id]
        assert item.line_start == passage.line_start
        if item.truncated:
            assert item.line_end < passage.line_end and passage.text.startswith(item.excerpt)
            assert item.excerpt.split("\n")[-1].strip()
        else:
            assert (item.line_end, item.excerpt) == (passage.line_end, passage.text)
    refs = {item.id: item.ref for item in packet.evidence}
    for conflict in packet.conflicts:
        for side in conflict.evidence:
            assert side.ref == refs.get(side.id), (side, refs)
    listed = [(e.candidate.id, e.code) for e in selection.excluded]
    assert [(e.id, e.reason) for e in packet.excluded] == listed[: len(packet.excluded)]
    if packet.abstained:
        assert packet.abstention_reason is not None
    assert all(math.isfinite(item.score) for item in packet.evidence)
