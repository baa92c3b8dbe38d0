"""retrieval_kernel: cited, budgeted evidence packets from your project notes, in Jupyter.

``%load_ext retrieval_kernel`` registers the ``%context`` magics; from Python use
:class:`Workspace` (index and query a notes folder) and the :class:`Packet` it returns;
:func:`select_packet` returns the packet of only the records that apply (applicability selection;
:func:`select_applicable` gives the bare selection).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .applicability import (
    ApplicabilitySelection,
    JudgeSelector,
    RejectedCandidate,
    RuleSelector,
    SelectedRecord,
    select_applicable,
    select_packet,
)
from .errors import (
    BudgetError,
    BudgetTooSmallError,
    ChromaConfigError,
    ChromaServerError,
    CorruptStoreError,
    DateError,
    EmbeddedStoreUnreadableError,
    EmptyQueryError,
    FrontMatterError,
    FrozenInputChangedError,
    InputError,
    LaneUnavailableError,
    LexicalUnreadableError,
    LiveSourceError,
    LiveTimeoutError,
    NotConfiguredError,
    NotebookError,
    NoteDecodeError,
    NoteError,
    NotesDirError,
    OutsideRootError,
    QueryTooLongError,
    RefreshBusyError,
    RefreshTimeoutError,
    RetrievalKernelError,
    ScopeError,
    StaleCollectionError,
    StoreError,
    SuiteError,
    UnknownPassageError,
)
from .output.grounding import check_grounding
from .output.packet import Budget, Conflict, Evidence, Packet
from .output.verify import verify_packet
from .pipeline.live_sources import CommandSystemOfRecord, HttpSystemOfRecord, JsonSystemOfRecord
from .pipeline.workspace import Workspace

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .explorer import Explorer

__version__ = "0.1.0"
__all__ = [
    "ApplicabilitySelection",
    "Budget",
    "BudgetError",
    "BudgetTooSmallError",
    "ChromaConfigError",
    "ChromaServerError",
    "CommandSystemOfRecord",
    "Conflict",
    "CorruptStoreError",
    "DateError",
    "EmbeddedStoreUnreadableError",
    "EmptyQueryError",
    "Evidence",
    "Explorer",
    "FrontMatterError",
    "FrozenInputChangedError",
    "HttpSystemOfRecord",
    "InputError",
    "JsonSystemOfRecord",
    "JudgeSelector",
    "LaneUnavailableError",
    "LexicalUnreadableError",
    "LiveSourceError",
    "LiveTimeoutError",
    "NotConfiguredError",
    "NoteDecodeError",
    "NoteError",
    "NotebookError",
    "NotesDirError",
    "OutsideRootError",
    "Packet",
    "QueryTooLongError",
    "RefreshBusyError",
    "RefreshTimeoutError",
    "RejectedCandidate",
    "RetrievalKernelError",
    "RuleSelector",
    "ScopeError",
    "SelectedRecord",
    "StaleCollectionError",
    "StoreError",
    "SuiteError",
    "UnknownPassageError",
    "Workspace",
    "__version__",
    "check_grounding",
    "load_ipython_extension",
    "select_applicable",
    "select_packet",
    "verify_packet",
]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the ``%context`` magics (``%load_ext retrieval_kernel``)."""
    from .magics import ContextMagics, route_context_lines
    from .projections.embedding import warm_up_in_background

    ipython.register_magics(ContextMagics)
    transforms = ipython.input_transformer_manager.line_transforms
    if route_context_lines not in transforms:
        transforms.append(route_context_lines)
    warm_up_in_background(import_chroma=_chroma_server_configured())  # what a first %context would wait for


def _chroma_server_configured() -> bool:
    """Whether the settings in force here name a Chroma server (a bad setting: left for %context to report)."""
    from .settings import resolve_chroma

    try:
        return not resolve_chroma().embedded
    except Exception:
        return False


def __getattr__(name: str) -> object:
    """``Explorer`` imports ipywidgets, so it loads on first use, not with the package."""
    if name == "Explorer":
        from .explorer import Explorer

        return Explorer
    raise AttributeError(f"module 'retrieval_kernel' has no attribute {name!r}")
