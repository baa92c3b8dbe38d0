"""Notes → passages: find Markdown notes, read front matter, split by heading.

Line numbers are 1-based and inclusive. A *line* is the text between line
terminators after universal-newline decoding (``\\r\\n`` and ``\\r`` count as
``\\n``), exactly as ``Path.read_text().split("\\n")`` sees it. Every passage's
``text`` is the join of its cited lines, so an excerpt can always be checked
against its source.
"""

from __future__ import annotations

import codecs
import datetime as dt
import errno
import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from ..errors import FrontMatterError, NoteDecodeError, NotesDirError
from .facts import NoteFacts, read_facts

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".ipynb"})  # a notebook's Markdown cells are its text
DEFAULT_MAX_PASSAGE_CHARS = 2400
BINARY_SNIFF_BYTES = 8192  # undecodable bytes with a NUL this early: a binary file (git's rule)
_WIDE_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    ("UTF-32", codecs.BOM_UTF32_LE),
    ("UTF-32", codecs.BOM_UTF32_BE),
    ("UTF-16", codecs.BOM_UTF16_LE),
    ("UTF-16", codecs.BOM_UTF16_BE),
)

HEADING_LINE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER_END = frozenset({"---", "..."})
# A PEP / RFC 822 style header block opening a note: ``Status: Final`` lines up to the first blank line.
_HEADER_LINE = re.compile(r"^(?P<key>[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*):[ \t]*(?P<value>.*?)\s*$")
_HEADER_KEYS = frozenset({"pep", "eip", "bip", "nep", "tip", "kep", "rfc", "title", "status", "created", "type"})
MIN_HEADER_LINES = 2


@dataclass(frozen=True)
class Passage:
    """One citable section (or part of one) of a note."""

    id: str
    path: str
    module: str
    heading: str
    heading_path: tuple[str, ...]
    line_start: int  # within the cell, for a notebook's passage
    line_end: int
    text: str
    sha256: str
    cell_id: str | None = None  # a notebook's passage: the Markdown cell's id (nbformat 4.5+) ...
    cell_index: int | None = None  # ... and its 0-based position among the notebook's cells


@dataclass(frozen=True)
class Note:
    """A parsed note: identity, metadata as written, and its passages."""

    path: str
    module: str
    title: str
    sha256: str
    metadata: Mapping[str, Any]
    observed_at: str | None
    passages: tuple[Passage, ...]
    warnings: tuple[str, ...] = field(default=())
    facts: NoteFacts = field(default_factory=NoteFacts)


@dataclass(frozen=True)
class _Cut:
    index: int  # 0-based line index of the heading
    level: int
    text: str


@dataclass(frozen=True)
class _Section:
    heading: str
    heading_path: tuple[str, ...]
    first: int  # 0-based index of the first line (the heading line, if any)
    stop: int  # 0-based index one past the last line


# ---------------------------------------------------------------- discovery


@dataclass(frozen=True)
class NoteScan:
    """What discovery found: the note files, and each entry it did not follow, with why."""

    paths: tuple[Path, ...]
    skipped: tuple[str, ...] = ()


def discover_notes(root: Path) -> list[Path]:
    """Return every note file under ``root``, sorted by relative path.

    Hidden files and folders (including the store ``.retrieval_kernel/``) are
    skipped, and so are symlinks that resolve outside the root, dangling links,
    link loops and links to folders; :func:`scan_notes` also says which and why.
    """
    return list(scan_notes(root).paths)


def scan_notes(root: Path) -> NoteScan:
    """Like :func:`discover_notes`, with a message for each link or folder it did not follow.

    The messages start with the entry's path relative to ``root`` (so an indexer can
    show them as warnings); a link inside the root to a folder, or to a non-note
    file, is skipped without a message (its notes are found at their real paths).
    """
    if not root.exists():
        raise NotesDirError(f"notes directory {root} does not exist")
    if not root.is_dir():
        raise NotesDirError(f"notes path {root} is not a directory")
    found: list[Path] = []
    skipped: list[str] = []
    _walk(root, root, root.resolve(), found, skipped)
    return NoteScan(tuple(sorted(found, key=lambda p: p.relative_to(root).as_posix())), tuple(skipped))


