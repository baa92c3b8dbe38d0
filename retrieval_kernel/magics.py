"""``%context`` / ``%%context``: the IPython adapter. It parses, calls the core, displays.

Options come first and the rest of the line is the query, verbatim, so a
question may contain apostrophes, quotes, ``{braces}``, ``$`` or ``--`` inside it.
Option values expand ``{name}`` and ``$name`` from the user namespace, as IPython does::

    %context --notes notes/ --as-of 2026-10-15 --max-bytes 4000 Who decides a record's owner?

Settings are traitlets (``%config ContextMagics.notes_dir = "notes"``), checked when
they are set; options, traitlets, ``[tool.retrieval_kernel]`` in the nearest pyproject.toml
and the environment are merged by :func:`retrieval_kernel.settings.resolve_settings`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, Float, Integer, List, TraitError, Unicode, validate
from traitlets.config import Configurable

from .errors import RetrievalKernelError
from .output.packet import Packet
from .pipeline.candidates import INTENTS
from .pipeline.workspace import Workspace
from .settings import (
    DEFAULTS,
    QUERY_KEYS,
    PyprojectCache,
    Settings,
    budget_limits,
    check_setting,
    resolve_settings,
)

_OPTION = re.compile(r"""\s*(--(?:[A-Za-z][\w-]*)?)(?:=("[^"]*"|'[^']*'|\S+))?(?=\s|$)""")
_VALUE = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|(\S+))""")
_FLAGS = frozenset({"--json", "--no-refresh", "--refresh", "--audit", "--select", "--no-live"})
# the settings %config can set, one traitlet each (see retrieval_kernel.settings)
TRAITLETS = (*QUERY_KEYS, "chroma", "refresh_mode", "debounce", "refresh_timeout")
_MAGIC_LINE = re.compile(
    r"^(?P<indent>[ \t]*)(?:(?P<target>[\w.]+)[ \t]*=[ \t]*)?%(?P<name>context(?:_explore)?)\b"
    r"(?P<rest>.*?)(?P<end>\r?\n)?$"
)


def route_context_lines(lines: list[str]) -> list[str]:
    """Send ``%context ...`` lines straight to the magic.

    IPython reads a trailing ``?`` as a help request (``deployment?`` would become
    ``%pinfo deployment``), but questions end in ``?``. This line transform runs
    before IPython's help syntax and turns the line into an explicit magic call.
    """
    routed = []
    for line in lines:
        match = _MAGIC_LINE.match(line)
        if match is None:
            routed.append(line)
            continue
        call = f"get_ipython().run_line_magic({match['name']!r}, {match['rest'].strip()!r})"
        target = f"{match['target']} = " if match["target"] else ""
        routed.append(f"{match['indent']}{target}{call}{match['end'] or ''}")
    return routed


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel
        raise UsageError(f"%context: {message}")


@functools.cache
def _option_parser() -> _Parser:
    """The ``%context`` options (built once: argparse keeps no state between parses)."""
    parser = _Parser(prog="%context", add_help=False)
    parser.add_argument("--notes", dest="notes_dir")
    parser.add_argument("--store", dest="store_dir")
    parser.add_argument("--as-of", dest="as_of")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--max-bytes", type=int)
    budget.add_argument("--max-chars", type=int)
    parser.add_argument("--top", type=int)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--lanes", help="comma-separated lanes: identity,lexical,dense")
    parser.add_argument("--scope", help="the caller's scopes, comma-separated ('*' sees every note)")
    parser.add_argument("--intent", choices=INTENTS)
    parser.add_argument("--audit", action="store_true")
    parser.add_argument("--select", action="store_true", help="applicability mode: the records that apply")
    parser.add_argument("--when", action="append", help="a task condition key=value for --select (repeatable)")
    refresh = parser.add_mutually_exclusive_group()
    refresh.add_argument("--refresh", dest="refresh", action="store_true", default=None)
    refresh.add_argument("--no-refresh", dest="refresh", action="store_false")
    live = parser.add_mutually_exclusive_group()
    live.add_argument("--live", action="append", help="a system of record: JSON file, cmd:COMMAND or http(s) URL")
    live.add_argument("--no-live", action="store_true", help="ask no system of record this time")
    parser.add_argument("--live-timeout", type=float, help="seconds each live source may take")
    return parser


def _live_options(options: dict[str, Any]) -> dict[str, Any]:
    """``--no-live`` is the ``live`` setting given as no sources (it overrides %config and pyproject)."""
    if options.pop("no_live", False):
        options["live"] = []
    return options


def split_options(line: str) -> tuple[list[str], str]:
    """Split leading ``--option [value]`` tokens from the free-text rest of the line."""
    argv: list[str] = []
    rest = line
    while True:
        match = _OPTION.match(rest)
        if not match:
            break
        name, inline = match.group(1), match.group(2)
        rest = rest[match.end() :]
        if name == "--":
            break
        argv.append(name)
        if inline is not None:
            argv.append(inline[1:-1] if len(inline) > 1 and inline[0] == inline[-1] in "\"'" else inline)
        elif name not in _FLAGS:
            value = _VALUE.match(rest)
            if not value:
                raise UsageError(f"%context: option {name} needs a value")
            argv.append(next(v for v in value.groups() if v is not None))
            rest = rest[value.end() :]
    return argv, rest.strip()


@magics_class
class ContextMagics(Magics, Configurable):
    """Evidence packets from your notes, inline in the notebook."""

    notes_dir = Unicode(None, allow_none=True, help="Folder of Markdown notes to search.").tag(config=True)
    store_dir = Unicode(None, allow_none=True, help="Store folder (default: <notes>/.retrieval_kernel).").tag(
        config=True
    )
    as_of = Unicode(None, allow_none=True, help="Clock for source ages, ISO date (default: today).").tag(config=True)
    max_bytes = Integer(None, allow_none=True, help="Cap on the serialized packet in UTF-8 bytes.").tag(config=True)
    max_chars = Integer(None, allow_none=True, help="Cap on the serialized packet in characters.").tag(config=True)
    top = Integer(None, allow_none=True, help=f"Most evidence items (default {DEFAULTS.top}).").tag(config=True)
    refresh = Bool(None, allow_none=True, help="Re-index changed notes before answering (default on).").tag(config=True)
    scope = Unicode(None, allow_none=True, help="The caller's scopes, comma-separated (default: none).").tag(
        config=True
    )
    intent = Unicode(None, allow_none=True, help=f"One of {', '.join(INTENTS)} (default {DEFAULTS.intent}).").tag(
        config=True
    )
    chroma = Unicode(None, allow_none=True, help="Dense vectors: 'embedded' or http://host:port (Chroma server).").tag(
        config=True
    )
    refresh_mode = Unicode(None, allow_none=True, help="off | on-query | watch (default on-query).").tag(config=True)
    debounce = Float(None, allow_none=True, help="Seconds notes must be quiet before a refresh (default 0).").tag(
        config=True
    )
    refresh_timeout = Float(None, allow_none=True, help="Seconds one refresh may take (default: no limit).").tag(
        config=True
    )
    live = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="Systems of record checked at every query: JSON file paths, 'cmd:COMMAND', http(s) URLs.",
    ).tag(config=True)
    live_timeout = Float(None, allow_none=True, help="Seconds each live source may take (default 2).").tag(config=True)

    @validate(*TRAITLETS)
    def _check_traitlet(self, proposal: Any) -> Any:
        """Refuse a bad ``%config`` value when it is set, not at the next query."""
        key, value = proposal["trait"].name, proposal["value"]
        try:
            check_setting(key, value)
        except RetrievalKernelError as exc:
            raise TraitError(f"ContextMagics.{key} = {value!r}: {exc}") from None
        other = {"max_bytes": "max_chars", "max_chars": "max_bytes"}.get(key)
        if other is not None and getattr(self, other) is not None:
            raise TraitError(
                f"ContextMagics.{key} = {value!r}: ContextMagics.{other} is already set and the budget is one "
                f"setting; set ContextMagics.{other} = None first"
            )
        return value

    def __init__(self, shell: Any) -> None:
        Configurable.__init__(self, config=shell.config)
        Magics.__init__(self, shell=shell)
        shell.configurables.append(self)
        self._pyproject = PyprojectCache()  # read again only when the pyproject changes
        self._workspaces: dict[tuple[Any, ...], Workspace] = {}
        self.last_packet: Packet | None = None
        self.last_selection: Any = None  # the last SelectionPacket (%context --select)
        self._last_workspace: Workspace | None = None

    @no_var_expand
    @line_cell_magic
    def context(self, line: str, cell: str | None = None) -> Packet | None:
        """Find the passages of your notes that apply to a question.

        Usage: ``%context [options] QUESTION`` or ``%%context [options]`` with the
        question in the cell. Options: ``--notes DIR``, ``--store DIR``,
        ``--as-of YYYY-MM-DD``, ``--max-bytes N`` | ``--max-chars N``, ``--top N``,
        ``--scope A,B``, ``--intent orient|verify|plan|audit``, ``--audit``,
        ``--lanes identity,lexical,dense``, ``--json`` (print the packet JSON), ``--no-refresh``, ``--refresh``
        (refresh every projection durably before answering; by default a query answers first and writes the
        projections when idle),
        ``--live SOURCE`` (repeatable: a JSON file, ``cmd:COMMAND`` or an http(s) URL), ``--live-timeout S``,
        ``--no-live``.
        ``--select [--when key=value ...]``: applicability mode, the records that apply (see applicability.py).
        """
        argv, rest = split_options(line)
        if self.shell is not None:  # {var} and $var expand in option values only, never in the question
            argv = [self.shell.var_expand(token) for token in argv]
        if cell is not None and rest:
            raise UsageError("%%context: put options on the magic line and the question in the cell")
        query = cell if cell is not None else rest
        options = _live_options(vars(_option_parser().parse_args(argv)))
        settings = self._settings(options, "%context")
        if options["select"] or options["when"]:
            return self._select(query, options, settings)
        try:
            workspace = self._workspace(settings)
            if options["refresh"] is True:  # asked for: every projection written before the answer
                workspace.refresh(wait=True)
            packet = workspace.query(
                query,
                as_of=settings.as_of,
                top=settings.top,
                refresh=settings.refresh,
                lanes=options["lanes"].split(",") if options["lanes"] else None,
                scopes=settings.scopes,
                intent=settings.intent,
                audit=options["audit"],
                live_checks=settings.live_checks(),
                **budget_limits(settings.budget),
            )
        except RetrievalKernelError as exc:
            raise UsageError(f"%context: {exc}") from None
        self.last_packet = packet
        self._last_workspace = workspace
        if options["json"]:
            print(packet.to_json())
            return None
        return packet

    def _select(self, query: str, options: dict[str, Any], settings: Settings) -> Any:
        """``%context --select [--when key=value ...] QUESTION``: the records that apply, why, and what was rejected."""
        from .applicability import select_packet

        if not options["select"]:
            raise UsageError("%context: --when states conditions for applicability selection: add --select")
        try:
            selection = select_packet(
                self._workspace(settings),
                query,
                conditions=options["when"] or None,
                intent="audit" if options["audit"] else settings.intent,
                lanes=options["lanes"].split(",") if options["lanes"] else None,
                scopes=settings.scopes,
                refresh=settings.refresh,
                as_of=settings.as_of,
                top=settings.top,
                live_checks=settings.live_checks(),
                **budget_limits(settings.budget),
            )
        except RetrievalKernelError as exc:
            raise UsageError(f"%context: {exc}") from None
        self.last_selection = selection
        if options["json"]:
            print(selection.to_json())
            return None
        return selection

    def _settings(self, options: Mapping[str, Any], name: str) -> Settings:
        """The settings in force: option > %config traitlet > pyproject > environment > default."""
        try:
            settings = resolve_settings(
                {key: options.get(key) for key in QUERY_KEYS},
                {key: getattr(self, key) for key in TRAITLETS},
                pyproject=self._pyproject,
            )
        except RetrievalKernelError as exc:
            raise UsageError(f"{name}: {exc}") from None
        if settings.notes_dir is None:
            raise UsageError(
                f"{name}: no notes folder: pass --notes DIR, or %config ContextMagics.notes_dir = 'DIR', "
                "or set notes_dir in [tool.retrieval_kernel] of pyproject.toml"
            )
        return settings

    @no_var_expand
    @line_magic
    def context_explore(self, line: str) -> Any:
        """Open the explorer panel: ``%context_explore [options] [QUESTION]`` (same options as ``%context``)."""
        from .explorer import Explorer

        argv, rest = split_options(line)
        if self.shell is not None:
            argv = [self.shell.var_expand(token) for token in argv]
        options = _live_options(vars(_option_parser().parse_args(argv)))
        settings = self._settings(options, "%context_explore")
        try:
            workspace = self._workspace(settings)
            return Explorer(
                workspace=workspace,
                query=rest,
                as_of=settings.as_of,
                intent=settings.intent,
                scopes=settings.scopes,
                budget=settings.budget,
                top=settings.top,
                audit=options["audit"],
                lanes=options["lanes"].split(",") if options["lanes"] else None,
                live_checks=settings.live_checks(),
            )
        except RetrievalKernelError as exc:
            raise UsageError(f"%context_explore: {exc}") from None

    @line_magic
    def context_trace(self, line: str) -> None:
        """Show how a packet was built: ``%context_trace [TRACE_ID] [--json]`` (default: the last packet)."""
        from .pipeline.trace import trace_text

        words = line.split()
        as_json = "--json" in words
        ids = [word for word in words if word != "--json"]
        if self._last_workspace is None or self.last_packet is None:
            raise UsageError("%context_trace: run %context first; traces are read from that notes store")
        trace_id = ids[0] if ids else self.last_packet.trace_id
        trace = self._last_workspace.trace(trace_id)
        if trace is None:
            raise UsageError(f"%context_trace: no trace {trace_id!r} in {self._last_workspace.store_dir}")
        print(json.dumps(trace, indent=2, ensure_ascii=False) if as_json else trace_text(trace))

    @cell_magic
    def context_check(self, line: str, cell: str) -> Any:
        """Check an answer against the last packet: one claim per line, citations as ``[e1]``.

        ``%%context_check`` or ``%%context_check --packet NAME`` (a Packet in your namespace).
        """
        from .output.grounding import check_grounding, parse_claims

        argv, rest = split_options(line)
        packet: Any = self.last_packet
        if argv[:1] == ["--packet"] and len(argv) == 2 and not rest and self.shell is not None:
            packet = self.shell.user_ns.get(argv[1])
        elif argv or rest:
            raise UsageError(f"%%context_check: unknown options {line.strip()!r}; the only option is --packet NAME")
        if not isinstance(packet, Packet) and not (isinstance(packet, Mapping) and "evidence" in packet):
            raise UsageError("%%context_check: no packet to check against; run %context first or pass --packet NAME")
        try:
            return check_grounding(packet, parse_claims(cell))
        except RetrievalKernelError as exc:
            raise UsageError(f"%%context_check: {exc}") from None

    def _workspace(self, settings: Settings) -> Workspace:
        """One workspace (and watcher) per notes store; a changed setting replaces it."""
        if settings.notes_dir is None:  # pragma: no cover - _settings refuses this first
            raise UsageError("%context: no notes folder")
        # absolute as the user reached them (no symlink resolution): citation links keep that path
        notes = Path(os.path.abspath(settings.notes_dir))
        store = Path(os.path.abspath(settings.store_dir)) if settings.store_dir is not None else None
        key = (notes, store, settings.chroma, settings.refresh_mode, settings.debounce, settings.refresh_timeout)
        if key not in self._workspaces:
            for old in [k for k in self._workspaces if k[:2] == (notes, store)]:
                self._workspaces.pop(old).close()  # settings changed: one workspace (and watcher) per store
            self._workspaces[key] = Workspace(
                notes,
                store,
                chroma=settings.chroma,
                refresh=settings.refresh_mode,
                debounce=settings.debounce,
                refresh_timeout=settings.refresh_timeout,
                progress=True,  # a first %context on a big folder shows what it is doing (small jobs stay quiet)
            )
        return self._workspaces[key]

    @line_magic
    def context_status(self, line: str) -> None:
        """Each projection's version, high-water mark and lag; the last refresh and error: ``%context_status``.

        Options: ``--notes DIR``, ``--store DIR``, ``--json``.
        """
        from .store.refresh import status_text

        status = self._status_workspace(line, "%context_status").status()
        print(json.dumps(status, indent=2) if "--json" in line.split() else status_text(status))

    @line_magic
    def context_refresh(self, line: str) -> None:
        """Refresh now, whatever the refresh mode (waits for another publisher): ``%context_refresh [--notes DIR]``."""
        from .store.refresh import outcome_text

        workspace = self._status_workspace(line, "%context_refresh")
        print(outcome_text(workspace.refresh(wait=True)))

    def _status_workspace(self, line: str, name: str) -> Workspace:
        argv, rest = split_options(line.replace("--json", ""))
        if rest:
            raise UsageError(f"{name}: unexpected {rest!r}; options: --notes DIR, --store DIR, --json")
        try:
            options = vars(_option_parser().parse_args(argv))
            return self._workspace(self._settings(options, name))
        except RetrievalKernelError as exc:
            raise UsageError(f"{name}: {exc}") from None
