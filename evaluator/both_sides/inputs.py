"""Inputs and outputs of one call, made the same way in the trusted parent and in the candidate process.

Both sides draw random inputs from the same per-trial seed on the same GPU with torch's Philox generator,
so the candidate never receives tensors from the parent and the parent never runs candidate code. Seeds
come from `derive_seed(run_seed, ...)`; the run seed itself stays in the parent.

Used on both sides of the trust boundary: the parent makes reference inputs and compares, the candidate process
(and the trusted-baseline process) draws the same inputs, poisons outputs and loads the library baseline here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from evaluator.both_sides.task_families import Draw, draw_for
from evaluator.both_sides.taskdata import Definition, Task, TensorSpec, Workload

InputDeriver = Callable[[dict[str, Any]], dict[str, Any]]

_TORCH_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
_FLOATS = {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"}


def derive_seed(run_seed: bytes, *parts: object) -> int:
    """A 63-bit seed from the secret run seed and a label (workload uuid, trial number, purpose)."""
    h = hashlib.blake2b(run_seed, digest_size=8, person=b"ptxbench-seed")
    for p in parts:
        h.update(b"\x00" + str(p).encode())
    return int.from_bytes(h.digest(), "little") >> 1


def torch_dtype(name: str) -> Any:
    import torch

    if name not in _TORCH_DTYPES:
        raise NotImplementedError(f"dtype {name!r} is not supported by the evaluator's input generator")
    return getattr(torch, _TORCH_DTYPES[name])


def input_deriver(task: Task) -> InputDeriver | None:
    """The task's input generator (trusted task code), e.g. attention backward's forward pass for O and LSE."""
    gen = task.input_generator
    return load_baseline(gen.source, gen.function, gen.id) if gen is not None else None


def make_inputs(
    definition: Definition, workload: Workload, seed: int, device: str = "cuda", derive: InputDeriver | None = None
) -> list[Any]:
    """The inputs of one call in definition order: tensors drawn from `seed` by the rule of the task's family
    (evaluator/both_sides/task_families.py; standard normal unless it says otherwise), scalars from the workload.

    With `derive` (the task's input generator), the inputs it returns replace the drawn ones; it runs the same
    way in the parent and in the candidate process, so both hold the same values.
    """
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    values: list[Any] = []
    for spec in definition.inputs:
        desc = workload.inputs.get(spec.name, {"type": "random"})
        kind = desc.get("type", "random")
        if kind == "scalar":
            values.append(_scalar(spec, desc["value"]))
            continue
        if kind != "random":
            raise NotImplementedError(f"input {spec.name}: workload input type {kind!r} is not supported yet")
        shape = definition.shape_of(spec, workload.axes)
        values.append(_random_tensor(spec, shape, gen, device, draw_for(definition.op_type, spec.name)))
    if derive is not None:
        import torch

        with torch.no_grad():
            named = dict(zip((s.name for s in definition.inputs), values, strict=True))
            replaced = derive(dict(named))
        unknown = set(replaced) - set(named)
        if unknown:
            raise ValueError(f"input generator returned unknown inputs {sorted(unknown)}")
        values = [replaced.get(spec.name, named[spec.name]) for spec in definition.inputs]
        for spec, value in zip(definition.inputs, values, strict=True):
            if spec.name in replaced and tuple(value.shape) != tuple(definition.shape_of(spec, workload.axes)):
                raise ValueError(f"input generator returned {spec.name} with shape {tuple(value.shape)}")
    return values


def scalar_input(spec: TensorSpec, workload: Workload) -> Any:
    """The value of an input the workload gives as a scalar; None for a drawn tensor."""
    desc = workload.inputs.get(spec.name, {"type": "random"})
    return _scalar(spec, desc["value"]) if desc.get("type", "random") == "scalar" else None


def _scalar(spec: TensorSpec, value: Any) -> Any:
    # Every floating dtype, the narrow ones included: int() would turn a float8 scale of 0.5 into 0.
    if spec.dtype in _FLOATS:
        return float(value)
    if spec.dtype == "bool":
        return bool(value)
    return int(value)


def _random_tensor(spec: TensorSpec, shape: Sequence[int], gen: Any, device: str, draw: Draw) -> Any:
    import torch

    dtype = torch_dtype(spec.dtype)
    if spec.dtype in _FLOATS:
        # Drawn in fp32, then cast. Standard normal is how FlashInfer-Bench draws "random" inputs.
        if draw.distribution == "uniform":
            unit = torch.rand(tuple(shape), generator=gen, device=device, dtype=torch.float32)
            return (unit * (draw.high - draw.low) + draw.low).to(dtype)
        return torch.randn(tuple(shape), generator=gen, device=device, dtype=torch.float32).to(dtype)
    if spec.dtype == "bool":
        return torch.randint(0, 2, tuple(shape), generator=gen, device=device).to(torch.bool)
    low, high = (0, 16) if spec.dtype == "uint8" else (-8, 8)
    return torch.randint(low, high, tuple(shape), generator=gen, device=device, dtype=dtype)


def alloc_outputs(definition: Definition, workload: Workload, device: str = "cuda") -> list[Any]:
    """Preallocated outputs, poisoned: NaN for floating types, the type's maximum for integers."""
    import torch

    outputs = []
    for spec in definition.outputs:
        dtype = torch_dtype(spec.dtype)
        shape = tuple(definition.shape_of(spec, workload.axes))
        t = torch.empty(shape, dtype=dtype, device=device)
        poison(t)
        outputs.append(t)
    return outputs


def poison(t: Any) -> None:
    import torch

    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def load_reference(definition: Definition) -> Any:
    """The definition's reference `run` function (trusted task data, executed in the parent only)."""
    namespace: dict[str, Any] = {"__name__": f"ptxbench_reference_{definition.name}"}
    exec(compile(definition.reference, f"<reference {definition.name}>", "exec"), namespace)  # noqa: S102
    return namespace["run"]


def load_baseline(source: str, function: str, name: str) -> Any:
    """A task's library baseline function (trusted task data)."""
    namespace: dict[str, Any] = {"__name__": f"ptxbench_baseline_{name}"}
    exec(compile(source, f"<baseline {name}>", "exec"), namespace)  # noqa: S102
    return namespace[function]


def as_output_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
