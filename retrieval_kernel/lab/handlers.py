"""The HTTP endpoints under ``/retrieval-kernel/``: Jupyter's own authentication and XSRF (APIHandler),
JSON in and out, and every expected failure a 4xx with a plain message (never a traceback).

=========================  ======  ==============================================================
``/retrieval-kernel/``     method  what
=========================  ======  ==============================================================
``query``                  POST    the packet for ``{question, intent, budget, top, lanes, as_of, scopes}``
``select``                 POST    the applicability selection for ``{question, when, intent, ...}``
``status``                 GET     the index state of the configured notes folder
``refresh``                POST    refresh now; the new state
``passage``                GET     ``?id=`` one stored passage with its line range
``note``                   GET     ``?path=`` (relative to the root) or ``?note=`` (in the notes folder)
=========================  ======  ==============================================================
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from ..errors import (
    InputError,
    NotConfiguredError,
    OutsideRootError,
    RetrievalKernelError,
    ScopeError,
    UnknownPassageError,
)
from ..settings import Settings
from .config import RetrievalKernel, resolve
from .service import LabService

BASE = "retrieval-kernel"


class _Handler(APIHandler):
    @property
    def service(self) -> LabService:
        service: LabService = self.settings["retrieval_kernel"]
        return service

    def body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"the request body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise InputError("the request body must be a JSON object")
        return body

    async def answer(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Run ``work`` and write its JSON; a known failure is a 4xx (5xx) with its message."""
        try:
            result = await work()
        except (OutsideRootError, ScopeError) as exc:
            return self._fail(403, exc)
        except UnknownPassageError as exc:
            return self._fail(404, exc)
        except NotConfiguredError as exc:
            return self._fail(409, exc)
        except InputError as exc:
            return self._fail(400, exc)
        except RetrievalKernelError as exc:
            return self._fail(500, exc)
        self.finish(json.dumps(result))

    def _fail(self, code: int, exc: Exception) -> None:
        self.set_status(code)
        self.finish(json.dumps({"error": str(exc), "kind": type(exc).__name__}))


class QueryHandler(_Handler):
    @web.authenticated
    async def post(self) -> None:
        await self.answer(lambda: self.service.query(self.body()))


class SelectHandler(_Handler):
    @web.authenticated
    async def post(self) -> None:
        await self.answer(lambda: self.service.select(self.body()))


class StatusHandler(_Handler):
    @web.authenticated
    async def get(self) -> None:
        await self.answer(self.service.status)


class RefreshHandler(_Handler):
    @web.authenticated
    async def post(self) -> None:
        await self.answer(self.service.refresh)


class PassageHandler(_Handler):
    @web.authenticated
    async def get(self) -> None:
        await self.answer(lambda: self.service.passage(self.get_argument("id", "")))


class NoteHandler(_Handler):
    @web.authenticated
    async def get(self) -> None:
        path, note = self.get_argument("path", None), self.get_argument("note", None)
        if (path is None) == (note is None):
            self._fail(400, InputError("pass exactly one of ?path= (relative to the Jupyter root) or ?note="))
            return
        await self.answer(lambda: self.service.note(path, note))


ROUTES = {
    "query": QueryHandler,
    "select": SelectHandler,
    "status": StatusHandler,
    "refresh": RefreshHandler,
    "passage": PassageHandler,
    "note": NoteHandler,
}


def setup_handlers(serverapp: Any) -> LabService:
    """Build the service from the server's config and root, and add the routes."""
    root = Path(serverapp.root_dir)
    try:
        settings, extra = resolve(RetrievalKernel(parent=serverapp), root)
        service = LabService(root, settings, extra)
    except InputError as exc:  # a bad setting: the panel and the status bar say so; Lab still starts
        serverapp.log.error("retrieval_kernel: %s", exc)
        service = LabService(root, Settings(), [], problem=f"the notes folder cannot be served: {exc}")
    web_app = serverapp.web_app
    web_app.settings["retrieval_kernel"] = service
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, BASE, name), handler) for name, handler in ROUTES.items()])
    if service.evidence is not None:
        service.evidence.start()  # open the workspace in the background: the first query is warm
    serverapp.log.info("retrieval_kernel: serving %s", settings.notes_dir or "no notes folder (not configured)")
    return service
