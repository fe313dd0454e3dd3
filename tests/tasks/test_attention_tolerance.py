"""The attention tasks' comparison tells bf16 arithmetic from a narrower one. Their outputs are about as small as the
element rule's atol, so only the relative-norm bound can: a forward whose P·V product runs on e4m3 operands (a
precision downgrade worth about 2x on Hopper's tensor cores) passes the element rule at S=4096 and must fail the
bound, while the same arithmetic with P in bf16, as every FlashAttention kernel does it, passes."""

from __future__ import annotations

import math

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.measure.compare import compare_output
from evaluator.measure.correctness import rel_norm_bound
from tests.support.factories import REPO

torch = pytest.importorskip("torch")


def _attention(q, k, v, *, operand_dtype):
    """One head's forward as a tiled kernel computes it: fp32 scores, unnormalised P = exp(s - rowmax) and V rounded
    to `operand_dtype` for the P·V product (fp32 accumulate), then divided by the row sums; O in bf16."""
    scores = q.float() @ k.float().T / math.sqrt(q.shape[-1])
    p = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    pv = p.to(operand_dtype).float() @ v.float().to(operand_dtype).float()
    return (pv / p.sum(dim=-1, keepdim=True)).to(torch.bfloat16)


@pytest.mark.parametrize("task_name", ["mha_with_lse_d128", "mha_with_lse_d128_causal"])
def test_a_forward_on_e4m3_operands_fails_where_bf16_operands_pass(task_name):
    task = load_task(REPO / "tasks" / task_name)
    s, d = 4096, 128
    gen = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(s, d, generator=gen).to(torch.bfloat16) for _ in range(3))
    # The exact forward (no mask: the bound is the same for the causal task; its rows only attend fewer keys).
    reference = _attention(q, k, v, operand_dtype=torch.float32)

    def judged(out, bound):
        return compare_output(
            out,
            reference,
            name="O",
            expected_shape=(s, d),
            expected_dtype=torch.bfloat16,
            atol=task.atol,
            rtol=task.rtol,
            rel_norm_bound=bound,
        )

    bound = rel_norm_bound(task)
    honest = judged(_attention(q, k, v, operand_dtype=torch.bfloat16), bound)
    narrow = judged(_attention(q, k, v, operand_dtype=torch.float8_e4m3fn), bound)
    assert honest.ok and honest.relative_norm_error < bound / 3, honest
    assert not narrow.ok and "relative norm error" in narrow.message, narrow
    # The element rule alone lets the narrow arithmetic through: only the task's bound catches it.
    assert narrow.failing_elements == 0 and narrow.relative_norm_error > 2 * bound
