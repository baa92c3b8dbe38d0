"""Do a packet's citations still say what was read? Re-read every cited range from the notes on disk.

Each evidence item carries the sha256 of the note bytes it was read from and the
cited lines. :func:`verify_packet` (``retrieval-kernel verify PACKET.json``) reads each
note again and reports, per citation:

- ``unchanged``: the note's bytes are the ones read (same sha256);
- ``lines_match``: the note changed, but the cited lines still read exactly as quoted;
- ``moved``: the quoted lines are now elsewhere in the note (``now_at``);
- ``changed``: the cited lines no longer say what was quoted;
- ``missing``: the note is gone, unreadable, or shorter than the cited range.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..corpus.notes import source_lines
from ..errors import InputError

UNCHANGED, LINES_MATCH, MOVED, CHANGED, MISSING = "unchanged", "lines_match", "moved", "changed", "missing"
STILL_MATCHING = frozenset({UNCHANGED, LINES_MATCH})


@dataclass(frozen=True)
class CitationCheck:
    """One citation re-read from disk."""

    ref: str
    id: str
    path: str
    line_start: int
    line_end: int
    status: str
    detail: str
    now_at: tuple[int, int] | None = None  # where the quoted lines are now, when they moved

    @property
    def matches(self) -> bool:
        return self.status in STILL_MATCHING


@dataclass(frozen=True)
class VerifyReport:
    """Every citation of a packet, re-read; ``all_match`` when each still says what was quoted."""

    notes_dir: str
    checks: tuple[CitationCheck, ...]

    @property
    def all_match(self) -> bool:
        return all(check.matches for check in self.checks)

    @property
    def changed(self) -> tuple[CitationCheck, ...]:
        return tuple(check for check in self.checks if not check.matches)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notes_dir": self.notes_dir,
            "all_match": self.all_match,
            "citations": [
                {**asdict(check), "now_at": list(check.now_at) if check.now_at else None, "matches": check.matches}
                for check in self.checks
            ],
        }

    def summary(self) -> str:
        still = sum(check.matches for check in self.checks)
        return f"{still} of {len(self.checks)} citations still match the notes in {self.notes_dir}"

    def __str__(self) -> str:
        lines = [self.summary()]
        for check in self.checks:
            mark = "ok " if check.matches else "NO "
            lines.append(
                f"  {mark}[{check.ref}] {check.path}:{check.line_start}-{check.line_end} {check.status}: {check.detail}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{'✓' if c.matches else '✗'}</td><td>{html.escape(c.ref)}</td>"
            f"<td><code>{html.escape(c.path)}:{c.line_start}-{c.line_end}</code></td>"
            f"<td>{html.escape(c.status)}</td><td>{html.escape(c.detail)}</td></tr>"
            for c in self.checks
        )
        return f"<div><b>{html.escape(self.summary())}</b><table>{rows}</table></div>"


def verify_packet(packet: Any, notes_dir: str | Path | None = None) -> VerifyReport:
    """Re-read every cited range of ``packet`` (a :class:`Packet`, its dict, or a path to its JSON) from
    ``notes_dir`` (default: the folder a :class:`Packet` was answered from)."""
    data, root = _packet_data(packet)
    folder = Path(notes_dir) if notes_dir is not None else root
    if folder is None:
        raise InputError("verify needs the notes folder the packet cites (notes_dir / --notes)")
    if not folder.is_dir():
        raise InputError(f"notes folder {folder} does not exist or is not a directory")
    items = data.get("evidence")
    if not isinstance(items, list):
        raise InputError("not an evidence packet: it has no 'evidence' list")
    return VerifyReport(str(folder), tuple(_check(folder, item) for item in items if isinstance(item, Mapping)))


def _packet_data(packet: Any) -> tuple[Mapping[str, Any], Path | None]:
    if hasattr(packet, "to_dict"):
        root = getattr(packet, "source_root", None)
        return packet.to_dict(), Path(root) if root else None
    if isinstance(packet, Mapping):
        return packet, None
    if isinstance(packet, str | Path):
        try:
            data = json.loads(Path(packet).read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read packet {packet}: {exc}") from None
        except ValueError as exc:
            raise InputError(f"packet {packet} is not JSON: {exc}") from None
        if not isinstance(data, Mapping):
            raise InputError(f"packet {packet} is not a JSON object")
        return data, None
    raise InputError(f"packet must be a Packet, its dict, or a path to its JSON, not {type(packet).__name__}")


def _check(folder: Path, item: Mapping[str, Any]) -> CitationCheck:
    try:
        ref, pid, rel = str(item["ref"]), str(item["id"]), str(item["path"])
        start, end, excerpt = int(item["line_start"]), int(item["line_end"]), str(item["excerpt"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"evidence item {item.get('ref', '?')} lacks a citation field: {exc}") from None

    def result(status: str, detail: str, now_at: tuple[int, int] | None = None) -> CitationCheck:
        return CitationCheck(ref, pid, rel, start, end, status, detail, now_at)

    path = (folder / rel).resolve()
    if not path.is_relative_to(folder.resolve()):
        return result(MISSING, "the cited path is outside the notes folder")
    try:
        raw = path.read_bytes()
        lines = source_lines(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return result(MISSING, f"cannot read the note: {exc}")
    read_as = str(item.get("source_sha256") or "")
    if read_as and hashlib.sha256(raw).hexdigest() == read_as:
        return result(UNCHANGED, "the note's bytes are the ones the packet read (same sha256)")
    quoted = excerpt.split("\n")
    if "\n".join(lines[start - 1 : end]) == excerpt:
        how = "the note changed since it was read;" if read_as else "no source_sha256 in the packet;"
        return result(LINES_MATCH, f"{how} the cited lines still read exactly as quoted")
    now = _find(lines, quoted)
    if now is not None:
        return result(MOVED, f"the quoted lines are now at {now[0]}-{now[1]}", now)
    if end > len(lines):
        return result(MISSING, f"the note has {len(lines)} lines; the citation ends at line {end}")
    return result(CHANGED, "the cited lines no longer read as quoted")


def _find(lines: list[str], quoted: list[str]) -> tuple[int, int] | None:
    """The first line range (1-based, inclusive) that reads exactly ``quoted``."""
    size = len(quoted)
    for index in range(len(lines) - size + 1):
        if lines[index : index + size] == quoted:
            return index + 1, index + size
    return None
