"""The server extension's settings: server config (``--RetrievalKernel.notes_dir=...``) over the nearest
pyproject's ``[tool.retrieval_kernel]`` (found from the server's root), the environment and the defaults,
by the same rules the magics use (:mod:`retrieval_kernel.settings`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from traitlets import List, Unicode
from traitlets.config import Configurable

from ..agents.service import ServerConfig
from ..settings import Settings, resolve_settings

NOT_CONFIGURED = (
    "no notes folder is configured for JupyterLab: set notes_dir in [tool.retrieval_kernel] of the "
    "pyproject.toml at or above the Jupyter root, or start Lab with --RetrievalKernel.notes_dir=PATH"
)


class RetrievalKernel(Configurable):
    """Server config; relative paths are taken relative to the server's root."""

    notes_dir = Unicode(None, allow_none=True, help="the notes folder the side panel asks").tag(config=True)
    store_dir = Unicode(None, allow_none=True, help="its store (default: .retrieval_kernel/ beside it)").tag(
        config=True
    )
    as_of = Unicode(None, allow_none=True, help="the clock for source ages, YYYY-MM-DD (default: today)").tag(
        config=True
    )
    scope = List(Unicode(), default_value=None, allow_none=True, help="the scopes the panel may see").tag(config=True)
    refresh_mode = Unicode(None, allow_none=True, help="on-query, watch or off").tag(config=True)
    extra_notes_dirs = List(
        Unicode(), help="more folders whose notes citations may open read-only when they are outside the root"
    ).tag(config=True)


def resolve(config: RetrievalKernel, root: Path) -> tuple[Settings, list[Path]]:
    """The settings in force for the server rooted at ``root``, and the extra notes folders."""
    configured: dict[str, Any] = {
        "notes_dir": _rooted(config.notes_dir, root),
        "store_dir": _rooted(config.store_dir, root),
        "as_of": config.as_of,
        "scope": list(config.scope) if config.scope is not None else None,
        "refresh_mode": config.refresh_mode,
    }
    settings = resolve_settings(None, configured, start=root, configured_by="RetrievalKernel")
    extra = [Path(_rooted(folder, root) or folder) for folder in config.extra_notes_dirs]
    return settings, extra


def server_config(settings: Settings) -> ServerConfig:
    """The EvidenceService's config for ``settings`` (``notes_dir`` must be set)."""
    assert settings.notes_dir is not None
    return ServerConfig(
        notes_dir=settings.notes_dir,
        store_dir=settings.store_dir,
        scopes=frozenset(settings.scopes),
        as_of=settings.as_of,
        chroma=settings.chroma,
        refresh=settings.refresh_mode,
        refresh_timeout=settings.refresh_timeout,
    )


def _rooted(value: str | None, root: Path) -> str | None:
    if value is None:
        return None
    return os.path.normpath(os.path.join(root, os.path.expanduser(value)))
