"""Input generator for the attention-backward tasks: O and LSE must come from a forward pass over the drawn
Q, K, V, so they are computed here (fp32, the forward reference's math) and replace the random O and LSE."""

import math

import torch

CAUSAL = True  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def derive(inputs):
    Q, K, V = inputs["Q"], inputs["K"], inputs["V"]
    B, H, S, D = Q.shape
    scale = 1.0 / math.sqrt(D)
    q, k, v = (x.reshape(B * H, S, D) for x in (Q, K, V))
    out = torch.empty(B * H, S, D, dtype=torch.bfloat16, device=Q.device)
    lse_out = torch.empty(B * H, S, dtype=torch.float32, device=Q.device)
    masked = torch.ones(S, S, dtype=torch.bool, device=Q.device).triu(1) if CAUSAL else None
    step = max(1, (1 << 28) // (S * S))  # a chunk of heads at a time, as the forward reference does
    for h0 in range(0, B * H, step):
        h1 = min(h0 + step, B * H)
        scores = torch.matmul(q[h0:h1].float(), k[h0:h1].float().transpose(1, 2)) * scale
        if masked is not None:
            scores.masked_fill_(masked, float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)
        probs = scores.sub_(lse.unsqueeze(-1)).exp_()
        out[h0:h1] = torch.matmul(probs, v[h0:h1].float()).to(torch.bfloat16)
        lse_out[h0:h1] = lse
    return {"O": out.reshape(B, H, S, D), "LSE": lse_out.reshape(B, H, S)}
