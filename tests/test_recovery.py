"""Every fault of the recovery suite, caused for real on a disposable copy (see evaluation/recovery.py)."""

from __future__ import annotations

import pytest

from retrieval_kernel.evaluation.recovery import SCENARIOS, run_scenario


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_recovery_scenario(name: str) -> None:
    result = run_scenario(name)
    failed = [check for check in result.checks if not check["ok"]]
    assert result.error is None, result.error
    assert result.checks, "a scenario that checks nothing proves nothing"
    assert not failed, failed
