import math

import torch

CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def run(Q, K, V):
    # cuDNN fused attention through PyTorch's aten op; the public SDPA entry point does not return the LSE.
    B, H, S, D = Q.shape
    out = torch.ops.aten._scaled_dot_product_cudnn_attention(
        Q, K, V, None, True, 0.0, CAUSAL, False, scale=1.0 / math.sqrt(D)
    )
    # cuDNN's softmax statistics are the natural-log LSE, shaped [B,H,S] or [B,H,S,1] depending on the version.
    return out[0], out[1].reshape(B, H, S)
