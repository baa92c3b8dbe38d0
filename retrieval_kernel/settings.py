"""Every setting, and where its value comes from, decided in one place.

For every key, the strongest source that sets it wins:

1. an option: a magic flag (``%context --top 5``), a CLI flag, or an argument
   (``Workspace(chroma=...)``);
2. a traitlet set with ``%config ContextMagics.<key> = ...``;
3. the key in ``[tool.retrieval_kernel]`` of the nearest ``pyproject.toml`` (relative
   paths are taken relative to that file's folder);
4. the environment: ``RETRIEVAL_KERNEL_<KEY>`` (``RETRIEVAL_KERNEL_CHROMA_URL`` for ``chroma``);
5. the built-in default.

``live`` names the systems of record asked at every query (a JSON file, ``cmd:COMMAND``
or an ``http(s)://`` URL, one or a list; an empty list asks none) and ``live_timeout``
each one's time limit in seconds. The budget is one setting in two units (``max_bytes``
or ``max_chars``): the strongest source that names either wins whole. :func:`resolve_settings` checks every value it
takes and names the key and the source of a bad one; :class:`Settings` holds the
result, each value already in the type the core takes (paths, a date, a
:class:`~retrieval_kernel.output.packet.Budget`, :class:`ChromaSettings`).
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from .errors import BudgetError, ChromaConfigError, DateError, InputError
from .output.packet import DEFAULT_BUDGET, Budget
from .pipeline.candidates import DEFAULT_INTENT
from .pipeline.freshness import parse_as_of
from .pipeline.live_sources import (
    DEFAULT_LIVE_TIMEOUT,
    SystemOfRecord,
    checked_spec,
    checked_timeout,
    file_spec,
    live_sources,
)
from .pipeline.requests import DEFAULT_TOP, checked_intent, checked_top
from .projections.chroma_client import ChromaSettings, parse_url
from .store.refresh import DEFAULT_DEBOUNCE, DEFAULT_MODE, RefreshPolicy

STORE_FOLDER = ".retrieval_kernel"
BUDGET_KEYS = ("max_bytes", "max_chars")
# what %context and the CLI ask with
# the systems of record asked at every query (see pipeline/live_sources.py), and each one's time limit
LIVE_KEYS = ("live", "live_timeout")
QUERY_KEYS = ("notes_dir", "store_dir", "as_of", *BUDGET_KEYS, "top", "refresh", "scope", "intent", *LIVE_KEYS)
# where the dense lane's vectors live: "embedded" or http://host:port (see projections/chroma_client.py)
CHROMA_KEYS = ("chroma", "chroma_tenant", "chroma_database", "chroma_prefix", "chroma_timeout")
# when projections catch up with the notes (see store/refresh.py)
REFRESH_KEYS = ("refresh_mode", "debounce", "refresh_timeout")
SETTING_KEYS = frozenset(QUERY_KEYS + CHROMA_KEYS + REFRESH_KEYS)
PATH_KEYS = frozenset({"notes_dir", "store_dir"})
ENV_URL = "RETRIEVAL_KERNEL_CHROMA_URL"
ENV_VARS = {key: f"RETRIEVAL_KERNEL_{key.upper()}" for key in sorted(SETTING_KEYS)} | {"chroma": ENV_URL}
# the magic's and the CLI's flag for a key, where it differs from --key-with-dashes
FLAGS = {
    "notes_dir": "--notes",
    "store_dir": "--store",
    "scope": "--scope",
    "chroma_tenant": "--tenant",
    "chroma_database": "--database",
    "chroma_prefix": "--prefix",
    "chroma_timeout": "--timeout",
    "refresh_timeout": "--timeout",
}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Settings:
    """The settings in force, each checked and in the type the core takes.

    ``notes_dir`` is ``None`` when no source names it (the adapters say so); ``as_of``
    ``None`` is today (UTC) when the query runs.
    """

    notes_dir: Path | None = None
    store_dir: Path | None = None
    as_of: dt.date | None = None
    budget: Budget = DEFAULT_BUDGET
    top: int = DEFAULT_TOP
    refresh: bool = True
    scopes: tuple[str, ...] = ()
    intent: str = DEFAULT_INTENT
    refresh_mode: str = DEFAULT_MODE
    debounce: float = DEFAULT_DEBOUNCE
    refresh_timeout: float | None = None
    chroma: ChromaSettings = field(default_factory=ChromaSettings)
    live: tuple[str, ...] = ()  # live sources: a JSON file path, "cmd:COMMAND" or an http(s):// URL each
    live_timeout: float = DEFAULT_LIVE_TIMEOUT

    def live_checks(self) -> tuple[SystemOfRecord, ...]:
        """The live sources these settings name, each with ``live_timeout``."""
        return live_sources(self.live, self.live_timeout)


DEFAULTS = Settings()


class BudgetLimit(TypedDict, total=False):
    """A budget as :meth:`Workspace.query <retrieval_kernel.pipeline.workspace.Workspace.query>` takes it."""

    max_bytes: int
    max_chars: int


def budget_limits(budget: Budget) -> BudgetLimit:
    """``budget`` as the keyword argument of its unit: ``workspace.query(text, **budget_limits(budget))``."""
    return BudgetLimit(max_bytes=budget.limit) if budget.unit == "bytes" else BudgetLimit(max_chars=budget.limit)


# ---------------------------------------------------------------- pyproject


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def read_pyproject(pyproject: Path) -> dict[str, Any]:
    """``[tool.retrieval_kernel]`` of ``pyproject``, relative paths made relative to its folder."""
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("retrieval_kernel", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{pyproject}: cannot read [tool.retrieval_kernel]: {exc}") from exc
    if not isinstance(table, dict):
        raise InputError(f"{pyproject}: [tool.retrieval_kernel] must be a table, not {table!r}")
    unknown = sorted(set(table) - SETTING_KEYS)
    if unknown:
        raise InputError(f"{pyproject}: unknown [tool.retrieval_kernel] keys {unknown}; known: {sorted(SETTING_KEYS)}")
    located = {
        key: str(pyproject.parent / Path(value).expanduser()) if key in PATH_KEYS and isinstance(value, str) else value
        for key, value in table.items()
    }
    if "live" in located:
        located["live"] = _live_beside(located["live"], pyproject.parent)
    return located


def _live_beside(value: Any, folder: Path) -> Any:
    """Live sources from a pyproject: a relative JSON file path is taken relative to its folder."""
    specs = [value] if isinstance(value, str) else value
    if not isinstance(specs, list) or not all(isinstance(spec, str) for spec in specs):
        return value  # the check names what is wrong
    try:
        return [file_spec(spec, folder) for spec in specs]
    except InputError:
        return value  # the check names what is wrong, and where


def project_settings(start: Path | None = None) -> dict[str, Any]:
    """Settings from ``[tool.retrieval_kernel]`` of the nearest pyproject (empty when none)."""
    return PyprojectCache().table(start)[1]


class PyprojectCache:
    """``[tool.retrieval_kernel]`` of the nearest pyproject, read again only when that file changes.

    The nearest pyproject is looked up on every call (the working folder may change);
    its table is re-read when its path, modification time, size or inode differ from
    the last read, so an edited pyproject is always seen.
    """

    def __init__(self) -> None:
        self._tables: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}
        self.reads = 0  # how many times a pyproject was read and parsed

    def table(self, start: Path | None = None) -> tuple[Path | None, dict[str, Any]]:
        """The nearest pyproject (or ``None``) and its settings table."""
        pyproject = find_pyproject(start or Path.cwd())
        if pyproject is None:
            return None, {}
        try:
            stat = pyproject.stat()
        except OSError as exc:
            raise InputError(f"{pyproject}: cannot read [tool.retrieval_kernel]: {exc}") from exc
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        cached = self._tables.get(pyproject)
        if cached is None or cached[0] != stamp:
            self.reads += 1
            cached = (stamp, read_pyproject(pyproject))
            self._tables[pyproject] = cached
        return pyproject, cached[1]


# ---------------------------------------------------------------- checking one value


def _path(value: Any, text: bool) -> Path:
    if not isinstance(value, str | Path) or not str(value).strip():
        raise InputError(f"must be a folder path, not {value!r}")
    return Path(value).expanduser()


def _as_of(value: Any, text: bool) -> dt.date:
    if not isinstance(value, str | dt.date):
        raise DateError(f"as_of must be an ISO date such as 2026-10-15, not {value!r}")
    return parse_as_of(value)


def _whole(value: Any, text: bool, error: type[InputError] = InputError) -> int:
    if text and isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise error(f"must be a whole number, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"must be a whole number, not {value!r}")
    return value


def _seconds(value: Any, text: bool) -> float:
    if text and isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise InputError(f"must be a number of seconds, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be a number of seconds, not {value!r}")
    return float(value)


def _text(value: Any, text: bool) -> str:
    if not isinstance(value, str):
        raise InputError(f"must be text, not {value!r}")
    return value


def _top(value: Any, text: bool) -> int:
    return checked_top(_whole(value, text, BudgetError))


def _budget(unit: str) -> Callable[[Any, bool], Budget]:
    def check(value: Any, text: bool) -> Budget:
        return Budget.checked(unit, _whole(value, text, BudgetError))

    return check


def _refresh(value: Any, text: bool) -> bool:
    if text and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if not isinstance(value, bool):
        raise InputError(f"must be true or false, not {value!r}")
    return value


def _scopes(value: Any, text: bool) -> tuple[str, ...]:
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not all(isinstance(name, str) for name in names):
        raise InputError(f"must be scope names, comma-separated, not {value!r}")
    return tuple(dict.fromkeys(name.strip() for name in names if name.strip()))


def _live(value: Any, text: bool) -> tuple[str, ...]:
    specs = [line for line in value.splitlines() if line.strip()] if text and isinstance(value, str) else value
    specs = [specs] if isinstance(specs, str) else specs
    if not isinstance(specs, list | tuple):
        raise InputError(f"must be a live source or a list of them, not {value!r}")
    return tuple(dict.fromkeys(checked_spec(spec) for spec in specs))


def _live_timeout(value: Any, text: bool) -> float:
    return checked_timeout(_seconds(value, text))


def _intent(value: Any, text: bool) -> str:
    return checked_intent(_text(value, text))


def _refresh_mode(value: Any, text: bool) -> str:
    return RefreshPolicy.checked(mode=_text(value, text)).mode


def _debounce(value: Any, text: bool) -> float:
    return RefreshPolicy.checked(debounce=_seconds(value, text)).debounce


def _refresh_timeout(value: Any, text: bool) -> float:
    seconds = _seconds(value, text)
    RefreshPolicy.checked(timeout=seconds)  # the core's range and message
    return seconds


def _chroma_url(value: Any, text: bool) -> str:
    parse_url(_text(value, text))  # ChromaConfigError when malformed
    return str(value)


def _chroma_name(key: str) -> Callable[[Any, bool], str | None]:
    def check(value: Any, text: bool) -> str | None:
        name = _text(value, text) or None
        (ChromaSettings(tenant=name) if key == "chroma_tenant" else ChromaSettings(database=name)).checked()
        return name

    return check


def _chroma_prefix(value: Any, text: bool) -> str:
    return ChromaSettings(prefix=_text(value, text)).checked().prefix


def _chroma_timeout(value: Any, text: bool) -> float:
    try:
        seconds = _seconds(value, text)
    except InputError as exc:
        raise ChromaConfigError(str(exc)) from None
    return ChromaSettings(timeout_s=seconds).checked().timeout_s


CHECKS: dict[str, Callable[[Any, bool], Any]] = {
    "notes_dir": _path,
    "store_dir": _path,
    "as_of": _as_of,
    "max_bytes": _budget("bytes"),
    "max_chars": _budget("chars"),
    "top": _top,
    "refresh": _refresh,
    "scope": _scopes,
    "intent": _intent,
    "refresh_mode": _refresh_mode,
    "debounce": _debounce,
    "refresh_timeout": _refresh_timeout,
    "chroma": _chroma_url,
    "chroma_tenant": _chroma_name("chroma_tenant"),
    "chroma_database": _chroma_name("chroma_database"),
    "chroma_prefix": _chroma_prefix,
    "chroma_timeout": _chroma_timeout,
    "live": _live,
    "live_timeout": _live_timeout,
}


def check_setting(key: str, value: Any, text: bool = False) -> Any:
    """``value`` of setting ``key`` checked and converted (``text``: parse it from a string, as from
    the environment). Raises the core's own error (``InputError``, ``BudgetError``, ``DateError``,
    ``ChromaConfigError``) with what is wrong; :func:`resolve_settings` adds the key and source."""
    return CHECKS[key](value, text)


# ---------------------------------------------------------------- sources and precedence


@dataclass(frozen=True)
class _Source:
    """One place settings come from, with how to name a key in it for a message."""

    values: Mapping[str, Any]
    where: Callable[[str], str]
    text: bool = False  # values are strings to parse (the environment)


def _option_name(key: str) -> str:
    return f"option {FLAGS.get(key, '--' + key.replace('_', '-'))}"


class _Resolver:
    """The sources in precedence order, and each key's value from the strongest one that sets it."""

    def __init__(self, sources: list[_Source]) -> None:
        self.sources = sources

    @classmethod
    def gather(
        cls,
        options: Mapping[str, Any] | None,
        configured: Mapping[str, Any] | None,
        start: Path | None,
        environ: Mapping[str, str] | None,
        pyproject: PyprojectCache | None,
        option_name: Callable[[str], str] = _option_name,
        configured_by: str = "%config ContextMagics",
    ) -> _Resolver:
        for given in (options or {}, configured or {}):
            unknown = sorted(set(given) - SETTING_KEYS)
            if unknown:
                raise InputError(f"unknown settings {unknown}; known: {sorted(SETTING_KEYS)}")
        path, table = (pyproject or PyprojectCache()).table(start)
        env = os.environ if environ is None else environ
        return cls(
            [
                _Source(options or {}, option_name),
                _Source(configured or {}, lambda key: f"{configured_by}.{key}"),
                _Source(table, lambda key: f"{path} [tool.retrieval_kernel] {key}"),
                _Source(
                    {key: env[name] for key, name in ENV_VARS.items() if env.get(name, "").strip()},
                    lambda key: f"environment variable {ENV_VARS[key]}",
                    text=True,
                ),
            ]
        )

    def value(self, key: str, default: Any = None) -> Any:
        """``key``'s value from the strongest source that sets it, checked; ``default`` when none does."""
        source = next((s for s in self.sources if s.values.get(key) is not None), None)
        return default if source is None else self._checked(source, key)

    def budget(self) -> Budget:
        """The budget from the strongest source naming either unit (one source may not name both)."""
        for source in self.sources:
            named = [key for key in BUDGET_KEYS if source.values.get(key) is not None]
            if len(named) > 1:
                raise BudgetError(
                    f"{source.where('max_bytes')} and {source.where('max_chars')} are both set: "
                    "the budget is one setting, give either max_bytes or max_chars, not both"
                )
            if named:
                budget: Budget = self._checked(source, named[0])
                return budget
        return DEFAULTS.budget

    def chroma(self) -> ChromaSettings:
        """Each Chroma key from its own strongest source."""
        return ChromaSettings(
            url=self.value("chroma", "embedded"),
            tenant=self.value("chroma_tenant"),
            database=self.value("chroma_database"),
            prefix=self.value("chroma_prefix", ""),
            timeout_s=self.value("chroma_timeout", DEFAULTS.chroma.timeout_s),
        ).checked()

    def settings(self) -> Settings:
        return Settings(
            notes_dir=self.value("notes_dir"),
            store_dir=self.value("store_dir"),
            as_of=self.value("as_of"),
            budget=self.budget(),
            top=self.value("top", DEFAULTS.top),
            refresh=self.value("refresh", DEFAULTS.refresh),
            scopes=self.value("scope", DEFAULTS.scopes),
            intent=self.value("intent", DEFAULTS.intent),
            refresh_mode=self.value("refresh_mode", DEFAULTS.refresh_mode),
            debounce=self.value("debounce", DEFAULTS.debounce),
            refresh_timeout=self.value("refresh_timeout"),
            chroma=self.chroma(),
            live=self.value("live", DEFAULTS.live),
            live_timeout=self.value("live_timeout", DEFAULTS.live_timeout),
        )

    @staticmethod
    def _checked(source: _Source, key: str) -> Any:
        value = source.values[key]
        try:
            return check_setting(key, value, source.text)
        except InputError as exc:
            located = copy.copy(exc)  # the same error class, with the key and the source in front
            located.args = (f"{source.where(key)} = {value!r}: {exc}",)
            raise located from None


