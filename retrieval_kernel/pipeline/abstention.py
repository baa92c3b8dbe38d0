"""Why a packet has nothing to show, decided before assembly: an empty store, no lane, a bare word, no match."""

from __future__ import annotations

from ..projections.lexical import LexicalProjection, analyze
from ..store.records import RecordStore
from .answerability import content_terms
from .lanes import LaneRun
from .scope import ScopeView

# Abstention reason codes.
ABSTAIN_EMPTY_STORE = "empty_store"
ABSTAIN_UNDERSPECIFIED = "underspecified_query"
ABSTAIN_NO_MATCH = "no_match"
ABSTAIN_BELOW_THRESHOLD = "below_threshold"
ABSTAIN_UNAVAILABLE = "index_unavailable"
ABSTAIN_FILTERED_BY_SCOPE = "filtered_by_scope"

# A one-word query is underspecified when the word is this generic, or when it
# occurs in at least GENERIC_PASSAGE_FRACTION of the passages (and there are at least
# GENERIC_MIN_PASSAGES to judge by). An exact identifier is never underspecified.
GENERIC_WORDS = frozenset(
    [
        "info",
        "information",
        "help",
        "notes",
        "note",
        "details",
        "detail",
        "policy",
        "policies",
        "thing",
        "things",
        "stuff",
        "question",
        "questions",
        "update",
        "updates",
        "status",
        "overview",
        "summary",
        "docs",
        "documentation",
    ]
)
GENERIC_PASSAGE_FRACTION = 0.5
GENERIC_MIN_PASSAGES = 8


def abstention_reason(
    query: str,
    runs: dict[str, LaneRun],
    view: ScopeView,
    scope_filtered: int,
    records: RecordStore,
    lexical: LexicalProjection,
) -> str | None:
    """The reason to abstain before ranking, or ``None`` when some lane proposed a candidate."""
    if records.passage_count() == 0:
        return ABSTAIN_EMPTY_STORE
    if all(run.report.status == "unavailable" for run in runs.values()):
        return ABSTAIN_UNAVAILABLE
    named = "identity" in runs and bool(runs["identity"].ranking)
    if not named and underspecified(query, view, records, lexical):
        return ABSTAIN_UNDERSPECIFIED
    if any(run.ranking for run in runs.values()):
        return None
    if scope_filtered:
        return ABSTAIN_FILTERED_BY_SCOPE
    if any(run.below_threshold for run in runs.values()):
        return ABSTAIN_BELOW_THRESHOLD
    return ABSTAIN_NO_MATCH


def underspecified(query: str, view: ScopeView, records: RecordStore, lexical: LexicalProjection) -> bool:
    """Only stop words and question words, or one generic word (by the fixed list, or found in most passages)."""
    terms = set(content_terms(query))
    if len(terms) != 1:
        return not terms
    words = [word.lower().strip("?!.,;:'\"") for word in query.split()]
    if any(word in GENERIC_WORDS for word in words if analyze(word)):
        return True
    term = terms.pop()
    visible = records.passage_count() - len(view.hidden)  # hidden passages never count
    hidden_with = sum(term in analyze(sp.passage.text) for sp in records.passages(view.hidden).values())
    with_term = lexical.passages_with(term) - hidden_with
    return visible >= GENERIC_MIN_PASSAGES and with_term >= GENERIC_PASSAGE_FRACTION * visible
