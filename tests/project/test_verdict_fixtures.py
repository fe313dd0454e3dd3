"""The verdicts portal tests build by hand are held to evaluator/verdict.schema.json (tests/support/verdicts.py):
a document the evaluator could not write fails the test that built it."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.verdicts import complete, validate


def test_a_partial_verdict_is_completed_in_the_evaluators_shape_and_valid():
    whole = complete({"status": "PASSED", "arch_check": {"status": "verified"}})
    assert whole["schema_version"] == 3 and whole["language"] == "cuda" and whole["integrity"] is None
    assert whole["arch_check"]["families"] == {} and whole["arch_check"]["status"] == "verified"
    assert validate(lf.verdict(status="INCORRECT_NUMERICAL", speedup=None))["status"] == "INCORRECT_NUMERICAL"


@pytest.mark.parametrize(
    ("partial", "says"),
    [
        ({"status": "FAST"}, "OverallStatus"),  # not a status the evaluator writes
        ({"status": "PASSED", "workloads": [{"uuid": "w", "axes": {}, "status": "PASSED", "speedup": 2}]}, "speedup"),
        ({"status": "PASSED", "held": True}, "held"),  # not a verdict field
        ({"status": "PASSED", "arch_check": {"status": "verified", "full": "yes"}}, "full"),
        ({"arch": "sm_90a"}, "Verdict.status"),  # the status has no default: a test must say it
    ],
)
def test_a_verdict_the_evaluator_could_not_write_fails_the_test_that_built_it(partial, says):
    with pytest.raises(AssertionError, match=says):
        complete(partial)
