"""Where the dense projection's vectors live: embedded Chroma, or a Chroma server.

``embedded`` (the default) is a ``PersistentClient`` under ``STORE/dense``.
``http://host:port`` is Chroma's ``HttpClient`` against a server a team runs
(``chroma run --path DIR --port 8000``), with an optional tenant and database
and a collection-name prefix, so several projects can share one server.

Which one, and the tenant, database, prefix and timeout, are settings (``chroma``,
``chroma_tenant``, ``chroma_database``, ``chroma_prefix``, ``chroma_timeout``) chosen with
every other setting's precedence in :mod:`retrieval_kernel.settings`; this module only
checks and uses the chosen :class:`ChromaSettings`.

Telemetry is off in both modes. The HTTP path has timeouts; a connection failure
is retried with exponential backoff, a timeout is not (a slow server is reported,
not waited on again). After any failure the client is dropped, so the next call
reconnects: a restarted server is picked up without restarting the kernel.
Chroma is imported only inside functions, after :func:`go_offline`.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..errors import (
    ChromaConfigError,
    ChromaServerError,
    EmbeddedStoreUnreadableError,
)
from .embedding import go_offline, import_chromadb_quickly

EMBEDDED = "embedded"
DEFAULT_PORT = 8000
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_RETRIES = 2  # tries after the first, for connection failures only
DEFAULT_BACKOFF_S = 0.2  # first wait; doubled for each further try
HEARTBEAT_PATH = "/api/v2/heartbeat"
# Chroma's own rule for collection names: 3-512 of [a-zA-Z0-9._-], alphanumeric at both ends.
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")

T = TypeVar("T")


@dataclass(frozen=True)
class ChromaSettings:
    """Embedded Chroma (``url`` is ``None``) or a server at ``url``, and how to talk to it."""

    url: str | None = None
    tenant: str | None = None
    database: str | None = None
    prefix: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S

    @property
    def embedded(self) -> bool:
        return self.url is None

    def describe(self) -> str:
        """``embedded``, or the URL with tenant/database when they are not the defaults."""
        if self.url is None:
            return EMBEDDED
        where = "/".join(part for part in (self.tenant, self.database) if part)
        return f"{self.url} ({where})" if where else self.url

    def checked(self) -> ChromaSettings:
        """These settings with the URL normalised; ``ChromaConfigError`` when any part is malformed."""
        url = parse_url(self.url) if self.url is not None else None
        if self.prefix and not _PREFIX.fullmatch(self.prefix):
            raise ChromaConfigError(
                f"chroma_prefix {self.prefix!r} must be 1-63 of letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        for key, value in (("chroma_tenant", self.tenant), ("chroma_database", self.database)):
            if value is not None and not _NAME.fullmatch(value):
                raise ChromaConfigError(f"{key} {value!r} must be 1-63 of letters, digits, '.', '_' or '-'")
        if self.timeout_s <= 0 or self.retries < 0 or self.backoff_s < 0:
            raise ChromaConfigError("chroma timeout must be positive, retries and backoff not negative")
        return replace(self, url=url)


def parse_url(value: str) -> str | None:
    """``None`` for ``embedded``, else ``http(s)://host:port`` normalised; ``ChromaConfigError`` otherwise."""
    text = str(value).strip()
    if text.lower() == EMBEDDED:
        return None
    problem = f"chroma must be 'embedded' or a server URL like http://localhost:{DEFAULT_PORT}, not {value!r}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ChromaConfigError(f"{problem} ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ChromaConfigError(problem)
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ChromaConfigError(problem)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port or DEFAULT_PORT}"


# ---------------------------------------------------------------- the client


