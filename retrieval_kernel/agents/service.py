"""What the MCP tools do, without the protocol: one workspace, the server's scopes, one worker thread.

The workspace (SQLite, Whoosh, Chroma) is opened, used and closed on a single worker thread, so
calls from the event loop never share a connection across threads. Every method that names
notes sees only what the server's scopes allow; a call may narrow them, never widen them. A note
outside them is indistinguishable from one that does not exist: same errors, absent from lists.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..corpus.notebooks import is_notebook, markdown_cells
from ..errors import InputError, ScopeError, UnknownPassageError
from ..output.grounding import check_grounding
from ..output.instructions import EVIDENCE_NOTICE, instruction_cue
from ..output.packet import MAX_BUDGET, Packet
from ..output.selection_packet import SelectionPacket
from ..pipeline.candidates import ALL_SCOPES, visible
from ..pipeline.requests import DEFAULT_TOP, LANES, MAX_TOP, checked_lanes, checked_scopes
from ..pipeline.workspace import Workspace
from ..projections.chroma_client import ChromaSettings
from .paging import ContextPage, cursor_key, next_cursor, page_of, parse_cursor

T = TypeVar("T")
NOT_VISIBLE = "no passage with that id is visible to this server; ids come from a packet's evidence[].id"
NO_NOTE = "no note at that URI is visible to this server; list the resources for the notes it serves"


@dataclass(frozen=True)
class ServerConfig:
    """What the server was launched with: the notes, the store, the most a client may see."""

    notes_dir: Path
    store_dir: Path | None = None
    scopes: frozenset[str] = frozenset()
    as_of: dt.date | None = None
    lanes: tuple[str, ...] = LANES
    chroma: ChromaSettings | str | None = None
    refresh: str = "on-query"
    refresh_timeout: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # more Workspace keyword arguments (tests)


class EvidenceService:
    """The tools' behaviour over one workspace; every workspace call runs on the worker thread."""

    def __init__(self, config: ServerConfig) -> None:
        if not config.notes_dir.is_dir():
            raise InputError(f"notes directory {config.notes_dir} does not exist or is not a directory")
        self.config = config
        self.scopes = config.scopes
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="retrieval-kernel-mcp")
        self._workspace: Workspace | None = None

    # ------------------------------------------------------------ the worker thread

    def submit(self, work: Callable[[Workspace], T]) -> Future[T]:
        """Run ``work(workspace)`` on the worker thread (the workspace opens on first use)."""
        return self._executor.submit(lambda: work(self._opened()))

    async def run(self, work: Callable[[Workspace], T]) -> T:
        """Await ``work(workspace)`` without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(work))

    def start(self) -> Future[Any]:
        """Open the workspace now (in the background), so the first call is warm."""
        return self.submit(lambda workspace: workspace.lane_availability())

    def close(self) -> None:
        def shut() -> None:
            if self._workspace is not None:
                self._workspace.close()
                self._workspace = None

        self._executor.submit(shut).result()
        self._executor.shutdown(wait=True)

    def _opened(self) -> Workspace:
        if self._workspace is None:
            c = self.config
            self._workspace = Workspace(
                c.notes_dir,
                c.store_dir,
                lanes=c.lanes,
                chroma=c.chroma,
                refresh=c.refresh,
                refresh_timeout=c.refresh_timeout,
                **dict(c.options),
            )
        return self._workspace

    # ------------------------------------------------------------ scope and lanes

    def scopes_for(self, requested: Sequence[str] | None) -> frozenset[str]:
        """The server's scopes, or the narrower ones a call asks for; ``ScopeError`` for wider ones."""
        if requested is None:
            return self.scopes
        asked = checked_scopes(list(requested))
        if ALL_SCOPES in self.scopes:
            return asked
        wider = sorted(asked - self.scopes)
        if wider:
            served = ", ".join(sorted(self.scopes)) or "none: public notes only"
            raise ScopeError(
                f"scopes {', '.join(wider)} are not among this server's scopes ({served}); "
                "a call may narrow the server's scopes, never widen them"
            )
        return asked

    def lanes_for(self, requested: Sequence[str] | None) -> tuple[str, ...]:
        """The server's lanes, or the subset a call asks for; ``InputError`` for others."""
        if requested is None:
            return self.config.lanes
        lanes = checked_lanes(list(requested))
        missing = [lane for lane in lanes if lane not in self.config.lanes]
        if missing:
            raise InputError(
                f"lane {', '.join(missing)} is not served here; this server runs {', '.join(self.config.lanes)}"
            )
        return lanes

    # ------------------------------------------------------------ tools (run on the worker thread)

    def context(
        self,
        workspace: Workspace,
        question: str,
        max_chars: int = 20_000,
        intent: str = "orient",
        top: int = DEFAULT_TOP,
        lanes: Sequence[str] | None = None,
        as_of: str | None = None,
        cursor: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> ContextPage:
        """The packet for ``question`` (the first page), or the page a cursor names."""
        visible_to = self.scopes_for(scopes)
        chosen = self.lanes_for(lanes)
        clock = as_of or self.config.as_of
        key = cursor_key(question, intent, top, chosen, str(clock), visible_to)
        seen = parse_cursor(cursor, key) if cursor else ()

        def query(count: int, budget: int) -> Packet:
            return workspace.query(
                question,
                as_of=clock,
                max_chars=budget,
                top=count,
                lanes=chosen,
                scopes=sorted(visible_to),
                intent=intent,
            )

        if not seen:
            packet = query(top, max_chars)
            return ContextPage(packet, next_cursor(packet, (), packet, key))
        deep = query(min(len(seen) + top, MAX_TOP), MAX_BUDGET)
        page = page_of(deep, seen, top, max_chars)
        return ContextPage(page, next_cursor(page, seen, deep, key))

    def select(
        self,
        workspace: Workspace,
        question: str,
        when: Mapping[str, Any] | None = None,
        intent: str = "orient",
        lanes: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
        max_chars: int = 20_000,
        as_of: str | None = None,
    ) -> SelectionPacket:
        """The selection as a packet (as ``retrieval-kernel query --select``): same budget and clock as ``context``."""
        from ..applicability import select_packet

        return select_packet(
            workspace,
            question,
            conditions=when or None,
            intent=intent,
            lanes=self.lanes_for(lanes),
            scopes=sorted(self.scopes_for(scopes)),
            refresh=True,
            as_of=as_of or self.config.as_of,
            max_chars=max_chars,
        )

    def read_passage(
        self, workspace: Workspace, passage_id: str, scopes: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """One whole stored passage with its path and 1-based inclusive line range."""
        seen = self.scopes_for(scopes)
        if not isinstance(passage_id, str) or not passage_id.strip():
            raise InputError("the passage id is empty: pass an evidence item's id from a packet")
        stored = workspace.passages([passage_id.strip()]).get(passage_id.strip())
        if stored is None or not visible(stored.facts, seen):
            raise UnknownPassageError(NOT_VISIBLE)
        passage = stored.passage
        cue = instruction_cue(passage.text)
        return {
            "evidence_notice": EVIDENCE_NOTICE,
            "id": passage.id,
            "path": passage.path,
            "line_start": passage.line_start,
            "line_end": passage.line_end,
            "uri": note_uri(passage.path, passage.line_start, passage.line_end),
            "module": passage.module,
            "heading": passage.heading,
            "text": passage.text,
            "observed_at": stored.observed_at,
            "indexed_at": stored.indexed_at,
            "authority": stored.facts.authority,
            "scope": list(stored.facts.scope),
            "instruction_like": cue is not None,
            "instruction_cue": cue,
            "cell": None if passage.cell_index is None else {"id": passage.cell_id, "index": passage.cell_index},
        }

    def status(self, workspace: Workspace) -> dict[str, Any]:
        """Lanes, projection state, lag and the last refresh, counting only the notes the server may show."""
        full = workspace.status()
        documents = workspace.records.documents()
        hidden_paths = [path for path, doc in documents.items() if not visible(doc.facts, self.scopes)]
        last = full["last_refresh"]
        return {
            "notes_dir": str(workspace.notes_dir),
            "scopes": sorted(self.scopes),
            "state": full["state"],
            "refresh": full["refresh"]["mode"],
            "watching": full["watching"],
            "lanes": [
                {"name": lane, "status": "ok" if reason is None else "unavailable", "reason": reason}
                for lane, reason in workspace.lane_availability().items()
            ],
            "notes": len(documents) - len(hidden_paths),
            "pending_notes": full["pending_notes"],
            "projections": [
                {key: _unnamed(value, hidden_paths) for key, value in projection.items()}
                for projection in full["projections"]
            ],
            "last_refresh": None
            if last is None
            else {
                "at": last["at"],
                "result": last["result"],
                "error": _unnamed(last["error"], hidden_paths),
            },
            "last_error": _unnamed(full["last_error"], hidden_paths),
        }

    def notes(self, workspace: Workspace) -> list[dict[str, str]]:
        """The notes the server may show, for the resource list."""
        documents = workspace.records.documents()
        return [
            {"uri": note_uri(path), "path": path, "title": doc.title or path, "module": doc.module}
            for path, doc in documents.items()
            if visible(doc.facts, self.scopes)
        ]

    def read_note(self, workspace: Workspace, path: str, lines: str | None = None) -> str:
        """The text of a note the server may show, or its ``lines`` (``L3-L9``, ``L3-9`` or ``L3``; 1-based)."""
        doc = workspace.records.documents().get(path)
        file = (workspace.notes_dir / path).resolve()
        inside = file.is_relative_to(workspace.notes_dir.resolve())
        if doc is None or not visible(doc.facts, self.scopes) or not inside or not file.is_file():
            raise UnknownPassageError(NO_NOTE)
        if is_notebook(path):
            return _notebook_text(path, file.read_text(encoding="utf-8", errors="replace"), lines)
        text = file.read_text(encoding="utf-8", errors="replace").splitlines()
        if lines is None:
            return "\n".join(text)
        start, end = _line_range(lines)
        if not 1 <= start <= end <= len(text):
            raise InputError(f"lines {start}-{end} are outside the note (it has {len(text)} lines)")
        return "\n".join(text[start - 1 : end])

    @staticmethod
    def check_grounding(answer: str, packet: Mapping[str, Any]) -> dict[str, Any]:
        """The grounding report of ``answer`` (one claim per line, citing ``[e1]``) against ``packet``."""
        if not isinstance(answer, str) or not answer.strip():
            raise InputError("the answer is empty: give one claim per line, citing evidence refs like [e1]")
        if not isinstance(packet, Mapping) or not isinstance(packet.get("evidence"), list):
            raise InputError("packet must be a packet as context returns it (an object with an 'evidence' list)")
        return check_grounding(packet, answer).to_dict()


def _notebook_text(path: str, text: str, lines: str | None) -> str:
    """A notebook's Markdown cells (never code or outputs), each headed by its index and id."""
    if lines is not None:
        raise InputError(
            f"{path} is a notebook: its cited lines count inside one cell; read the passage by its id instead"
        )
    return "\n\n".join(
        f"<!-- cell {cell.index}{f' id {cell.id}' if cell.id else ''} -->\n" + "\n".join(cell.lines)
        for cell in markdown_cells(path, text)
    )


def note_uri(path: str, line_start: int | None = None, line_end: int | None = None) -> str:
    """``note://PATH`` or ``note://PATH#Lstart-Lend``."""
    return f"note://{path}" if line_start is None else f"note://{path}#L{line_start}-L{line_end}"


def _line_range(lines: str) -> tuple[int, int]:
    """``L3-L9``, ``L3-9`` or ``L3`` → (3, 9) or (3, 3)."""
    first, _, last = lines.partition("-")
    try:
        start = int(first.removeprefix("L"))
        return start, int(last.removeprefix("L")) if last else start
    except ValueError:
        raise InputError("a line range is #Lstart-Lend, e.g. #L3-L9") from None


def _unnamed(value: Any, hidden_paths: Sequence[str]) -> Any:
    """``value``, unless it is text naming a note the server may not show (then a count of it)."""
    if isinstance(value, str) and any(path in value for path in hidden_paths):
        return "withheld: it names a note outside this server's scopes"
    return value
