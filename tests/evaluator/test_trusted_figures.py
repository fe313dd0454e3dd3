"""The trusted figures' pure rules: the figures of a row agree, and the trusted-clock slack scales with the host
floor measured by the trusted baseline process."""

from __future__ import annotations

import pytest

from evaluator.integrity import HOST_SLACK_MS, INCONSISTENT_FIGURES, consistency_hold, trusted_clock_hold
from evaluator.trusted_baseline import FLOOR_FACTOR, host_slack_ms

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


def test_the_in_process_latency_ranks_only_within_the_trusted_clocks_margin():
    """The trusted-clock bound on figures measured on the H200 (docs/runs/integrity/h200-2026-12-02h and -03): honest
    kernels keep their in-process median; a lower in-process figure is raised to the trusted floor. Mutation
    caught: the bound's allowance set to the trusted-clock hold's slack (3 host floors), which let the 0.8x timer of
    harness_timer_scaled rank on the H200."""
    from evaluator.performance import BOUND_EXTRA_MS, TRUSTED_BOUND_MARGIN, bound_by_trusted_clock, trusted_floor_ms
    from evaluator.verdict import LATENCY_FROM_CANDIDATE_TIMER, LATENCY_FROM_TRUSTED_BOUND, Performance

    honest = [
        (0.444, 0.503, 0.031),
        (0.819, 0.869, 0.027),
        (12.943, 13.042, 0.057),
        (4.153, 4.282, 0.0),
        (3.010, 3.091, 0.044),
        (1.937, 1.996, 0.050),
        (0.783, 0.983, 0.176),  # harness_slow_baseline's SIMT GEMM, honest but for its payload (2026-12-03)
        (0.0739, 0.2188, 0.145),  # triton_harness_slow_baseline's Triton GEMM, likewise
    ]
    for reported, trusted, floor in honest:
        perf = Performance(latency_ms=reported, baseline_latency_ms=0.744, speedup_factor=0.744 / reported)
        assert not bound_by_trusted_clock(perf, trusted, floor, flops=None, peak=None)
        assert perf.latency_ms == reported and perf.latency_from == LATENCY_FROM_CANDIDATE_TIMER
        assert perf.in_process_latency_ms == reported

    # The corpus entry harness_timer_scaled on the H200 (docs/runs/integrity/h200-2026-12-03): the timer read 0.8x,
    # 0.635 ms in process, 0.994 ms by the parent's clock, host floor 0.151 ms.
    perf = Performance(latency_ms=0.635, baseline_latency_ms=0.028, speedup_factor=0.028 / 0.635, tflops=100.0)
    assert bound_by_trusted_clock(perf, 0.994, 0.151, flops=1e9, peak=1000.0)
    floor = trusted_floor_ms(0.994, 0.151)
    assert floor == pytest.approx((0.994 - 0.151 - BOUND_EXTRA_MS) / TRUSTED_BOUND_MARGIN)
    assert perf.latency_ms == pytest.approx(floor) and perf.latency_from == LATENCY_FROM_TRUSTED_BOUND
    assert perf.in_process_latency_ms == 0.635
    assert perf.speedup_factor == pytest.approx(0.028 / floor)
    assert perf.tflops == pytest.approx(1e9 / (floor * 1e-3) / 1e12)
    assert (
        consistency_hold(
            latency_ms=perf.latency_ms,
            baseline_latency_ms=perf.baseline_latency_ms,
            speedup=perf.speedup_factor,
            tflops=perf.tflops,
            flops=1e9,
        )
        is None
    )