def resolve_settings(
    options: Mapping[str, Any] | None = None,
    configured: Mapping[str, Any] | None = None,
    start: Path | None = None,
    environ: Mapping[str, str] | None = None,
    pyproject: PyprojectCache | None = None,
    configured_by: str = "%config ContextMagics",
) -> Settings:
    """The settings in force: option > ``%config`` > pyproject > environment > default, key by key.

    ``options`` are the magic's or CLI's flags and ``configured`` the ``%config`` traitlets
    (or another configurable's, named in errors by ``configured_by``),
    both by setting key (``None``: not set); the pyproject is the nearest one at or above
    ``start`` (default: the working folder), read through ``pyproject`` (a cache) when
    given; ``environ`` defaults to ``os.environ``. A bad value raises ``InputError``,
    ``BudgetError``, ``DateError`` or ``ChromaConfigError`` naming the key and where it was set.
    """
    return _Resolver.gather(options, configured, start, environ, pyproject, configured_by=configured_by).settings()


def resolve_chroma(
    chroma: str | ChromaSettings | None = None,
    start: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ChromaSettings:
    """The Chroma settings for ``Workspace(chroma=...)``: a :class:`ChromaSettings` as given (checked);
    else ``chroma`` as the option and each other Chroma key by the same precedence as
    :func:`resolve_settings` (only the Chroma keys are read)."""
    if isinstance(chroma, ChromaSettings):
        return chroma.checked()
    resolver = _Resolver.gather(
        {"chroma": chroma}, None, start, environ, None, option_name=lambda key: f"Workspace({key}=...)"
    )
    return resolver.chroma()


def default_store_dir(notes_root: Path) -> Path:
    """``.retrieval_kernel/`` inside the notes root, or a per-root cache folder if that is read-only."""
    beside = notes_root / STORE_FOLDER
    if (beside.is_dir() and os.access(beside, os.W_OK)) or os.access(notes_root, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(notes_root.resolve()).encode()).hexdigest()[:16]
    return cache / "retrieval_kernel" / f"{notes_root.name}-{key}"