class ChromaConnection:
    """One Chroma client, made on first use and dropped after a failure (the next call reconnects)."""

    def __init__(self, settings: ChromaSettings, folder: Path) -> None:
        self.settings = settings
        self.folder = folder
        self._client: Any = None
        self.generation = 0  # bumped on every (re)connect: what was verified before may not hold now

    @property
    def embedded(self) -> bool:
        return self.settings.embedded

    def client(self) -> Any:
        if self._client is None:
            self._client = open_embedded(self.folder) if self.settings.embedded else open_server(self.settings)
            self.generation += 1
        return self._client

    def call(self, what: str, operation: Callable[[Any], T]) -> T:
        """Run ``operation(client)``; on the HTTP path retry connection failures with backoff.

        A server failure drops the client, so the next call reconnects, and becomes
        :class:`ChromaServerError` naming the server and what was being done. Other errors
        (Chroma refusing a request, such as a missing collection) pass through unchanged.
        """
        if self.settings.embedded:
            return operation(self.client())
        tries = self.settings.retries + 1
        for attempt in range(tries):
            try:
                return operation(self.client())
            except Exception as exc:
                failure = self._server_failure(exc, what, attempt + 1)
                if failure is None:
                    raise
                self.reset()
                if not failure.retryable or attempt + 1 == tries:
                    raise failure from exc
            time.sleep(self.settings.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _server_failure(self, exc: Exception, what: str, tries: int) -> ChromaServerError | None:
        cause = exc.__cause__ if isinstance(exc, ChromaServerError) and exc.retryable else exc
        if isinstance(cause, BaseException) and is_connection_failure(cause):
            return ChromaServerError(_failure(self.settings, what, cause, tries), retryable=not is_timeout(cause))
        return exc if isinstance(exc, ChromaServerError) else None

    def reset(self) -> None:
        """Drop the client (closing it quietly); the next call reconnects."""
        client, self._client = self._client, None
        if client is not None and not self.settings.embedded:
            close_http_client(client)

    def close(self) -> None:
        self.reset()


def _failure(settings: ChromaSettings, what: str, exc: BaseException, tries: int) -> str:
    if is_timeout(exc):
        problem = f"did not answer within {settings.timeout_s:g} s"
    else:
        problem = f"is unreachable ({type(exc).__name__}: {exc})"
    after = "" if tries == 1 else f" after {tries} tries"
    return f"the Chroma server {settings.describe()} {problem}{after} while trying to {what}"


def is_timeout(exc: BaseException) -> bool:
    import httpx

    return isinstance(exc, httpx.TimeoutException)


def is_connection_failure(exc: BaseException) -> bool:
    """A transport failure (refused, reset, timed out), as opposed to Chroma refusing a request."""
    import httpx

    if isinstance(exc, httpx.TransportError | ConnectionError):
        return True
    return isinstance(exc, ValueError) and "Could not connect to a Chroma server" in str(exc)


def open_embedded(folder: Path) -> Any:
    """A ``PersistentClient`` under ``folder``, telemetry off."""
    go_offline()
    try:
        import_chromadb_quickly()  # under its lock: whole, whatever another thread is importing
        from chromadb import PersistentClient
        from chromadb.config import Settings

        folder.mkdir(parents=True, exist_ok=True)
        return PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False, allow_reset=True))
    except Exception as exc:
        raise EmbeddedStoreUnreadableError(f"cannot open the Chroma store at {folder}: {exc}") from exc


