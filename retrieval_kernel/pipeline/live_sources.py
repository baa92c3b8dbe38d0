"""Systems of record a live check can read: a JSON file, a command that prints JSON, an HTTP endpoint.

Each answers with the JSON document :class:`~.live.Snapshot` reads, within its time
limit (``timeout`` seconds; a command is killed with its whole process group, an HTTP
request is abandoned). A source is named in settings by one string (:func:`live_source`)::

    orders.json                    a JSON file (``file:orders.json`` too)
    cmd:python scripts/owners.py   a command; its standard output is the JSON
    https://sor.example/values     an HTTP(S) endpoint answering GET with the JSON
                                   (``https://user:password@host/...`` sends Basic credentials)
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import signal
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..errors import LiveSourceError, LiveTimeoutError
from .live import LiveResult, Snapshot

DEFAULT_LIVE_TIMEOUT = 2.0  # seconds a source may take to answer
MAX_LIVE_TIMEOUT = 600.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a larger answer is refused, not parsed
COMMAND_PREFIX, FILE_PREFIX = "cmd:", "file:"
_T = TypeVar("_T")


class SystemOfRecord:
    """A live source: ``fetch()`` reads its current values once; ``check(asserts)`` compares a note's."""

    kind = "source"

    def __init__(self, location: str, name: str | None, timeout: float) -> None:
        self.location = location
        self.name = name or location
        self.timeout = checked_timeout(timeout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r}, name={self.name!r}, timeout={self.timeout})"

    def read(self) -> bytes:
        """The raw answer; ``LiveSourceError`` when it cannot be had, ``LiveTimeoutError`` when late."""
        raise NotImplementedError

    def fetch(self) -> Snapshot:
        """The source's current values (read now)."""
        raw = self.read()
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise LiveSourceError(f"system of record {self.location} cannot be read as JSON: {exc}") from None
        return Snapshot.parse(data, self.name, self.location)

    def check(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        return self.fetch().compare(asserts)


class JsonSystemOfRecord(SystemOfRecord):
    """A JSON file of current values, read afresh at every check. Its name: the file's ``name``, else its stem."""

    kind = "file"

    def __init__(self, path: str | Path, name: str | None = None, timeout: float = DEFAULT_LIVE_TIMEOUT) -> None:
        self.path = Path(path)
        super().__init__(str(self.path), name or _declared_name(self.path) or self.path.stem, timeout)

    def read(self) -> bytes:
        try:
            return within(self.timeout, self.path.read_bytes, f"reading {self.path}")
        except OSError as exc:
            raise LiveSourceError(f"system of record {self.path} cannot be read as JSON: {exc}") from None


class CommandSystemOfRecord(SystemOfRecord):
    """A command whose standard output is the JSON document; killed (with its children) past the limit."""

    kind = "command"

    def __init__(
        self, command: str | list[str], name: str | None = None, timeout: float = DEFAULT_LIVE_TIMEOUT
    ) -> None:
        try:
            self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        except ValueError as exc:  # an unclosed quote
            raise LiveSourceError(f"live source command {command!r} cannot be split into words: {exc}") from None
        if not self.argv:
            raise LiveSourceError("a command live source needs a command, e.g. 'cmd:python owners.py'")
        shown = command if isinstance(command, str) else shlex.join(command)
        super().__init__(shown, name or Path(self.argv[0]).name, timeout)

    def read(self) -> bytes:
        try:
            process = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: a timeout kills the children too
            )
        except OSError as exc:
            raise LiveSourceError(f"live source command {self.location!r} cannot start: {exc}") from None
        try:
            out, err = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise LiveTimeoutError(
                f"live source command {self.location!r} gave no answer within {self.timeout:g} s (killed)"
            ) from None
        if process.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-300:]
            raise LiveSourceError(
                f"live source command {self.location!r} exited with status {process.returncode}"
                + (f": {tail}" if tail else "")
            )
        if len(out) > MAX_ANSWER_BYTES:
            raise LiveSourceError(f"live source command {self.location!r} answered more than {MAX_ANSWER_BYTES} bytes")
        return out


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):  # already gone, or no process groups
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # a child that escaped its group keeps the pipe
        process.communicate(timeout=1.0)


