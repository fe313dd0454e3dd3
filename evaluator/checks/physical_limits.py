"""What no call of a workload can beat on a named GPU: the dense tensor-core rate for the task's dtype, and the time
to read the inputs and write the outputs once at the HBM bandwidth. Pure: no GPU, no processes.

The figures come from NVIDIA's datasheets (evaluator/checks/peaks.py); the bytes from the task definition's tensor
shapes and dtypes for the workload's axes (evaluator/both_sides/taskdata.py), the same shapes the inputs are drawn with.
`integrity.physical_limit_hold` holds a ranked figure beyond either limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.both_sides.taskdata import Definition, TensorSpec, Workload
from evaluator.checks import peaks

# Bytes per element of each task dtype (evaluator/both_sides/taskdata.py DTYPES); fp4 packs two elements in a byte.
DTYPE_BYTES: dict[str, float] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float4_e2m1": 0.5,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


@dataclass(frozen=True)
class PhysicalLimits:
    """The limits of one workload on one GPU; a field is None when the tables do not know the GPU or dtype."""

    gpu_name: str | None
    peak_tflops: float | None  # dense tensor-core peak for `peak_dtype`
    peak_dtype: str | None
    io_bytes: int  # every tensor input read once and every output written once
    hbm_tbps: float | None

    @property
    def min_ms(self) -> float | None:
        """The least time one call can take: its bytes at the HBM bandwidth."""
        if not self.hbm_tbps or self.io_bytes <= 0:
            return None
        return self.io_bytes / (self.hbm_tbps * 1e12) * 1e3


def tensor_bytes(definition: Definition, spec: TensorSpec, axes: dict[str, int]) -> int:
    """Bytes of one tensor of the definition for the workload's axes (a scalar is passed by value: 0)."""
    if spec.is_scalar:
        return 0
    elements = 1
    for extent in definition.shape_of(spec, axes):
        elements *= extent
    return int(elements * DTYPE_BYTES.get(spec.dtype, 0))


def io_bytes(definition: Definition, workload: Workload) -> int:
    """The bytes a call must move at least: its tensor inputs read once and its outputs written once."""
    axes = dict(workload.axes)
    return sum(tensor_bytes(definition, s, axes) for s in (*definition.inputs, *definition.outputs))


def peak_for_inputs(definition: Definition, gpu_name: str | None) -> tuple[float | None, str | None]:
    """The dense tensor peak that bounds the task: the fastest of its tensor inputs' dtypes on this GPU (a task
    with bfloat16 and float32 inputs is bounded by the bfloat16 rate). A kernel that computes in a narrower
    precision than its inputs (bf16 inputs on fp8 tensor cores) can pass this peak; it is held for a person to
    judge, since it computed another product than the task's."""
    best: tuple[float | None, str | None] = (None, None)
    for spec in definition.inputs:
        if spec.is_scalar:
            continue
        peak = peaks.tensor_peak_tflops(gpu_name, spec.dtype)
        if peak is not None and (best[0] is None or peak > best[0]):
            best = (peak, spec.dtype)
    return best


def limits_for(definition: Definition, workload: Workload, gpu_name: str | None) -> PhysicalLimits:
    peak, dtype = peak_for_inputs(definition, gpu_name)
    return PhysicalLimits(gpu_name, peak, dtype, io_bytes(definition, workload), peaks.hbm_tbps(gpu_name))