def forget_embedded(folder: Path) -> None:
    """Stop and forget this process's Chroma system for ``folder``.

    Chroma shares one system per persist directory within a process; after the folder
    is replaced on disk, the next client must not reuse the old one. (Uses Chroma's
    ``SharedSystemClient`` class registry, which has no public per-path eviction.)
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    key = str(folder)
    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    if system is not None:
        with contextlib.suppress(Exception):  # a damaged system may fail to stop cleanly; it is dropped either way
            system.stop()


def heartbeat(settings: ChromaSettings) -> float:
    """Seconds one heartbeat round trip took; ``ChromaServerError`` when the server does not answer."""
    import httpx

    assert settings.url is not None
    started = time.perf_counter()
    try:
        response = httpx.get(settings.url + HEARTBEAT_PATH, timeout=_timeout(settings))
    except httpx.HTTPError as exc:
        raise ChromaServerError(_failure(settings, "reach it (heartbeat)", exc, 1), retryable=True) from exc
    try:
        response.raise_for_status()
        int(response.json()["nanosecond heartbeat"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ChromaServerError(
            f"{settings.url} answered the heartbeat with HTTP {response.status_code} {response.text[:80]!r}: "
            "is it a Chroma server (1.x, API v2)?"
        ) from exc
    return time.perf_counter() - started


def open_server(settings: ChromaSettings) -> Any:
    """An ``HttpClient`` for ``settings.url`` with timeouts set, after a heartbeat shows the server is up."""
    heartbeat(settings)  # with a timeout: HttpClient's own first requests have none
    go_offline()
    import_chromadb_quickly()  # under its lock: whole, whatever another thread is importing
    import chromadb
    import httpx
    from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT, Settings

    assert settings.url is not None
    parts = urlsplit(settings.url)
    try:
        client = chromadb.HttpClient(
            host=parts.hostname or "localhost",
            port=parts.port or DEFAULT_PORT,
            ssl=parts.scheme == "https",
            settings=Settings(anonymized_telemetry=False),
            tenant=settings.tenant or DEFAULT_TENANT,
            database=settings.database or DEFAULT_DATABASE,
        )
    except Exception as exc:
        if is_connection_failure(exc):
            raise ChromaServerError(_failure(settings, "connect", exc, 1), retryable=True) from exc
        raise ChromaServerError(f"the Chroma server {settings.describe()} refused the connection: {exc}") from exc
    # chromadb's HTTP session has no timeout (it would wait forever on a hung server); chromadb is pinned,
    # and if this attribute ever moves we fail loudly rather than run without timeouts.
    for part in (client, getattr(client, "_admin_client", client)):  # each has its own HTTP session
        session = getattr(getattr(part, "_server", None), "_session", None)
        if not isinstance(session, httpx.Client):
            close_http_client(client)
            raise ChromaServerError("cannot set HTTP timeouts on this chromadb version's client; not running without")
        session.timeout = _timeout(settings)
    return client


def close_http_client(client: Any) -> None:
    """Close an ``HttpClient`` and its HTTP connections (chromadb's ``close`` leaves the sockets open)."""
    with contextlib.suppress(Exception):  # closing a client whose server is gone may fail; it is dropped anyway
        client.close()
    for part in (client, getattr(client, "_admin_client", None)):  # each has its own HTTP session
        session = getattr(getattr(part, "_server", None), "_session", None)
        if session is not None:
            session.close()


def _timeout(settings: ChromaSettings) -> Any:
    import httpx

    return httpx.Timeout(settings.timeout_s, connect=min(settings.timeout_s, 2.0))


# ---------------------------------------------------------------- a local server, for tests and benchmarks


def chroma_executable() -> Path:
    """The ``chroma`` command installed beside this interpreter."""
    return Path(sys.executable).parent / "chroma"


class LocalServer:
    """``chroma run --path PATH --host 127.0.0.1 --port PORT`` as a child process (tests, benchmarks)."""

    def __init__(self, path: Path, port: int, log: Path | None = None) -> None:
        self.path = path
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log or path.with_suffix(".log")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait_s: float = 30.0) -> LocalServer:
        """Start the server and wait for its heartbeat; ``ChromaServerError`` if it never answers."""
        command = [str(chroma_executable()), "run", "--path", str(self.path), "--host", "127.0.0.1"]
        environment = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT, env=environment
            )
        settings = ChromaSettings(url=self.url, timeout_s=1.0)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                heartbeat(settings)
                return self
            except ChromaServerError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    tail = self.log.read_text(errors="replace")[-2000:]
                    raise ChromaServerError(
                        f"the local Chroma server on port {self.port} did not start:\n{tail}"
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the server by its pid (terminate, then kill after 10 s)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