def _walk(root: Path, folder: Path, real_root: Path, found: list[Path], skipped: list[str]) -> None:
    try:
        with os.scandir(folder) as listing:  # the listing says what each entry is: no stat per file
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as exc:
        if folder == root:
            raise NotesDirError(f"notes directory {root} cannot be listed: {exc.strerror or exc}") from exc
        skipped.append(f"{folder.relative_to(root).as_posix()}/: folder cannot be listed ({exc.strerror or exc})")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = folder / entry.name
        is_note = path.suffix.lower() in NOTE_SUFFIXES
        if _entry_is(entry.is_symlink):
            problem = _link_problem(path, real_root, is_note)
            if problem is not None:
                skipped.append(f"{path.relative_to(root).as_posix()}: {problem}")
            elif is_note and path.is_file():
                found.append(path)
        elif _entry_is(entry.is_dir):
            _walk(root, path, real_root, found, skipped)
        elif is_note and _entry_is(entry.is_file):
            found.append(path)


def _entry_is(test: Callable[[], bool]) -> bool:
    """A directory entry's type test, false when it cannot be told (as ``Path.is_dir`` and friends answer)."""
    try:
        return test()
    except OSError:
        return False


def _link_problem(link: Path, real_root: Path, is_note: bool) -> str | None:
    """Why a symbolic link is not followed and worth saying so, or ``None`` (followed, or not a note)."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError for a loop, later ones OSError
        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            return "symbolic link loop; not followed"
        return "symbolic link to a missing file; skipped" if is_note else None
    if target.is_relative_to(real_root):
        return None
    if target.is_dir():
        return "symbolic link to a folder outside the notes folder; not followed"
    return "symbolic link to a file outside the notes folder; not followed" if is_note else None


# ---------------------------------------------------------------- reading


def read_note(
    root: Path, path: Path, max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS, module: str | None = None
) -> Note:
    """Read and parse one note file; raise a ``NoteError`` subclass if it cannot be."""
    return note_from_bytes(path.relative_to(root).as_posix(), path.read_bytes(), max_passage_chars, module)


def note_from_bytes(
    rel: str, raw: bytes, max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS, module: str | None = None
) -> Note:
    """Parse a note from the bytes already read from ``rel`` (so its hash is of exactly these bytes)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        encoding = next((name for name, bom in _WIDE_BOMS if raw.startswith(bom)), None)
        if encoding is not None:
            raise NoteDecodeError(rel, f"is {encoding} text, not UTF-8; re-save it as UTF-8") from exc
        if b"\x00" in raw[:BINARY_SNIFF_BYTES]:  # an image, archive or database saved under a note's name
            raise NoteDecodeError(rel, f"is a binary file, not a text note (not UTF-8 at byte {exc.start})") from exc
        raise NoteDecodeError(rel, f"not valid UTF-8 (byte {exc.start}); re-save it as UTF-8") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if PurePosixPath(rel).suffix.lower() == ".ipynb":
        from .notebooks import parse_notebook

        return parse_notebook(rel, text, sha256=digest, max_passage_chars=max_passage_chars, module=module)
    return parse_note(rel, text, sha256=digest, max_passage_chars=max_passage_chars, module=module)


