"""FlashAttention-style forward in Triton for mha_with_lse_d128: O = softmax(Q K^T / sqrt(D)) V and the natural-log
LSE per query row. One program per (query block, batch*head); K/V blocks streamed with an online softmax in fp32
(exp2 with log2(e) folded into the scale); both products are tl.dot on bf16 tiles (wgmma on Hopper)."""

import math

import triton
import triton.language as tl


@triton.jit
def attention_fwd(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    S,
    qk_scale: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * S * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end_n = tl.minimum((start_m + 1) * BLOCK_M, S) if CAUSAL else S
    for start_n in range(0, end_n, BLOCK_N):
        cols = start_n + offs_n
        kv_mask = cols[:, None] < S
        k = tl.load(k_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (cols[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    acc = acc / l_i[:, None]
    row_ok = offs_m < S
    tl.store(
        o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        acc.to(o_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )
    # m_i and l_i are in log2 units of the scaled scores: LSE = (m + log2 l) * ln 2.
    tl.store(lse_ptr + bh.to(tl.int64) * S + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=row_ok)


def run(Q, K, V, O, LSE):  # noqa: E741 - the task names its output O
    B, H, S, D = Q.shape
    block_m, block_n = 128, 64
    qk_scale = 1.4426950408889634 / math.sqrt(D)  # log2(e) / sqrt(D): exp2 of scaled scores
    grid = (triton.cdiv(S, block_m), B * H)
    attention_fwd[grid](
        Q,
        K,
        V,
        O,
        LSE,
        S,
        qk_scale,
        HEAD_DIM=D,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        CAUSAL=False,
        num_warps=8,
        num_stages=2,
    )
