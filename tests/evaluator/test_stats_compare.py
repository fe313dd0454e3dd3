"""Timing statistics and the output comparison rules (CPU tensors)."""

from __future__ import annotations

import pytest
import torch

from evaluator.both_sides.stats import bootstrap_speedup, merge_intervals, quantile, summarize
from evaluator.both_sides.verdict import Status
from evaluator.measure.compare import compare_output, worst


def test_summary_and_quantiles():
    s = summarize([4.0, 1.0, 3.0, 2.0, 5.0], method="cupti", warmup=10)
    assert (s.median_ms, s.q25_ms, s.q75_ms, s.iqr_ms, s.n) == (3.0, 2.0, 4.0, 2.0, 5)
    assert s.samples_ms == [4.0, 1.0, 3.0, 2.0, 5.0]
    assert quantile([1.0, 2.0], 0.5) == 1.5
    with pytest.raises(ValueError):
        summarize([], method="cupti", warmup=0)


def test_bootstrap_interval_contains_the_ratio_and_is_deterministic():
    base = [2.0 + 0.01 * (i % 7) for i in range(50)]
    cand = [1.0 + 0.01 * (i % 5) for i in range(50)]
    lo, hi = bootstrap_speedup(base, cand)
    ratio = quantile(base, 0.5) / quantile(cand, 0.5)
    assert lo <= ratio <= hi and hi - lo < 0.2
    assert bootstrap_speedup(base, cand) == (lo, hi)


def test_merge_intervals_counts_overlap_once():
    assert merge_intervals([(0, 10), (5, 15), (20, 25)]) == 20
    assert merge_intervals([]) == 0
    assert merge_intervals([(0, 10), (2, 3)]) == 10


def _cmp(out, ref, **kw):
    return compare_output(
        out, ref, name="C", expected_shape=ref.shape, expected_dtype=out.dtype, atol=1e-2, rtol=1e-2, **kw
    )


def test_element_rule_needs_both_tolerances_exceeded():
    ref = torch.tensor([100.0, 0.001, 5.0])
    # 100 -> 100.5: abs 0.5 > atol but rel 0.005 < rtol; 0.001 -> 0.009: rel big but abs < atol.
    ok = _cmp(torch.tensor([100.5, 0.009, 5.0]), ref)
    assert ok.status == Status.PASSED and ok.failing_elements == 0
    bad = _cmp(torch.tensor([102.0, 0.001, 5.0]), ref)
    assert bad.status == Status.INCORRECT_NUMERICAL and bad.failing_elements == 1


def test_small_valued_zero_output_caught_by_relative_norm():
    ref = torch.randn(1000) * 1e-3
    result = _cmp(torch.zeros(1000), ref)
    assert result.failing_elements == 0
    assert result.status == Status.INCORRECT_NUMERICAL and "relative norm" in result.message


def test_nan_inf_and_shape_dtype():
    ref = torch.ones(4, 4)
    out = ref.clone()
    out[1, 1] = float("nan")
    out[2, 2] = float("inf")
    r = _cmp(out, ref)
    assert (r.status, r.nan_count, r.inf_count) == (Status.INCORRECT_NUMERICAL, 1, 1)
    shape = compare_output(
        torch.ones(3), ref, name="C", expected_shape=(4, 4), expected_dtype=torch.float32, atol=1e-2, rtol=1e-2
    )
    assert shape.status == Status.INCORRECT_SHAPE
    dtype = compare_output(
        torch.ones(4, 4, dtype=torch.float16),
        ref,
        name="C",
        expected_shape=(4, 4),
        expected_dtype=torch.float32,
        atol=1e-2,
        rtol=1e-2,
    )
    assert dtype.status == Status.INCORRECT_DTYPE


def test_chunked_comparison_matches_whole():
    ref = torch.randn(10_000)
    out = ref + torch.randn(10_000) * 1e-3
    whole, chunked = _cmp(out, ref), _cmp(out, ref, chunk=333)
    assert whole.relative_norm_error == pytest.approx(chunked.relative_norm_error)
    assert whole.max_absolute_error == pytest.approx(chunked.max_absolute_error)


def test_bf16_rounding_passes():
    ref = (torch.randn(256, 256) * 50).to(torch.bfloat16)
    # One bf16 ulp away everywhere: within rtol=1e-2 (an ulp is at most 2^-7 relative).
    out = (ref.view(torch.int16) + 1).view(torch.bfloat16)
    result = _cmp(out, ref)
    assert result.max_absolute_error > 1e-2  # well over atol: the relative test is what passes it
    assert result.status == Status.PASSED
    two_percent = ref * 1.02
    assert _cmp(two_percent, ref).status == Status.INCORRECT_NUMERICAL


def test_worst_picks_first_failure():
    ref = torch.ones(3)
    good, bad = _cmp(ref.clone(), ref), _cmp(ref * 2, ref)
    assert worst([good, bad]) is bad
    assert worst([good, good]).status == Status.PASSED
