import math

import torch

CAUSAL = True  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def run(Q, K, V, O, dO, LSE):  # noqa: E741 (the definition names the inputs)
    # cuDNN fused attention backward through PyTorch's aten op, fed the given O and LSE: only the backward runs.
    B, H, S, D = Q.shape
    # Dropout is off, so the RNG seed and offset are never read; placeholders shaped as the forward returns them.
    rng = torch.empty((), dtype=torch.int64, device=Q.device)
    dQ, dK, dV = torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
        dO,
        Q,
        K,
        V,
        O,
        LSE.reshape(B, H, S, 1),
        rng,
        rng,
        None,
        None,
        None,
        S,
        S,
        0.0,
        CAUSAL,
        scale=1.0 / math.sqrt(D),
    )
    return dQ, dK, dV
