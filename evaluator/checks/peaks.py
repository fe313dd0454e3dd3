"""The one denominator of "of peak": each GPU model's dense BF16 tensor-core peak from NVIDIA's datasheets.

Throughput is the task's FLOPs over the kernel's latency (TFLOP/s, evaluator/measure/performance.py); "of peak" is that
over the figure here, in the verdict (`fraction_of_peak`), the database, the boards, the API and every export.

Not the rate measured on the host (`environment.peak_bf16_tflops`, an 8192³ `torch.matmul`): that is cuBLAS's
own speed (about 800 TFLOP/s on an H200), which a fast kernel may pass, and it moves with clocks and versions; it
stays in the verdict as a record of the machine. Boards that showed both as "measured peak" (about 986 and 803
TFLOP/s on one H200) would contradict themselves.

Beside it, the physical limits every ranked figure is held against (evaluator/checks/physical_limits.py): the dense
tensor-core peak per input dtype, and the HBM bandwidth.
"""

from __future__ import annotations

import re

from evaluator.both_sides.arches import GpuModel, gpu_models

SOURCE = "NVIDIA datasheet dense BF16 tensor-core peak (without sparsity)"
# The fastest rate code reaches WITHOUT tensor cores: a timed rate above it can only come from tensor cores (see
# `ncu.tensor_evidence`).
NON_TENSOR_SOURCE = "NVIDIA whitepaper peak FP16/BF16 without tensor cores (2x FP32)"
# A ranked rate above the figure for the task's dtype is a physical impossibility (integrity.physical_limit_hold).
TENSOR_PEAK_SOURCE = "NVIDIA datasheet dense tensor-core peak per input dtype (without sparsity)"
# No call can take less time than reading its inputs and writing its outputs once at this rate.
BANDWIDTH_SOURCE = "NVIDIA datasheet HBM bandwidth"

# The figures themselves are the architecture registry's (evaluator/both_sides/arches.py, each architecture's `gpu_models`);
# the lookups below read it on every call. This table is the BF16 column as the registry held it when this module
# was imported, (words that must all appear in the device name, TFLOP/s), most specific first, for listings.
DENSE_BF16_TFLOPS: tuple[tuple[tuple[str, ...], float], ...] = tuple(
    (m.words, m.dense_tensor_tflops["bfloat16"]) for m in gpu_models() if "bfloat16" in m.dense_tensor_tflops
)


def _words(gpu_name: str | None) -> set[str]:
    return {w.upper() for w in re.split(r"[^A-Za-z0-9]+", gpu_name or "") if w}


def gpu_model(gpu_name: str | None) -> GpuModel | None:
    """The registry's GPU model a device name names ("NVIDIA H100 PCIe" -> H100 PCIe); None when it names none.
    Whole words only: "GH200" is no H200."""
    words = _words(gpu_name)
    return next((m for m in gpu_models() if all(n in words for n in m.words)), None)


def non_tensor_peak_tflops(gpu_name: str | None) -> float | None:
    """The fastest non-tensor-core rate of the named GPU; None when it is not in the table (B200: not stated)."""
    model = gpu_model(gpu_name)
    return model.non_tensor_tflops if model else None


def peak_tflops(gpu_name: str | None) -> float | None:
    """The datasheet dense BF16 peak of the GPU a device name names ("NVIDIA H200" -> 989.4); None when the
    name names no GPU in the table (then no "of peak" is given). Whole words only: "GH200" is no H200."""
    return tensor_peak_tflops(gpu_name, "bfloat16")


def fraction_of_peak(tflops: float | None, gpu_name: str | None) -> float | None:
    """TFLOP/s over the datasheet peak of the GPU; None when either is unknown."""
    peak = peak_tflops(gpu_name)
    return tflops / peak if tflops is not None and peak else None


def tensor_peak_tflops(gpu_name: str | None, dtype: str) -> float | None:
    """The datasheet dense tensor-core peak of the named GPU for inputs of `dtype` (a task dtype name); None when
    the GPU or the dtype is not in the table."""
    model = gpu_model(gpu_name)
    return model.dense_tensor_tflops.get(dtype) if model else None


def hbm_tbps(gpu_name: str | None) -> float | None:
    """The datasheet HBM bandwidth of the named GPU in TB/s; None when it is not in the table."""
    model = gpu_model(gpu_name)
    return model.hbm_tbps if model else None