class HttpSystemOfRecord(SystemOfRecord):
    """An HTTP(S) endpoint answering ``GET`` with the JSON document; abandoned past the limit."""

    kind = "http"

    def __init__(self, url: str, name: str | None = None, timeout: float = DEFAULT_LIVE_TIMEOUT) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise LiveSourceError(f"a live source URL must be http(s)://host[:port]/path, not {_shown(url)!r}")
        # credentials in the URL go in a Basic Authorization header; packets and messages never show the password
        self.url = urllib.parse.urlunsplit(parsed._replace(netloc=parsed.netloc.rsplit("@", 1)[-1]))
        self.headers = {"Accept": "application/json"}
        if parsed.username is not None:
            user = urllib.parse.unquote(parsed.username)
            password = urllib.parse.unquote(parsed.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {token}"
        super().__init__(_shown(url), name or parsed.hostname, timeout)

    def read(self) -> bytes:
        return within(self.timeout, self._get, f"GET {self.location}")

    def _get(self) -> bytes:
        request = urllib.request.Request(self.url, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body: bytes = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise LiveSourceError(f"live source {self.location} answered HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
                late = f"live source {self.location} gave no answer within {self.timeout:g} s"
                raise LiveTimeoutError(late) from None
            raise LiveSourceError(f"live source {self.location} cannot be reached: {exc}") from None
        if len(body) > MAX_ANSWER_BYTES:
            raise LiveSourceError(f"live source {self.location} answered more than {MAX_ANSWER_BYTES} bytes")
        return body


def _shown(url: str) -> str:
    """``url`` with any password in it replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def within(seconds: float, work: Callable[[], _T], what: str) -> _T:
    """``work()``'s result if it finishes within ``seconds`` (else ``LiveTimeoutError``; the worker thread is
    left to end on its own: its socket or file has the same limit). Its exceptions pass through."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"live-source: {what}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise LiveTimeoutError(f"live source: no answer within {seconds:g} s ({what})")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _declared_name(path: Path) -> str | None:
    """The ``name`` the system-of-record file gives itself, if it can be read now."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return str(name) if isinstance(name, str) and name.strip() else None


def checked_timeout(seconds: Any) -> float:
    """A live source's time limit in seconds: a number above 0, at most MAX_LIVE_TIMEOUT."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= MAX_LIVE_TIMEOUT:
        raise LiveSourceError(
            f"a live source's time limit must be more than 0 and at most {MAX_LIVE_TIMEOUT:g} s, not {seconds!r}"
        )
    return float(seconds)


def checked_spec(spec: Any) -> str:
    """A live source named by one string, checked without reading it; ``LiveSourceError`` when malformed."""
    kind, target = parse_spec(spec)
    if kind == "command":
        CommandSystemOfRecord(target)
    elif kind == "http":
        HttpSystemOfRecord(target)
    return str(spec).strip()


def parse_spec(spec: Any) -> tuple[str, str]:
    """``(kind, target)`` of a source string: ``("file", path)``, ``("command", command)`` or ``("http", url)``."""
    if not isinstance(spec, str) or not spec.strip():
        raise LiveSourceError(f"a live source is a JSON file path, 'cmd:COMMAND' or an http(s):// URL, not {spec!r}")
    text = spec.strip()
    if text.startswith(COMMAND_PREFIX):
        return "command", text[len(COMMAND_PREFIX) :].strip()
    scheme = urllib.parse.urlsplit(text).scheme.lower()
    if scheme in ("http", "https"):
        return "http", text
    if len(scheme) > 1 and scheme != FILE_PREFIX[:-1]:  # one letter: a Windows drive
        raise LiveSourceError(
            f"live source {text!r}: unknown scheme {scheme!r}; use a file path, 'cmd:...' or http(s)://"
        )
    return "file", text.removeprefix(FILE_PREFIX)


def file_spec(spec: str, base: Path) -> str:
    """``spec`` with a relative JSON file path made relative to ``base`` (other sources unchanged)."""
    kind, target = parse_spec(spec)
    path = Path(target).expanduser()
    return spec if kind != "file" or path.is_absolute() else f"{FILE_PREFIX}{base / path}"


def live_source(spec: Any, timeout: float = DEFAULT_LIVE_TIMEOUT, base: Path | None = None) -> SystemOfRecord:
    """The source ``spec`` names (see the module docstring); a relative file is taken relative to ``base``."""
    kind, target = parse_spec(spec)
    if kind == "command":
        return CommandSystemOfRecord(target, timeout=timeout)
    if kind == "http":
        return HttpSystemOfRecord(target, timeout=timeout)
    path = Path(target).expanduser()
    return JsonSystemOfRecord(path if path.is_absolute() or base is None else base / path, timeout=timeout)


def live_sources(specs: tuple[str, ...], timeout: float, base: Path | None = None) -> tuple[SystemOfRecord, ...]:
    """Every source the settings name, each with ``timeout``."""
    return tuple(live_source(spec, timeout, base) for spec in specs)
