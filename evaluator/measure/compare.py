"""Compare a candidate's output with the reference: PTXBench's element rule plus a relative-norm bound.

An element fails only when both |out-ref| > atol and |out-ref|/(|ref|+1e-8) > rtol; every element must pass.
The relative norm ||out-ref|| / ||ref|| must also stay under a bound calibrated on the library baselines
(docs/verdict.md): this catches all-zero or constant outputs of tasks whose values are small enough to
slip under atol. The bounds are the task's (`ptxbench.json` `tolerance`, written from its family's entry in
evaluator/both_sides/task_families.py). Large tensors are compared in chunks so memory stays bounded. Works on CPU tensors too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.both_sides.verdict import Status

DEFAULT_REL_NORM_BOUND = 5e-2
_EPS = 1e-8
_CHUNK = 1 << 24


@dataclass
class Comparison:
    status: Status
    message: str = ""
    max_absolute_error: float | None = None
    max_relative_error: float | None = None
    relative_norm_error: float | None = None
    failing_elements: int = 0
    total_elements: int = 0
    nan_count: int = 0
    inf_count: int = 0

    @property
    def ok(self) -> bool:
        return self.status == Status.PASSED


def compare_output(
    out: Any,
    ref: Any,
    *,
    name: str,
    expected_shape: Sequence[int],
    expected_dtype: Any,
    atol: float,
    rtol: float,
    rel_norm_bound: float = DEFAULT_REL_NORM_BOUND,
    device: Any = None,
    chunk: int = _CHUNK,
) -> Comparison:
    """Compare one output tensor. `device` is where the chunks are compared (default: ref's device)."""
    import torch

    if tuple(out.shape) != tuple(expected_shape):
        return Comparison(Status.INCORRECT_SHAPE, f"{name}: shape {tuple(out.shape)}, expected {tuple(expected_shape)}")
    if out.dtype != expected_dtype:
        return Comparison(Status.INCORRECT_DTYPE, f"{name}: dtype {out.dtype}, expected {expected_dtype}")
    if tuple(ref.shape) != tuple(expected_shape):
        raise ValueError(f"reference {name} has shape {tuple(ref.shape)}, expected {tuple(expected_shape)}")
    device = device if device is not None else ref.device
    work = torch.float64 if torch.float64 in (out.dtype, ref.dtype) else torch.float32
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    total = flat_out.numel()
    failing = nan = inf = 0
    max_abs = max_rel = 0.0
    diff_sq = ref_sq = 0.0
    for start in range(0, total, chunk):
        # Move, then convert: a host-to-GPU copy that also changes the dtype converts on the CPU (PyTorch's copy_),
        # which cost ~100 ms per 117 MB output on the H200.
        o = flat_out[start : start + chunk].to(device=device).to(work)
        r = flat_ref[start : start + chunk].to(device=device).to(work)
        r_finite = torch.isfinite(r)
        o_nan, o_inf = torch.isnan(o), torch.isinf(o)
        # Where the reference is finite, any NaN/Inf in the output is wrong; where it is not, the output must match it.
        nan += int((o_nan & r_finite).sum())
        inf += int((o_inf & r_finite).sum())
        nonfinite_mismatch = ~r_finite & ~((o == r) | (torch.isnan(o) & torch.isnan(r)))
        both = r_finite & torch.isfinite(o)
        d = torch.where(both, (o - r).abs(), torch.zeros_like(o))
        rel = d / (r.abs().where(both, torch.ones_like(r)) + _EPS)
        bad = (d > atol) & (rel > rtol)
        failing += int(bad.sum()) + int(((o_nan | o_inf) & r_finite).sum()) + int(nonfinite_mismatch.sum())
        if bool(both.any()):
            max_abs = max(max_abs, float(d.max()))
            max_rel = max(max_rel, float(rel.where(both, torch.zeros_like(rel)).max()))
        diff_sq += float((d.double() ** 2).sum())
        ref_sq += float((r.where(r_finite, torch.zeros_like(r)).double() ** 2).sum())
    rel_norm = math.sqrt(diff_sq / ref_sq) if ref_sq > 0 else (0.0 if diff_sq == 0 else math.inf)
    result = Comparison(
        Status.PASSED,
        max_absolute_error=max_abs,
        max_relative_error=max_rel,
        relative_norm_error=rel_norm if math.isfinite(rel_norm) else None,
        failing_elements=failing,
        total_elements=total,
        nan_count=nan,
        inf_count=inf,
    )
    if nan or inf:
        result.status = Status.INCORRECT_NUMERICAL
        result.message = f"{name}: {nan} NaN and {inf} Inf values where the reference is finite"
        if nan == total:
            result.message += " (every element NaN: the output was never written?)"
    elif failing:
        result.status = Status.INCORRECT_NUMERICAL
        result.message = (
            f"{name}: {failing} of {total} elements exceed both atol={atol:g} and rtol={rtol:g} "
            f"(max abs error {max_abs:.4g})"
        )
    elif not math.isfinite(rel_norm) or rel_norm > rel_norm_bound:
        result.status = Status.INCORRECT_NUMERICAL
        result.message = (
            f"{name}: relative norm error {rel_norm:.3g} exceeds the bound {rel_norm_bound:g} "
            "although every element is within tolerance (zero or constant output?)"
        )
    return result


def worst(comparisons: Sequence[Comparison]) -> Comparison:
    """The first failing comparison, else a merged passing one with the largest errors."""
    for c in comparisons:
        if not c.ok:
            return c
    merged = Comparison(Status.PASSED)
    for c in comparisons:
        merged.max_absolute_error = max(merged.max_absolute_error or 0.0, c.max_absolute_error or 0.0)
        merged.max_relative_error = max(merged.max_relative_error or 0.0, c.max_relative_error or 0.0)
        merged.relative_norm_error = max(merged.relative_norm_error or 0.0, c.relative_norm_error or 0.0)
        merged.total_elements = max(merged.total_elements, c.total_elements)  # per call, not summed over trials
    return merged
