"""The public surface of ``retrieval_kernel``: what ``import *`` gives and what it is."""

from __future__ import annotations

import inspect

import retrieval_kernel

PUBLIC = [
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


def test_every_exception_of_the_tree_is_public_and_one_family() -> None:
    from retrieval_kernel import errors

    tree = [obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, Exception)]
    assert sorted(cls.__name__ for cls in tree) == sorted(n for n in PUBLIC if n.endswith("Error"))
    assert all(issubclass(cls, retrieval_kernel.RetrievalKernelError) for cls in tree)
    assert all(getattr(retrieval_kernel, cls.__name__) is cls for cls in tree)


def test_no_exception_is_defined_outside_errors() -> None:
    import importlib
    import pkgutil

    stray = []
    for info in pkgutil.walk_packages(retrieval_kernel.__path__, "retrieval_kernel."):
        if info.name == "retrieval_kernel.errors":
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            ours = inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == info.name
            if ours and not name.startswith("_"):  # a private signal inside one function is not part of the tree
                stray.append(f"{info.name}.{name}")
    assert stray == []


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
