"""The one denominator of "of peak": each GPU model's dense BF16 tensor-core peak from NVIDIA's datasheets.

Throughput is the task's FLOPs over the kernel's latency (TFLOP/s, evaluator/performance.py); "of peak" is that
over the figure here, in the verdict (`fraction_of_peak`), the database, the boards, the API and every export.

Not the rate measured on the host (`environment.peak_bf16_tflops`, an 8192³ `torch.matmul`): that is cuBLAS's
own speed (about 800 TFLOP/s on an H200), which a fast kernel may pass, and it moves with clocks and versions; it
stays in the verdict as a record of the machine. Before issue 29 the boards showed both as "measured peak"
(about 986 and 803 TFLOP/s on one H200 board).
"""

from __future__ import annotations

import re

SOURCE = "NVIDIA datasheet dense BF16 tensor-core peak (without sparsity)"

# (words that must all appear in the device name, TFLOP/s), most specific first.
DENSE_BF16_TFLOPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H100", "PCIE"), 756.0),
    (("H100", "NVL"), 835.0),
    (("H200", "NVL"), 835.0),
    (("H100",), 989.4),  # H100 SXM5
    (("H200",), 989.4),  # H200 SXM
    (("B200",), 2250.0),  # HGX B200, per GPU
)


# The fastest rate code reaches WITHOUT tensor cores (packed FP16/BF16 FMA, twice the FP32 rate), from NVIDIA's
# H100 whitepaper (SXM5: 133.8; PCIe: 102.4; NVL: 120) and the H200 datasheets (the H200 has the H100's SMs and
# clocks). A timed rate above it can only come from tensor cores (issue 32, property 3; see `tensor_evidence`).
NON_TENSOR_SOURCE = "NVIDIA whitepaper peak FP16/BF16 without tensor cores (2x FP32)"
NON_TENSOR_TFLOPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H100", "PCIE"), 102.4),
    (("H100", "NVL"), 120.0),
    (("H200", "NVL"), 120.0),
    (("H100",), 133.8),
    (("H200",), 133.8),
)


def _lookup(table: tuple[tuple[tuple[str, ...], float], ...], gpu_name: str | None) -> float | None:
    words = {w.upper() for w in re.split(r"[^A-Za-z0-9]+", gpu_name or "") if w}
    for needed, tflops in table:
        if all(n in words for n in needed):
            return tflops
    return None


def non_tensor_peak_tflops(gpu_name: str | None) -> float | None:
    """The fastest non-tensor-core rate of the named GPU; None when it is not in the table (B200: not stated)."""
    return _lookup(NON_TENSOR_TFLOPS, gpu_name)


def peak_tflops(gpu_name: str | None) -> float | None:
    """The datasheet dense BF16 peak of the GPU a device name names ("NVIDIA H200" -> 989.4); None when the
    name names no GPU in the table (then no "of peak" is given). Whole words only: "GH200" is no H200."""
    return _lookup(DENSE_BF16_TFLOPS, gpu_name)


def fraction_of_peak(tflops: float | None, gpu_name: str | None) -> float | None:
    """TFLOP/s over the datasheet peak of the GPU; None when either is unknown."""
    peak = peak_tflops(gpu_name)
    return tflops / peak if tflops is not None and peak else None
