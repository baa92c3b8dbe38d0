"""retrieval_kernel: cited, budgeted evidence packets from your project notes, in Jupyter.

``%load_ext retrieval_kernel`` registers the ``%context`` magics; from Python use
:class:`Workspace` (index and query a notes folder) and the :class:`Packet` it returns;
:func:`select_applicable` returns only the records that apply (applicability selection).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .applicability import JudgeSelector, RuleSelector, select_applicable
from .errors import RetrievalKernelError
from .grounding import check_grounding
from .live import JsonSystemOfRecord
from .packet import Conflict, Evidence, Packet
from .workspace import Workspace

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .explorer import Explorer

__version__ = "0.1.0"
__all__ = [
    "Conflict",
    "Evidence",
    "Explorer",
    "JsonSystemOfRecord",
    "JudgeSelector",
    "Packet",
    "RetrievalKernelError",
    "RuleSelector",
    "Workspace",
    "__version__",
    "check_grounding",
    "load_ipython_extension",
    "select_applicable",
]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the ``%context`` magics (``%load_ext retrieval_kernel``)."""
    from .magics import ContextMagics, route_context_lines

    ipython.register_magics(ContextMagics)
    transforms = ipython.input_transformer_manager.line_transforms
    if route_context_lines not in transforms:
        transforms.append(route_context_lines)


def __getattr__(name: str) -> object:
    """``Explorer`` imports ipywidgets, so it loads on first use, not with the package."""
    if name == "Explorer":
        from .explorer import Explorer

        return Explorer
    raise AttributeError(f"module 'retrieval_kernel' has no attribute {name!r}")