def source_lines(text: str) -> list[str]:
    """Split decoded text into lines with universal-newline rules."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_note(
    rel_path: str,
    text: str,
    sha256: str | None = None,
    max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
    module: str | None = None,
) -> Note:
    """Parse a note's decoded text into a :class:`Note` with its passages.

    ``module`` overrides the identity the note declares (used when two notes
    declare the same ``id``).
    """
    lines = source_lines(text)
    metadata, body_start = front_matter(rel_path, lines)
    warnings: list[str] = []
    module = module or module_of(rel_path, metadata, warnings)
    cuts = heading_cuts(lines, body_start)
    title = title_of(rel_path, metadata, cuts)
    source = "header" if metadata and body_start == 0 else "front matter"
    facts, dated, fact_warnings = read_facts(rel_path, metadata, lines, body_start, source)
    warnings += fact_warnings
    observed_at = observed_of(rel_path, metadata, warnings) or dated
    sections = sections_of(lines, body_start, cuts, title)
    passages = passages_of(rel_path, module, lines, sections, max_passage_chars)
    return Note(
        path=rel_path,
        module=module,
        title=title,
        sha256=sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest(),
        metadata=metadata,
        observed_at=observed_at,
        passages=passages,
        warnings=tuple(warnings),
        facts=facts,
    )


# ---------------------------------------------------------------- front matter


def front_matter(rel_path: str, lines: list[str]) -> tuple[dict[str, Any], int]:
    """Return (metadata, index of the first body line): YAML front matter, else a header block
    (whose lines stay part of the body: they are the note's visible text)."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":
        return header_block(lines), 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONT_MATTER_END:
            return _load_yaml(rel_path, "\n".join(lines[1:index])), index + 1
    raise FrontMatterError(rel_path, "front matter opened with '---' is never closed", line=1)


def header_block(lines: list[str]) -> dict[str, Any]:
    """``Key: value`` lines opening a note up to its first blank line (PEP, EIP, RFC 822 headers),
    with indented continuation lines; ``{}`` unless at least two such lines include a known key."""
    found: dict[str, Any] = {}
    last: str | None = None
    for line in lines:
        if not line.strip():
            break
        match = _HEADER_LINE.match(line.lstrip("\ufeff"))
        if match:
            last = match["key"]
            found[last] = match["value"]
        elif last is not None and line[:1] in (" ", "\t"):
            found[last] = f"{found[last]} {line.strip()}".strip()
        else:
            return {}
    if len(found) < MIN_HEADER_LINES or not {key.lower() for key in found} & _HEADER_KEYS:
        return {}
    return found


# libyaml (PyYAML's C loader) reads front matter about 8x faster; it takes only blocks it is known to
# read as yaml.safe_load does: ASCII without tabs, tags, block scalars, anchors or directives (a
# differential fuzz found differences only there), nested less deeply than safe_load's recursion
# could notice. Whatever it cannot read goes to safe_load, which raises its own error.
_C_LOADER = getattr(yaml, "CSafeLoader", None)
_NOT_FOR_C_LOADER = re.compile(r"[^\x0a\x20-\x7e]|[!|>%@`&*?]")
_C_LOADER_MAX_DEPTH = 64  # lines plus flow brackets: a bound on how deeply a block nests


def _safe_load(block: str) -> Any:
    """``yaml.safe_load(block)``, through libyaml when the block is one it reads identically."""
    depth = block.count("\n") + block.count("[") + block.count("{")
    if _C_LOADER is not None and depth < _C_LOADER_MAX_DEPTH and not _NOT_FOR_C_LOADER.search(block):
        try:
            return yaml.load(block, Loader=_C_LOADER)  # the safe loader, in C
        except Exception:  # safe_load below raises its own error for it
            pass
    return yaml.safe_load(block)


def _load_yaml(rel_path: str, block: str) -> dict[str, Any]:
    try:
        data = _safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontMatterError(rel_path, f"front matter is not valid YAML: {problem}", line=line) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a date such as 2026-02-30
        raise FrontMatterError(rel_path, f"front matter has a value YAML cannot build: {exc}", line=2) from exc
    except RecursionError as exc:  # e.g. thousands of nested '[': PyYAML's parser recurses
        raise FrontMatterError(rel_path, "front matter is nested too deeply to read", line=2) from exc
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise FrontMatterError(rel_path, f"front matter must be a mapping of keys to values, got {kind}", line=2)
    budget = _ValueBudget()
    try:
        return {str(key): _json_safe(value, budget, 1) for key, value in data.items()}
    except _TooComplex as exc:
        raise FrontMatterError(rel_path, f"front matter {exc}", line=2) from None


MAX_FRONT_MATTER_DEPTH = 32
MAX_FRONT_MATTER_VALUES = 10_000


class _TooComplex(Exception):
    """Front matter that refers to itself, nests too deeply or expands (through aliases) too far."""


@dataclass
class _ValueBudget:
    left: int = MAX_FRONT_MATTER_VALUES


def _json_safe(value: Any, budget: _ValueBudget, depth: int) -> Any:
    """Plain JSON data from YAML's: dates as ISO text, non-finite floats as text, bounded in size.

    YAML aliases can make a value contain itself, or expand a few lines into billions
    of values; both are refused instead of recursing or copying without end.
    """
    budget.left -= 1
    if budget.left < 0:
        raise _TooComplex(f"expands to more than {MAX_FRONT_MATTER_VALUES:,} values (through YAML aliases?)")
    if depth > MAX_FRONT_MATTER_DEPTH:
        raise _TooComplex(f"nests deeper than {MAX_FRONT_MATTER_DEPTH} levels (or a YAML alias refers to itself)")
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, budget, depth + 1) for v in value]
    if isinstance(value, set):  # a YAML !!set: sorted, so the same note always gives the same metadata
        return sorted((_json_safe(v, budget, depth + 1) for v in value), key=repr)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or Infinity: keep YAML's .nan / .inf as the text 'nan' / 'inf'
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def module_of(rel_path: str, metadata: Mapping[str, Any], warnings: list[str]) -> str:
    declared = metadata.get("id")
    if isinstance(declared, (str, int)) and str(declared).strip():
        return str(declared).strip()
    if declared is not None:
        warnings.append(f"{rel_path}: front matter id {declared!r} is not a usable name; using the path")
    return default_module(rel_path)


