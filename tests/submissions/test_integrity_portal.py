"""Integrity holds and foreign kernels as the portal shows them: held (never ranked) with the reason, and
plain words in the agent-loop feedback."""

from __future__ import annotations

from portal.agent.feedback import verdict_feedback
from portal.core.verdict_record import parse_verdict
from portal.submissions.summary import summarise_verdict
from tests.support.verdicts import complete

HOLD = "the evaluator's own clock measured 0.8 ms per call, 100.0x the 0.008 ms the GPU timer reported"


def _verdict(status="PASSED", holds=(), workload_status="PASSED", message=""):
    return parse_verdict(complete({
        "status": status,
        "arch": "sm_90a",
        "arch_check": {"status": "absent", "reason": "no gmma"},
        "workloads": [
            {
                "uuid": "w1",
                "axes": {"M": 8192},
                "status": workload_status,
                "message": message,
                "performance": {"speedup_factor": 1.4, "latency_ms": 0.5, "speedup_ci95": [1.3, 1.5]},
            }
        ],
        "integrity": {"holds": [{"code": "host_time", "message": HOLD} for _ in holds]},
    }))  # fmt: skip


def test_a_passed_verdict_with_an_integrity_hold_is_held_with_its_reason():
    out = summarise_verdict(_verdict(holds=[1]), headline_workload="w1", plausible_speedup_max=3.0)
    assert out["review_state"] == "held"
    assert "integrity (host_time)" in out["review_reason"] and "100.0x" in out["review_reason"]
    clean = summarise_verdict(_verdict(), headline_workload="w1", plausible_speedup_max=3.0)
    assert clean["review_state"] == ""


def test_feedback_quotes_holds_and_the_timed_call_failure_plainly():
    text = verdict_feedback(_verdict(holds=[1]), speedup=1.4, target_speedup=1.0)
    assert "Held for review" in text and HOLD in text
    wrong = _verdict(
        status="INCORRECT_NUMERICAL",
        workload_status="INCORRECT_NUMERICAL",
        message="output of timed call 17 differs from the reference: 12 elements; results may not be reused",
    )
    assert "output of timed call 17 differs" in verdict_feedback(wrong, speedup=None, target_speedup=1.0)
    foreign = _verdict(
        status="FOREIGN_KERNEL",
        workload_status="FOREIGN_KERNEL",
        message="a candidate call ran a kernel not compiled from the submission (nvjet_sm90_tst_128x256)",
    )
    assert "nvjet_sm90_tst_128x256" in verdict_feedback(foreign, speedup=None, target_speedup=1.0)
