import math

import torch

CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)


def run(Q, K, V, O, dO, LSE):  # noqa: E741 (the definition names the inputs)
    """Attention backward in fp32: dQ, dK, dV (bf16) from bf16 Q, K, V, O, dO [B,H,S,D] and fp32 LSE [B,H,S].

    P = exp(scale * Q K^T - LSE) (0 where masked), Delta = rowsum(dO * O), dS = P * (dO V^T - Delta),
    dQ = scale * dS K, dK = scale * dS^T Q, dV = P^T dO.
    """
    B, H, S, D = Q.shape
    scale = 1.0 / math.sqrt(D)
    q, k, v, do = (x.reshape(B * H, S, D) for x in (Q, K, V, dO))
    lse_all = LSE.reshape(B * H, S)
    delta_all = (dO.float() * O.float()).sum(-1).reshape(B * H, S)
    dQ = torch.empty(B * H, S, D, dtype=torch.bfloat16, device=Q.device)
    dK = torch.empty_like(dQ)
    dV = torch.empty_like(dQ)
    masked = torch.ones(S, S, dtype=torch.bool, device=Q.device).triu(1) if CAUSAL else None
    # A chunk of heads at a time: one fp32 S x S matrix is 1 GiB at S=16384.
    step = max(1, (1 << 28) // (S * S))
    for h0 in range(0, B * H, step):
        h1 = min(h0 + step, B * H)
        qc, kc, vc, doc = (x[h0:h1].float() for x in (q, k, v, do))
        scores = torch.matmul(qc, kc.transpose(1, 2)) * scale
        if masked is not None:
            scores.masked_fill_(masked, float("-inf"))
        probs = scores.sub_(lse_all[h0:h1].float().unsqueeze(-1)).exp_()
        dV[h0:h1] = torch.matmul(probs.transpose(1, 2), doc).to(torch.bfloat16)
        dprobs = torch.matmul(doc, vc.transpose(1, 2))
        dscores = probs.mul_(dprobs.sub_(delta_all[h0:h1].unsqueeze(-1)))
        del dprobs
        dQ[h0:h1] = (torch.matmul(dscores, kc) * scale).to(torch.bfloat16)
        dK[h0:h1] = (torch.matmul(dscores.transpose(1, 2), qc) * scale).to(torch.bfloat16)
    return dQ.reshape(B, H, S, D), dK.reshape(B, H, S, D), dV.reshape(B, H, S, D)
