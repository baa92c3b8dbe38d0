"""What the endpoints do: the MCP server's :class:`EvidenceService` (one workspace on one worker thread)
plus what only Lab needs: where each cited note opens, a refresh the status bar can watch, and
request bodies checked field by field.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agents.service import EvidenceService
from ..errors import InputError, NotConfiguredError
from ..output.packet import MAX_BUDGET, MIN_BUDGET
from ..pipeline.requests import DEFAULT_TOP
from ..settings import Settings
from ..store.refresh import REFRESHING
from .config import NOT_CONFIGURED, server_config
from .paths import lexical, root_relative, served_note


class LabService:
    """The endpoints' behaviour for one server root and (at most) one notes folder."""

    def __init__(
        self, root: Path, settings: Settings, extra_notes_dirs: list[Path] | None = None, problem: str | None = None
    ) -> None:
        self.root = root
        self.problem = problem or NOT_CONFIGURED  # why there is no notes folder to serve
        self.settings = settings
        self.extra_notes_dirs = list(extra_notes_dirs or [])
        self.evidence = None if settings.notes_dir is None else EvidenceService(server_config(settings))
        self._refreshing = threading.Event()

    def close(self) -> None:
        if self.evidence is not None:
            self.evidence.close()

    def _service(self) -> EvidenceService:
        if self.evidence is None:
            raise NotConfiguredError(self.problem)
        return self.evidence

    # ------------------------------------------------------------ endpoints (awaited by the handlers)

    async def query(self, body: Mapping[str, Any]) -> dict[str, Any]:
        service = self._service()
        question = _question(body)
        budget = self._budget(body)
        intent = _text(body, "intent") or self.settings.intent
        top = _whole(body, "top", self.settings.top or DEFAULT_TOP)
        lanes = _texts(body, "lanes")
        scopes = _texts(body, "scopes")
        as_of = self._as_of(body)
        page = await service.run(
            lambda ws: service.context(ws, question, budget, intent, top, lanes, as_of, None, scopes)
        )
        packet = page.packet.to_dict()
        links = {item["id"]: self.lab_path(item["path"]) for item in packet["evidence"]}
        return {"packet": packet, "links": links, "next_cursor": page.next_cursor}

    async def select(self, body: Mapping[str, Any]) -> dict[str, Any]:
        service = self._service()
        question = _question(body)
        when = body.get("when")
        if when is not None and not isinstance(when, dict):
            raise InputError('"when" must be an object of conditions, e.g. {"tenant": "tenant-a"}')
        intent = _text(body, "intent") or self.settings.intent
        lanes, scopes = _texts(body, "lanes"), _texts(body, "scopes")
        budget, as_of = self._budget(body), self._as_of(body)
        selection = await service.run(
            lambda ws: service.select(ws, question, when, intent, lanes, scopes, budget, as_of)
        )
        packet = selection.to_dict()
        links = {item["id"]: self.lab_path(item["path"]) for item in packet["evidence"]}
        return {"packet": packet, "links": links}

    def _budget(self, body: Mapping[str, Any]) -> int:
        budget = _whole(body, "budget", self.settings.budget.limit if self.settings.budget.unit == "chars" else 20_000)
        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise InputError(f"budget must be {MIN_BUDGET:,}-{MAX_BUDGET:,} characters, not {budget:,}")
        return budget

    def _as_of(self, body: Mapping[str, Any]) -> str | None:
        return _text(body, "as_of") or (self.settings.as_of.isoformat() if self.settings.as_of else None)

    async def status(self) -> dict[str, Any]:
        """The index state; ``refreshing`` at once while this server's refresh runs (no queueing behind it)."""
        if self.evidence is None:
            return {"configured": False, "state": "unconfigured", "reason": self.problem}
        if self._refreshing.is_set():
            return {"configured": True, "state": REFRESHING, "reason": "refreshing the index"}
        service = self.evidence
        status = await service.run(service.status)
        return {"configured": True, **status, "reason": _reason(status)}

    async def refresh(self) -> dict[str, Any]:
        """Refresh now; a failure keeps the last good index and says so in the answer."""
        service = self._service()
        self._refreshing.set()
        try:
            outcome = await service.run(lambda ws: ws.refresh(wait=True))
        finally:
            self._refreshing.clear()
        answer = await self.status()
        answer["refresh"] = {"state": outcome.state, "error": outcome.error}
        return answer

    async def passage(self, passage_id: str) -> dict[str, Any]:
        service = self._service()
        stored = await service.run(lambda ws: service.read_passage(ws, passage_id))
        stored["lab_path"] = self.lab_path(stored["path"])
        return stored

    async def note(self, lab_path: str | None, note: str | None) -> dict[str, Any]:
        """A whole note for the read-only view: by its path inside the notes folder (scope-checked), or by
        Lab path (``..`` allowed, into the root, the notes folder or an extra notes folder only)."""
        if note is not None:
            service = self._service()
            text = await service.run(lambda ws: service.read_note(ws, note))
            return {"path": note, "lab_path": self.lab_path(note), "lines": text.split("\n")}
        notes = [] if self.settings.notes_dir is None else [Path(lexical(self.settings.notes_dir))]
        file, folder = served_note(self.root, lab_path or "", [self.root, *notes, *self.extra_notes_dirs])
        if folder in notes:  # a note of the served workspace: the same scope rules as every other answer
            return await self.note(None, file.relative_to(folder).as_posix())
        if not file.is_file():
            raise InputError(f"{lab_path} is not a file")
        text = file.read_text(encoding="utf-8", errors="replace")
        return {"path": lab_path, "lab_path": root_relative(self.root, file), "lines": text.splitlines()}

    # ------------------------------------------------------------ paths

    def lab_path(self, note_path: str) -> str | None:
        """Where a note of the notes folder opens in Lab (relative to the root), ``None`` outside the root."""
        assert self.settings.notes_dir is not None
        return root_relative(self.root, Path(lexical(self.settings.notes_dir)) / note_path)


def _reason(status: Mapping[str, Any]) -> str:
    if status["last_error"]:
        return f"last refresh failed, serving the last good index: {status['last_error']}"
    if status["pending_notes"]:
        return f"{status['pending_notes']} note(s) changed on disk, not yet indexed"
    lag = max((p["lag"] for p in status["projections"]), default=0)
    return f"a projection is {lag} change(s) behind" if lag else "every projection is caught up"


def _question(body: Mapping[str, Any]) -> str:
    value = body.get("question")
    if value is None:
        raise InputError('"question" is missing: send {"question": "..."}')
    if not isinstance(value, str):
        raise InputError(f'"question" must be a string, not {type(value).__name__}')
    if not value.strip():
        raise InputError('"question" is empty: type a question')
    return value.strip()


def _text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InputError(f'"{name}" must be a string, not {type(value).__name__}')
    return value.strip()


def _whole(body: Mapping[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f'"{name}" must be a whole number, not {value!r}')
    return value


def _texts(body: Mapping[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f'"{name}" must be a list of strings, not {value!r}')
    return value
