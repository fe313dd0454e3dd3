import math

import torch

CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def run(Q, K, V, O, dO, LSE):  # noqa: E741 (the definition names the inputs)
    # PyTorch's flash-attention backend backward (FlashAttention-2 kernels), fed the given O and LSE.
    B, H, S, D = Q.shape
    # Dropout is off, so the RNG state is never read; placeholders shaped as the forward returns them.
    rng_state = torch.empty(2, dtype=torch.uint64, device=Q.device)
    unused = torch.empty((), dtype=torch.uint64, device=Q.device)
    dQ, dK, dV = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        dO, Q, K, V, O, LSE, None, None, S, S, 0.0, CAUSAL, rng_state, unused, scale=1.0 / math.sqrt(D)
    )
    return dQ, dK, dV