@lru_cache(maxsize=65_536)  # asked of every note each time the change log moves (the name index)
def default_module(rel_path: str) -> str:
    """A note's identity when it declares none: its path without the suffix."""
    return str(PurePosixPath(rel_path).with_suffix(""))


def title_of(rel_path: str, metadata: Mapping[str, Any], cuts: list[_Cut]) -> str:
    """Front matter ``title`` (any case), else the first ``#`` heading, else the file name."""
    title = next((value for key, value in metadata.items() if key.lower() == "title"), None)
    if isinstance(title, str) and title.strip():
        return title.strip()
    return next((cut.text for cut in cuts if cut.level == 1 and cut.text), PurePosixPath(rel_path).stem)


def observed_of(rel_path: str, metadata: Mapping[str, Any], warnings: list[str]) -> str | None:
    value = metadata.get("observed")
    if value is None:
        return None
    try:
        return parse_when(str(value)).isoformat()
    except ValueError:
        warnings.append(f"{rel_path}: observed {value!r} is not an ISO date; it is ignored")
        return None


@lru_cache(maxsize=65_536)  # the same few dates are read query after query (dates and datetimes are immutable)
def parse_when(text: str) -> dt.date | dt.datetime:
    """Parse an ISO date or datetime (``Z`` allowed); raise ``ValueError`` otherwise."""
    text = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return dt.date.fromisoformat(text)
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---------------------------------------------------------------- sections


def heading_cuts(lines: list[str], body_start: int) -> list[_Cut]:
    """Every ATX heading of the body that is not inside fenced code."""
    cuts: list[_Cut] = []
    fence: str | None = None
    for index in range(body_start, len(lines)):
        line = lines[index]
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        heading = HEADING_LINE.match(line) if fence is None else None
        if heading:
            cuts.append(_Cut(index, len(heading.group(1)), (heading.group(2) or "").strip()))
    return cuts


def sections_of(
    lines: list[str], body_start: int, cuts: list[_Cut], title: str, outer: Sequence[_Cut] = ()
) -> list[_Section]:
    """Cut the body into sections at the headings; text before the first one is the intro.

    ``outer`` are the headings in force where these lines start (a notebook cell under an
    earlier cell's heading): the intro is under the innermost, and later headings nest in them.
    """
    sections: list[_Section] = []
    first_cut = cuts[0].index if cuts else len(lines)
    if first_cut > body_start:
        intro = (outer[-1].text, tuple(c.text for c in outer)) if outer else (title, (title,))
        sections.append(_Section(intro[0], intro[1], body_start, first_cut))
    stack: list[_Cut] = list(outer)
    for position, cut in enumerate(cuts):
        stop = cuts[position + 1].index if position + 1 < len(cuts) else len(lines)
        while stack and stack[-1].level >= cut.level:
            stack.pop()
        stack.append(cut)
        sections.append(_Section(cut.text, tuple(c.text for c in stack), cut.index, stop))
    return sections


@dataclass
class PassageIds:
    """Passage ids already given in one note (a notebook's cells share them)."""

    used: set[str] = field(default_factory=set)
    next_suffix: dict[str, int] = field(default_factory=dict)


