"""Applicability selection: from broadly retrieved lessons, the smallest set that applies.

Retrieval finds related notes; this package decides which of them apply to the task
(seed 001, "Groundtrack"). The pipeline, one module per step:

1. **Retrieve broadly** (:mod:`.retrieve`): the workspace lanes, fused by rank, give up to
   :data:`~retrieval_kernel.pipeline.requests.CANDIDATE_POOL` passages; passages are grouped
   by note (a note is a *record*), in the order of each note's best passage.
2. **Claim capsules** (:mod:`.capsules`): each record carries the capsule its front matter
   declares (``claims``, ``applies_when``, ``status``, ``superseded_by``, ``rule``,
   ``critical``, ``evidence``, ``kind``), copied as written, never rewritten.
3. **Conditions** (:mod:`.conditions`): the caller states conditions (``--when key=value``);
   values are also matched in the query text by the rule of :func:`conditions_from_text`.
4. **Selection** (:class:`RuleSelector` in :mod:`.rule`, deterministic): hard rules first
   (diagnostic notes without claims, contradicting conditions, superseded and disputed
   advice unless the intent is ``audit``), then an applicability score per remaining
   record (:mod:`.scoring`): ``sigmoid(bias + weights . features)`` over :data:`FEATURES`
   (dense cosines with the query and its parts, BM25F ratio to the best candidate, how much
   of the query and of its best part the capsule and body cover, condition state, fused
   rank). Records are visited by score: nothing is kept when the best is below
   ``min_first`` (an honest empty answer) unless it is also the dense lane's clear leader
   (``lead_cosine``, ``lead_margin``: a far-phrased question), kept alone; a further record needs ``min_keep`` (and
   ``min_ratio`` of the best score) and must newly cover at least ``min_gain`` of the
   query's weighted words (a new *need*); one record per ``rule``; at most
   ``max_records``. Kept records whose conditions match come first, then universal ones,
   then those with unknown conditions (flagged ``unknown_condition``).

The result is an :class:`ApplicabilitySelection` (:mod:`.selection`; rendered by
:mod:`retrieval_kernel.output.selection_render`). A :class:`JudgeSelector` (:mod:`.judge`)
wraps any user-supplied judge (for example an LLM call) with a time budget and falls back
to the rule selector when the judge is late or fails. Weights and thresholds
(:mod:`.calibration`) come from ``selector_calibration.json``, written by
``scripts/calibrate_selector.py`` from the lessons suite's calibration split only.
Selection runs in milliseconds: the candidates' words are analysed when they are built
(with retrieval), so selection only compares sets and sums weights.
"""

from .calibration import CALIBRATION_FILE, FEATURES, Thresholds, calibration_data
from .capsules import CandidateRecord, Capsule, PassageRef, group_candidates
from .conditions import check_conditions, conditions_from_text, parse_conditions, task_conditions
from .judge import JudgeSelector
from .packet import select_packet
from .retrieve import retrieve_candidates, select_applicable
from .rule import RuleSelector, eligible_candidates, pick
from .scoring import attach_clause_cosines, clause_texts, score_candidates
from .selection import (
    BELOW_THRESHOLD,
    CONTRADICTING_CONDITION,
    DIAGNOSTIC_NO_CLAIMS,
    DISPUTED,
    DUPLICATE_RULE,
    SUPERSEDED,
    UNKNOWN_CONDITION,
    ApplicabilitySelection,
    RejectedCandidate,
    SelectedRecord,
    Selector,
)

__all__ = [
    "BELOW_THRESHOLD",
    "CALIBRATION_FILE",
    "CONTRADICTING_CONDITION",
    "DIAGNOSTIC_NO_CLAIMS",
    "DISPUTED",
    "DUPLICATE_RULE",
    "FEATURES",
    "SUPERSEDED",
    "UNKNOWN_CONDITION",
    "ApplicabilitySelection",
    "CandidateRecord",
    "Capsule",
    "JudgeSelector",
    "PassageRef",
    "RejectedCandidate",
    "RuleSelector",
    "SelectedRecord",
    "Selector",
    "Thresholds",
    "attach_clause_cosines",
    "calibration_data",
    "check_conditions",
    "clause_texts",
    "conditions_from_text",
    "eligible_candidates",
    "group_candidates",
    "parse_conditions",
    "pick",
    "retrieve_candidates",
    "score_candidates",
    "select_applicable",
    "select_packet",
    "task_conditions",
]
