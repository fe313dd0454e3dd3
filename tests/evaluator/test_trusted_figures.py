"""The trusted figures' pure rules: the figures of a row agree, and the trusted-clock slack scales with the host
floor measured by the trusted baseline process."""

from __future__ import annotations

from evaluator.checks.integrity import HOST_SLACK_MS, INCONSISTENT_FIGURES, consistency_hold, trusted_clock_hold
from evaluator.measure.trusted_baseline import FLOOR_FACTOR, host_slack_ms

GEMM_FLOPS = 2 * 8192 * 7168 * 5120


def test_one_measurement_agrees_with_itself():
    lat = 0.831
    tflops = GEMM_FLOPS / (lat * 1e-3) / 1e12
    hold = consistency_hold(
        latency_ms=lat, baseline_latency_ms=0.756, speedup=0.756 / lat, tflops=tflops, flops=GEMM_FLOPS
    )
    assert hold is None


def test_a_speedup_that_the_baseline_does_not_explain_is_held():
    """The issue's rank-1 row: 1.81x at the same 738 TFLOP/s as the honest 0.91x row. Mutation caught: dropping the
    speedup comparison from consistency_hold."""
    lat = 0.831
    tflops = GEMM_FLOPS / (lat * 1e-3) / 1e12
    hold = consistency_hold(latency_ms=lat, baseline_latency_ms=0.756, speedup=1.81, tflops=tflops, flops=GEMM_FLOPS)
    assert hold is not None and hold.code == INCONSISTENT_FIGURES and "1.81x" in hold.message


def test_throughput_that_the_latency_does_not_explain_is_held():
    hold = consistency_hold(latency_ms=0.831, baseline_latency_ms=None, speedup=None, tflops=1500.0, flops=GEMM_FLOPS)
    assert hold is not None and "TFLOP/s" in hold.message


def test_the_slack_scales_with_the_measured_host_floor_only_upwards():
    assert host_slack_ms(None) == HOST_SLACK_MS
    assert host_slack_ms(0.001) == HOST_SLACK_MS
    assert host_slack_ms(0.05) == FLOOR_FACTOR * 0.05


def test_a_busy_host_does_not_hold_a_small_honest_kernel_but_hidden_work_still_is():
    """A false hold to avoid: 0.171 ms outside vs 0.055 ms CUPTI on a busy host, where the trusted baseline's own
    calls showed ~0.1 ms of host cost each. Hidden work (the corpus' 241x) is held whatever the floor."""
    busy_floor = 0.1
    assert trusted_clock_hold(reported_ms=0.055, trusted_ms=0.171) is not None  # the fixed slack held it
    assert trusted_clock_hold(reported_ms=0.055, trusted_ms=0.171, slack_ms=host_slack_ms(busy_floor)) is None
    assert trusted_clock_hold(reported_ms=1.39, trusted_ms=335.5, slack_ms=host_slack_ms(busy_floor)) is not None
