"""Float64 math for the task-suite tests: independent of the task references, written from the definitions.

The references are PyTorch code in the task folders; these are the plain formulas in float64 (einsum and
autograd), used on CPU with tiny shapes and on the GPU with the small workloads. `excess_error` measures how far
an output is from the exact value beyond the output dtype's own rounding, as a fraction of the evaluator's
tolerance, so a bf16 output that is the correctly rounded exact value scores 0.
"""

from __future__ import annotations

import math
from typing import Any

import torch

# Explicit mantissa bits: half an ulp of x is 2**(exponent(x) - bits - 1).
MANTISSA_BITS = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23, torch.float64: 52}


def load_function(source: str, function: str, label: str) -> Any:
    """Execute trusted task Python (reference, baseline, input generator) and return one of its functions."""
    namespace: dict[str, Any] = {"__name__": f"task_suite_{label}"}
    exec(compile(source, f"<{label}>", "exec"), namespace)  # noqa: S102 (trusted task data from the repo)
    return namespace[function]


def gemm_exact(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return torch.einsum("mk,nk->mn", A.double(), B.double())


def attention_exact(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool) -> tuple[torch.Tensor, ...]:
    """O and natural-log LSE in float64, straight from the definition."""
    q, k, v = Q.double(), K.double(), V.double()
    S, D = q.shape[-2], q.shape[-1]
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    if causal:
        keep = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse.unsqueeze(-1))
    return torch.einsum("bhij,bhjd->bhid", probs, v), lse


def attention_grads_exact(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, dO: torch.Tensor, causal: bool
) -> tuple[torch.Tensor, ...]:
    """dQ, dK, dV of the float64 attention forward by autograd: no use of the O/LSE inputs or their formulas."""
    q, k, v = (x.detach().double().requires_grad_(True) for x in (Q, K, V))
    out, _ = attention_exact(q, k, v, causal)
    return torch.autograd.grad(out, (q, k, v), dO.double())


def attention_grads_from_inputs(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    O: torch.Tensor,  # noqa: E741 (the definition's name)
    dO: torch.Tensor,
    LSE: torch.Tensor,
    causal: bool,
) -> tuple[torch.Tensor, ...]:
    """dQ, dK, dV in float64 as the backward definition states them, from the given O and LSE."""
    q, k, v, o, do, lse = (x.double() for x in (Q, K, V, O, dO, LSE))
    S, D = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    probs = torch.exp(torch.einsum("bhid,bhjd->bhij", q, k) * scale - lse.unsqueeze(-1))
    if causal:
        probs = probs * torch.ones(S, S, dtype=torch.float64, device=q.device).tril()
    delta = torch.einsum("bhid,bhid->bhi", do, o)
    dscores = probs * (torch.einsum("bhid,bhjd->bhij", do, v) - delta.unsqueeze(-1))
    dq = torch.einsum("bhij,bhjd->bhid", dscores, k) * scale
    dk = torch.einsum("bhij,bhid->bhjd", dscores, q) * scale
    dv = torch.einsum("bhij,bhid->bhjd", probs, do)
    return dq, dk, dv


def half_ulp(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    _, exponent = torch.frexp(exact)
    h = torch.ldexp(torch.ones_like(exact), (exponent - MANTISSA_BITS[dtype] - 2).to(exact.dtype))
    return torch.where(exact == 0, torch.zeros_like(exact), h)


def excess_error(out: torch.Tensor, exact: torch.Tensor, atol: float, rtol: float) -> float:
    """max over elements of (|out - exact| - rounding of exact to out's dtype) / max(atol, rtol*|exact|).

    The evaluator fails an element only when its error exceeds both atol and rtol*|ref|, i.e. when this ratio
    (without the rounding term) exceeds 1. Returns inf for NaN/Inf in the output.
    """
    assert out.shape == exact.shape, (out.shape, exact.shape)
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    err = (o - exact).abs() - half_ulp(exact, out.dtype)
    allowed = torch.clamp(rtol * exact.abs(), min=atol)
    return float((err.clamp(min=0) / allowed).max())


def tolerance_ratio(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> float:
    """The evaluator's element rule as one number: max |out-ref| / max(atol, rtol*|ref|); > 1 means a failure."""
    assert out.shape == ref.shape, (out.shape, ref.shape)
    o, r = out.double(), ref.double()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    return float(((o - r).abs() / torch.clamp(rtol * r.abs(), min=atol)).max())


def relative_norm_error(out: torch.Tensor, exact: torch.Tensor) -> float:
    o = out.double()
    return float(torch.linalg.vector_norm(o - exact) / torch.linalg.vector_norm(exact))
