"""The rule selector's parameters: feature names, default weights, and the calibration file.

:class:`Thresholds` holds the weights and thresholds; they are fitted on the lessons
suite's calibration split only by ``scripts/calibrate_selector.py``, which writes
``selector_calibration.json`` beside this module (:data:`CALIBRATION_FILE`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

CALIBRATION_FILE = Path(__file__).with_name("selector_calibration.json")

FEATURES = (
    "cosine",  # the record's best dense cosine with the query (0.3 when the dense lane did not propose it)
    "cosine_gap",  # the best cosine among the candidates minus this record's
    "lexical_ratio",  # its best BM25F score over the best candidate's (0 when the lexical lane did not find it)
    "capsule_coverage",  # share of the query's weighted words its capsule (title, claims, rule, conditions) holds
    "coverage",  # the same over capsule and body (body words count half)
    "clause_coverage",  # the best such share over the query's clauses (its parts)
    "clause_best",  # 1 when it covers some clause best of all eligible records
    "clause_cosine",  # its best dense cosine with one part of the query (the whole query's when single-part)
    "clause_cosine_best",  # 1 when no eligible record is closer (dense) to some part of the query
    "matched",  # 1 when its applies_when conditions all match the task's
    "unknown",  # 1 when some of its conditions are not stated by the task
    "rank_inverse",  # 1 / its place in the fused order
)
DEFAULT_WEIGHTS = (5.0, -8.0, 1.5, 2.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, -0.5, 0.5)
DEFAULT_BIAS = -4.0


@dataclass(frozen=True)
class Thresholds:
    """The rule selector's parameters (weights and thresholds fitted on the calibration split only).

    A record's applicability score is ``sigmoid(bias + weights . features)`` over
    :data:`FEATURES`. ``min_first``: the best record's score below which nothing
    applies; ``min_keep``: the score every further record needs; ``min_gain``: the
    share of the query's weighted words a further record must newly cover (0: off);
    ``max_records``: most records returned; ``body_weight``: how much a query word
    found only in a record's body counts toward coverage; ``min_ratio``: the share of
    the best record's score a further record needs; ``cover_margin``: a part of the
    question counts as answered when a kept record's part score is within this of the
    best eligible record's; ``min_part``: the part score a further record needs on the
    part it answers (:mod:`.needs`); ``part_lead``: the lead over the next record on a part
    that lets the record answering it be kept below ``min_keep``;
    ``min_other_context``: the score a record outside the question's context (the folder
    of its leading candidates) needs to be considered at all (above 1: never);
    ``lead_cosine`` and ``lead_margin``: when the best score is below ``min_first``, the best
    record is still kept alone when it is also the dense lane's clear leader: cosine at least
    ``lead_cosine`` and at least ``lead_margin`` above every other record (above 1: never).
    """

    weights: tuple[float, ...] = DEFAULT_WEIGHTS
    bias: float = DEFAULT_BIAS
    min_first: float = 0.5
    min_keep: float = 0.5
    min_gain: float = 0.0
    max_records: int = 6
    body_weight: float = 0.5
    min_ratio: float = 0.0
    cover_margin: float = 0.05
    min_part: float = 0.4
    part_lead: float = 1.0
    min_other_context: float = 1.0
    lead_cosine: float = 2.0
    lead_margin: float = 0.06

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise InputError(
                f"the selector needs {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(self.weights)}"
            )

    @classmethod
    def load(cls, path: str | Path | None = None) -> Thresholds:
        """The calibrated parameters from ``path`` (default: the packaged calibration file), else the defaults."""
        chosen = calibration_data(path).get("selector", {})
        known = {key: chosen[key] for key in cls.__dataclass_fields__ if key in chosen}
        if isinstance(known.get("weights"), Mapping):
            known["weights"] = tuple(float(known["weights"].get(name, 0.0)) for name in FEATURES)
        elif "weights" in known:
            known["weights"] = tuple(known["weights"])
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        data["weights"] = dict(zip(FEATURES, self.weights, strict=True))
        return data


def calibration_data(path: str | Path | None = None) -> dict[str, Any]:
    """The whole calibration file (chosen values and calibration metrics), or ``{}``."""
    try:
        data = json.loads(Path(path or CALIBRATION_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
