"""Every error the core raises, in one tree.

::

    RetrievalKernelError                 base: catch this to handle any of ours
    ├── InputError                       the caller asked for something we cannot do
    │   ├── EmptyQueryError              query is empty or whitespace
    │   ├── QueryTooLongError            query exceeds MAX_QUERY_CHARS
    │   ├── BudgetError                  budget unit/limit out of range
    │   │   └── BudgetTooSmallError      limit below the size of an empty packet
    │   ├── DateError                    an as-of date that does not parse
    │   ├── NotesDirError                notes root missing or not a directory
    │   ├── ScopeError                   a call asked for scopes wider than its server's
    │   ├── UnknownPassageError          no passage (or note) with that id is visible to the caller
    │   ├── OutsideRootError             a note path outside the Jupyter root and every served notes folder
    │   ├── NotConfiguredError           the Jupyter server extension has no notes folder to serve
    │   ├── ChromaConfigError            a malformed Chroma URL, tenant, database or prefix
    │   └── LiveSourceError              a system of record that cannot be read, or answers malformed JSON
    │       └── LiveTimeoutError         a system of record did not answer within its time limit
    ├── NoteError                        one note cannot be read (others still index)
    │   ├── NoteDecodeError              file is not valid UTF-8
    │   ├── FrontMatterError             front matter is not valid YAML / not a mapping
    │   └── NotebookError                a .ipynb file is not a readable Jupyter notebook
    ├── StoreError                       the record store cannot be opened or written
    │   ├── CorruptStoreError            the store file is damaged: `retrieval-kernel rebuild`
    │   ├── RefreshBusyError             another process is publishing a refresh
    │   └── RefreshTimeoutError          a refresh ran past its time limit
    ├── LaneUnavailableError             a lane cannot run (model/index missing or failing)
    │   ├── LexicalUnreadableError       the serving Whoosh index is missing or damaged (rebuilt)
    │   ├── StaleCollectionError         a Chroma collection does not match the record store
    │   ├── EmbeddedStoreUnreadableError the embedded Chroma folder is damaged (rebuilt)
    │   └── ChromaServerError            the Chroma server is down, slow or refused a request
    └── SuiteError                       an evaluation suite is malformed
        └── FrozenInputChangedError      frozen corpus/questions differ from the manifest

Adapters (magics, CLI) turn these into ``UsageError`` / exit codes; the core never
prints or exits.
"""

from __future__ import annotations


class RetrievalKernelError(Exception):
    """Base class of every error raised by retrieval_kernel."""


class InputError(RetrievalKernelError, ValueError):
    """The caller's input cannot be served as given."""


class EmptyQueryError(InputError):
    """The query is empty or only whitespace."""


class QueryTooLongError(InputError):
    """The query is longer than the accepted maximum."""


class BudgetError(InputError):
    """The budget's unit or limit is outside the accepted range."""


class BudgetTooSmallError(BudgetError):
    """The budget cannot hold even a packet without evidence."""

    def __init__(self, message: str, minimum: int) -> None:
        super().__init__(message)
        self.minimum = minimum


class DateError(InputError):
    """A date or datetime string could not be parsed."""


class NotesDirError(InputError):
    """The notes root does not exist or is not a directory."""


class ScopeError(InputError):
    """A call asked for scopes wider than the ones its server was launched with (it may only narrow them)."""


class UnknownPassageError(InputError):
    """No passage or note with that id is visible to the caller (hidden ones are reported the same way)."""


class OutsideRootError(InputError):
    """A note path that leaves the Jupyter server's root and is not a note of a folder the server serves."""


class NotConfiguredError(InputError):
    """The Jupyter server extension has no notes folder to serve (or its settings are bad)."""


class NoteError(RetrievalKernelError):
    """A single note could not be parsed; it is reported and skipped."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.detail = message


class NoteDecodeError(NoteError):
    """The note's bytes are not valid UTF-8."""


class FrontMatterError(NoteError):
    """The note's YAML front matter is malformed or not a mapping."""


class NotebookError(NoteError):
    """A ``.ipynb`` file in the notes folder is not a readable Jupyter notebook."""


class StoreError(RetrievalKernelError):
    """The record store cannot be opened, read or written."""


class CorruptStoreError(StoreError):
    """The record store file cannot be read; ``retrieval-kernel rebuild`` makes a new one from the notes."""


class RefreshBusyError(StoreError):
    """Another process (or thread) is publishing a refresh of this store right now."""


class RefreshTimeoutError(StoreError):
    """A refresh ran past its time limit; what it had not published is redone next time."""


class ChromaConfigError(InputError):
    """The Chroma setting (URL, tenant, database or prefix) is malformed."""


class LiveSourceError(InputError):
    """A live source (system of record) is misconfigured, cannot be read, or answers malformed JSON."""


class LiveTimeoutError(LiveSourceError):
    """A live source did not answer within its time limit; nothing it would have said is claimed."""


class LaneUnavailableError(RetrievalKernelError):
    """A retrieval lane cannot run; the others still answer and the packet says why."""


class LexicalUnreadableError(LaneUnavailableError):
    """The serving lexical index cannot be read (missing or damaged files)."""


class StaleCollectionError(LaneUnavailableError):
    """The Chroma collection does not match the record store; it is not searched (indexing rebuilds it)."""


class EmbeddedStoreUnreadableError(LaneUnavailableError):
    """The embedded Chroma folder cannot be opened (damaged files); it is derived data and can be rebuilt."""


class ChromaServerError(LaneUnavailableError):
    """The Chroma server is down, slow, or refused a request; the dense lane is unavailable."""

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable  # a connection failure, worth another try after a pause


class SuiteError(RetrievalKernelError):
    """An evaluation suite or question file is malformed."""


class FrozenInputChangedError(SuiteError):
    """A frozen evaluation input no longer matches its recorded sha256."""
