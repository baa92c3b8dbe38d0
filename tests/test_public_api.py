"""The public surface of ``retrieval_kernel``: what ``import *`` gives and what it is."""

from __future__ import annotations

import inspect

import retrieval_kernel

PUBLIC = [
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


def test_all_is_pinned_and_sorted() -> None:
    assert retrieval_kernel.__all__ == PUBLIC
    assert sorted(retrieval_kernel.__all__) == retrieval_kernel.__all__


def test_every_public_name_exists() -> None:
    missing = [name for name in retrieval_kernel.__all__ if not hasattr(retrieval_kernel, name)]
    assert missing == []


def test_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from retrieval_kernel import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == PUBLIC


def test_public_names_are_what_they_claim() -> None:
    assert issubclass(retrieval_kernel.RetrievalKernelError, Exception)
    assert inspect.isclass(retrieval_kernel.Workspace)
    assert inspect.isclass(retrieval_kernel.Packet)
    assert inspect.isclass(retrieval_kernel.Evidence)
    assert callable(retrieval_kernel.load_ipython_extension)
    assert callable(retrieval_kernel.check_grounding)
    assert inspect.isclass(retrieval_kernel.JsonSystemOfRecord)
    assert inspect.isclass(retrieval_kernel.Conflict)
    assert inspect.isclass(retrieval_kernel.Explorer)
    assert list(inspect.signature(retrieval_kernel.load_ipython_extension).parameters) == ["ipython"]
    assert retrieval_kernel.__version__ == "0.1.0"
