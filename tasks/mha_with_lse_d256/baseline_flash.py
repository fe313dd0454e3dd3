import math

import torch

CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def run(Q, K, V):
    # PyTorch's flash-attention backend (FlashAttention-2 kernels); its logsumexp is natural-log [B,H,S].
    D = Q.shape[-1]
    out = torch.ops.aten._scaled_dot_product_flash_attention(Q, K, V, 0.0, CAUSAL, False, scale=1.0 / math.sqrt(D))
    return out[0], out[1]
