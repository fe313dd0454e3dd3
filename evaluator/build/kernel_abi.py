"""The C++ `run` function a candidate kernel exports for a definition (docs/kernel-abi.md)."""

from __future__ import annotations

from evaluator.both_sides.taskdata import Definition


def run_signature(definition: Definition) -> str:
    """The C++ `run` signature a kernel must export for this definition (destination-passing style)."""
    params = []
    for spec in (*definition.inputs, *definition.outputs):
        if spec.is_scalar:
            ctype = {"float32": "double", "float64": "double", "bool": "bool"}.get(spec.dtype, "int64_t")
            params.append(f"{ctype} {spec.name}")
        else:
            params.append(f"tvm::ffi::TensorView {spec.name}")
    return "void run(" + ", ".join(params) + ")"
