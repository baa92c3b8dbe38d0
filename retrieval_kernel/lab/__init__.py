"""JupyterLab integration: a Jupyter server extension over the magics' ``Workspace``, and the prebuilt
labextension (``extension/`` in the repository, built into ``labextensions/retrieval-kernel-lab/``
here and installed under ``share/jupyter/labextensions/retrieval-kernel-lab``).

``jupyter server`` / ``jupyter lab`` load the server extension through
``etc/jupyter/jupyter_server_config.d/retrieval_kernel.json`` (installed with the package).
"""

from __future__ import annotations

from typing import Any

LABEXTENSION = "retrieval-kernel-lab"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "retrieval_kernel.lab"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": f"labextensions/{LABEXTENSION}", "dest": LABEXTENSION}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from .handlers import setup_handlers

    setup_handlers(serverapp)


def _unload_jupyter_server_extension(serverapp: Any) -> None:
    """Close the workspace (its worker thread, store and watcher) when the server stops."""
    service = serverapp.web_app.settings.get("retrieval_kernel")
    if service is not None:
        service.close()