def passages_of(
    rel_path: str,
    module: str,
    lines: list[str],
    sections: list[_Section],
    max_chars: int,
    ids: PassageIds | None = None,
    cell: tuple[str | None, int] | None = None,
) -> tuple[Passage, ...]:
    """The passages of ``sections``; ``cell`` (id, index) when ``lines`` are a notebook cell's."""
    passages: list[Passage] = []
    ids = ids or PassageIds()
    used_ids, next_suffix = ids.used, ids.next_suffix
    cell_id, cell_index = cell if cell is not None else (None, None)
    for section in sections:
        span = _trim_blank(lines, section.first, section.stop)
        if span is None or not _has_body(lines, section, span):
            continue
        base_id = _unique(f"{module}#{slugify(section.heading)}", used_ids, next_suffix)
        chunks = _chunks(lines, span[0], span[1], max_chars)
        for part, (start, stop) in enumerate(chunks, 1):
            text = "\n".join(lines[start:stop])
            passages.append(
                Passage(
                    id=base_id if part == 1 else f"{base_id}~{part}",
                    path=rel_path,
                    module=module,
                    heading=section.heading,
                    heading_path=section.heading_path,
                    line_start=start + 1,
                    line_end=stop,
                    text=text,
                    sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    cell_id=cell_id,
                    cell_index=cell_index,
                )
            )
    return tuple(passages)


def _trim_blank(lines: list[str], start: int, stop: int) -> tuple[int, int] | None:
    while start < stop and not lines[start].strip():
        start += 1
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    return (start, stop) if start < stop else None


def _has_body(lines: list[str], section: _Section, span: tuple[int, int]) -> bool:
    """A section that is only its heading line carries nothing to cite."""
    starts_with_heading = span[0] == section.first and HEADING_LINE.match(lines[span[0]]) is not None
    return span[1] - span[0] > (1 if starts_with_heading else 0)


def _chunks(lines: list[str], start: int, stop: int, max_chars: int) -> list[tuple[int, int]]:
    """Split ``lines[start:stop]`` into ranges of at most ``max_chars``.

    Cuts fall on blank lines between paragraphs when possible, else between
    lines; a single line longer than ``max_chars`` stays whole (never cut
    mid-line), and a heading is never left alone without a line of content.
    """
    if _size(lines, start, stop) <= max_chars:
        return [(start, stop)]
    cuts = [start]

    def fits(end: int) -> bool:
        return _size(lines, cuts[-1], end) <= max_chars

    def can_cut(at: int) -> bool:
        return at > cuts[-1] and _has_content(lines, cuts[-1], at)

    for block_start, block_stop in _paragraphs(lines, start, stop):
        if fits(block_stop):
            continue
        if can_cut(block_start):
            cuts.append(block_start)
            if fits(block_stop):
                continue
        for line in range(block_start, block_stop):  # still too big: cut between its lines
            if not fits(line + 1) and can_cut(line):
                cuts.append(line)
    ranges = zip(cuts, [*cuts[1:], stop], strict=True)
    return [chunk for chunk in (_trim_blank(lines, a, b) for a, b in ranges) if chunk is not None]


def _paragraphs(lines: list[str], start: int, stop: int) -> Iterator[tuple[int, int]]:
    """Yield paragraph ranges, each with the blank lines that follow it."""
    index = start
    while index < stop:
        end = index + 1
        while end < stop and lines[end].strip():
            end += 1
        while end < stop and not lines[end].strip():
            end += 1
        yield index, end
        index = end


def _has_content(lines: list[str], start: int, stop: int) -> bool:
    """Whether a range holds a line that is neither blank nor a heading."""
    return any(line.strip() and not HEADING_LINE.match(line) for line in lines[start:stop])


def _size(lines: list[str], start: int, stop: int) -> int:
    return sum(len(line) + 1 for line in lines[start:stop]) - 1 if stop > start else 0


def slugify(text: str) -> str:
    """Lower-case, hyphen-separated form of a heading for passage ids."""
    slug = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    return slug or "section"


def _unique(candidate: str, used: set[str], next_suffix: dict[str, int]) -> str:
    """``candidate``, else ``candidate-2``, ``-3``... the first one not used yet.

    ``next_suffix`` remembers where each candidate's search stopped (every lower
    suffix is taken already), so 10,000 equal headings stay linear.
    """
    name = candidate
    if name in used:
        counter = next_suffix.get(candidate, 2)
        while (name := f"{candidate}-{counter}") in used:
            counter += 1
        next_suffix[candidate] = counter + 1
    used.add(name)
    return name
