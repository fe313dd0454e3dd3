"""The one denominator of "of peak": each GPU model's dense BF16 tensor-core peak from NVIDIA's datasheets.

Throughput is the task's FLOPs over the kernel's latency (TFLOP/s, evaluator/performance.py); "of peak" is that
over the figure here, in the verdict (`fraction_of_peak`), the database, the boards, the API and every export.

Not the rate measured on the host (`environment.peak_bf16_tflops`, an 8192³ `torch.matmul`): that is cuBLAS's
own speed (about 800 TFLOP/s on an H200), which a fast kernel may pass, and it moves with clocks and versions; it
stays in the verdict as a record of the machine. Boards that showed both as "measured peak" (about 986 and 803
TFLOP/s on one H200) would contradict themselves.

Beside it, the physical limits every ranked figure is held against (evaluator/physical_limits.py): the dense
tensor-core peak per input dtype, and the HBM bandwidth.
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
# clocks). A timed rate above it can only come from tensor cores (see `tensor_evidence`).
NON_TENSOR_SOURCE = "NVIDIA whitepaper peak FP16/BF16 without tensor cores (2x FP32)"
NON_TENSOR_TFLOPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H100", "PCIE"), 102.4),
    (("H100", "NVL"), 120.0),
    (("H200", "NVL"), 120.0),
    (("H100",), 133.8),
    (("H200",), 133.8),
)


# Dense (without sparsity) tensor-core peaks by input dtype, TFLOP/s (TOPS for int8), from NVIDIA's datasheets: H100
# (SXM5, PCIe, NVL) and H200 (SXM, NVL) datasheets, and the HGX B200 datasheet per GPU. The datasheets print the
# sparse figure; the dense one is half of it. float16 runs at the bfloat16 rate, float32 on tensor cores as TF32,
# and float64 on the FP64 tensor cores. A ranked rate above the figure for the task's dtype is a physical
# impossibility (integrity.physical_limit_hold).
TENSOR_PEAK_SOURCE = "NVIDIA datasheet dense tensor-core peak per input dtype (without sparsity)"
_SXM5 = {"float64": 67.0, "float32": 494.7, "bfloat16": 989.4, "float16": 989.4, "float8_e4m3fn": 1978.9}
_PCIE = {"float64": 51.0, "float32": 378.0, "bfloat16": 756.0, "float16": 756.0, "float8_e4m3fn": 1513.0}
_NVL = {"float64": 60.0, "float32": 417.5, "bfloat16": 835.0, "float16": 835.0, "float8_e4m3fn": 1670.5}
_B200 = {"float64": 40.0, "float32": 1100.0, "bfloat16": 2250.0, "float16": 2250.0, "float8_e4m3fn": 4500.0}
DENSE_TENSOR_TFLOPS: tuple[tuple[tuple[str, ...], dict[str, float]], ...] = tuple(
    (needed, {**by_dtype, "float8_e5m2": by_dtype["float8_e4m3fn"], "int8": by_dtype["float8_e4m3fn"]})
    for needed, by_dtype in (
        (("H100", "PCIE"), _PCIE),
        (("H100", "NVL"), _NVL),
        (("H200", "NVL"), _NVL),
        (("H100",), _SXM5),
        (("H200",), _SXM5),
        (("B200",), {**_B200, "float4_e2m1": 9000.0}),
    )
)

# HBM bandwidth, TB/s, from the same datasheets. No call can take less time than reading its inputs and writing
# its outputs once at this rate (integrity.physical_limit_hold).
BANDWIDTH_SOURCE = "NVIDIA datasheet HBM bandwidth"
HBM_TBPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H100", "PCIE"), 2.0),
    (("H100", "NVL"), 3.9),
    (("H200", "NVL"), 4.8),
    (("H100",), 3.35),  # H100 SXM5
    (("H200",), 4.8),  # H200 SXM
    (("B200",), 8.0),  # HGX B200, per GPU
)


def _words(gpu_name: str | None) -> set[str]:
    return {w.upper() for w in re.split(r"[^A-Za-z0-9]+", gpu_name or "") if w}


def _lookup(table: tuple[tuple[tuple[str, ...], float], ...], gpu_name: str | None) -> float | None:
    words = _words(gpu_name)
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


def tensor_peak_tflops(gpu_name: str | None, dtype: str) -> float | None:
    """The datasheet dense tensor-core peak of the named GPU for inputs of `dtype` (a task dtype name); None when
    the GPU or the dtype is not in the table."""
    words = _words(gpu_name)
    for needed, by_dtype in DENSE_TENSOR_TFLOPS:
        if all(n in words for n in needed):
            return by_dtype.get(dtype)
    return None


def hbm_tbps(gpu_name: str | None) -> float | None:
    """The datasheet HBM bandwidth of the named GPU in TB/s; None when it is not in the table."""
    return _lookup(HBM_TBPS, gpu_name)
