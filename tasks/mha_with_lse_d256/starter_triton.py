"""Triton starter for the PTXBench attention-forward tasks: O = softmax(Q K^T / sqrt(D)) V and the per-row
log-sum-exp LSE (natural log); Q, K, V, O bf16 [B,H,S,D], LSE fp32 [B,H,S], all contiguous.

Correct and deliberately simple: one program per (block of 32 query rows, batch * head), keys and values
streamed 32 rows at a time with an online softmax, everything in fp32: both products are
tl.dot(..., input_precision="ieee") on tiles widened from bf16, plain FMA on the CUDA cores. It uses no
wgmma/TMA (sm_90a) or tcgen05 (sm_100a), so it passes the correctness layer and fails the architecture layer;
replace the kernel, keep `run`. The head dimension is padded to a power of two (96 -> 128) and masked. Sizes
come from the tensors; only the mask is fixed per task (CAUSAL below).
"""

import math

import triton
import triton.language as tl

CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)

BLOCK_ROWS = 32  # query rows per program, and keys per step


@triton.jit
def attention_forward(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    S,
    D,
    scale,
    IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    first = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)  # b * H + h
    base = head * S * D
    rows = first + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    row_ok = rows < S
    dim_ok = dims < D
    q_mask = row_ok[:, None] & dim_ok[None, :]
    q = tl.load(q_ptr + base + rows[:, None] * D + dims[None, :], mask=q_mask, other=0.0).to(tl.float32)

    m = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)  # running maximum of each row's scores
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)  # running sum of exp(score - m)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    # Causal rows never need keys past the block's last query row.
    end = tl.minimum(first + BLOCK_M, S) if IS_CAUSAL else S
    for k0 in range(0, end, BLOCK_N):
        keys = k0 + tl.arange(0, BLOCK_N)
        kv_mask = (keys[:, None] < S) & dim_ok[None, :]
        offsets = base + keys[:, None] * D + dims[None, :]
        k = tl.load(k_ptr + offsets, mask=kv_mask, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + offsets, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale  # [BLOCK_M, BLOCK_N]
        keep = keys[None, :] < S
        if IS_CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))  # finite: key 0 is in the first step of every row
        correction = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        total = total * correction + tl.sum(p, 1)
        acc = tl.dot(p, v, acc * correction[:, None], input_precision="ieee")
        m = m_new

    out = acc / total[:, None]
    tl.store(o_ptr + base + rows[:, None] * D + dims[None, :], out.to(tl.bfloat16), mask=q_mask)
    tl.store(lse_ptr + head * S + rows, m + tl.log(total), mask=row_ok)


def run(Q, K, V, O, LSE):  # noqa: E741 (the definition names the output O)
    B, H, S, D = Q.shape
    grid = (triton.cdiv(S, BLOCK_ROWS), B * H)
    attention_forward[grid](
        Q,
        K,
        V,
        O,
        LSE,
        S,
        D,
        1.0 / math.sqrt(D),
        IS_CAUSAL=CAUSAL,
        BLOCK_M=BLOCK_ROWS,
        BLOCK_N=BLOCK_ROWS,
        BLOCK_D=triton.next_power_of_2(D),
    )
