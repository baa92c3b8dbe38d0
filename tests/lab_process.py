"""A real Jupyter server (or JupyterLab) process for the tests: free loopback port, a token, the
retrieval_kernel server extension enabled and the labextension built in this checkout.

Used by tests/test_lab_server.py (handlers over HTTP), tests/test_lab_extension.py and tests/test_browser.py
(the browser: the Chromium they drive is named here too).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABEXTENSIONS = ROOT / "retrieval_kernel" / "lab" / "labextensions"  # `make setup` builds it here
TOKEN = "retrieval-kernel-test-token"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's, driven by Playwright (never `playwright install`)
CHROMIUM_ARGS = [  # this machine's network is closed: no background connections, no sandbox as root
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Server:
    url: str
    root: Path
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the Jupyter server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"the Jupyter server did not answer at {url} within {timeout} s")


@contextmanager
def jupyter(
    root: Path,
    app: str = "jupyter_server",
    options: Sequence[str] = (),
    env: dict[str, str] | None = None,
    token: str = TOKEN,
) -> Iterator[Server]:
    """Run ``python -m APP`` rooted at ``root`` until the block ends; its log is ``root/../server.log``."""
    port = free_port()
    log = root.parent / f"{app}-{port}.log"
    command = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        '--ServerApp.jpserver_extensions={"retrieval_kernel.lab": True}',
        *options,
    ]
    if app == "jupyterlab":
        command += [
            f"--LabApp.extra_labextensions_path={LABEXTENSIONS}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--LabApp.workspaces_dir={root.parent / f'workspaces-{port}'}",  # no layout restored from other runs
        ]
    environment = {**os.environ, "JUPYTER_RUNTIME_DIR": str(root.parent / f"rt-{port}"), **(env or {})}
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=root, env=environment, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, process, log)
            yield Server(url, root, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
