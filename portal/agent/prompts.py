"""Pure: the conversation's opening messages. System: rules, the knowledge pack and the ABI starter;
first user message: the task definition with its `run` signature."""

from __future__ import annotations

from typing import Any

RULES = """You are writing one CUDA kernel file for PTXBench, which checks three things in order:
1. correctness against a PyTorch reference on every workload (atol = rtol = 1e-2; an element fails only if both are exceeded);
2. that the architecture's target instructions are in the SASS and really execute on the timed workload;
3. speed against the library baseline (median of many timed calls).

How to answer:
- Reply with the complete .cu file in one fenced code block marked ```cuda. If your reply has several code blocks, the last one that looks like a kernel file is evaluated.
- The file follows the kernel ABI below exactly: it exports `run` with TVM_FFI_DLL_EXPORT_TYPED_FUNC, takes all inputs then all preallocated outputs, and launches on the framework's stream.
- After each attempt you get the evaluator's feedback (compile errors, per-workload status and errors, instruction report, speed); fix or improve the kernel and answer with the whole file again.
"""


TRITON_RULES = """You are writing one Triton kernel file (Python) for PTXBench, which checks three things in order:
1. correctness against a PyTorch reference on every workload (atol = rtol = 1e-2; an element fails only if both are exceeded);
2. that the architecture's target instructions are in the SASS of your compiled kernels and really execute on the timed workload;
3. speed against the library baseline (median of many timed calls).

How to answer:
- Reply with the complete Python file in one fenced code block marked ```python. If your reply has several code blocks, the last one that looks like a Triton file is evaluated.
- The file defines @triton.jit kernels and a function `run` that takes all inputs then all preallocated outputs (PyTorch tensors on the GPU) and launches your kernels; it returns nothing.
- Host code may only read shapes, strides and dtypes, make views, allocate workspace with torch.empty and launch kernels: no PyTorch compute (no @, torch.matmul, torch.nn.functional, tensor methods that compute or copy), no imports other than triton, triton.language, triton.tools.tensor_descriptor, math and torch, no exec/eval/getattr. triton.autotune is not allowed: choose block sizes, num_warps and num_stages yourself.
- Kernels are compiled ahead of time from what `run` launches for each workload's shapes: decide what to launch from shapes only.
- After each attempt you get the evaluator's feedback (compile errors, per-workload status and errors, instruction report, speed); fix or improve the kernel and answer with the whole file again.
"""


def system_prompt(*, arch: str, pack_text: str, starter: str, language: str = "cuda") -> str:
    parts = [(TRITON_RULES if language == "triton" else RULES).strip(), f"Target architecture: {arch}."]
    if pack_text.strip():
        parts.append("# Knowledge pack\n\n" + pack_text.strip())
    if starter.strip():
        parts.append(
            "# ABI starter\n\nA minimal correct kernel file for this task (slow; it shows the ABI, not the method):\n\n"
            f"```{'python' if language == 'triton' else 'cuda'}\n{starter.strip()}\n```"
        )
    return "\n\n".join(parts) + "\n"


def _shape(spec: dict[str, Any]) -> str:
    dims = spec.get("shape")
    return "scalar" if dims is None else "[" + ", ".join(str(d) for d in dims) + "]"


def task_message(
    *,
    name: str,
    description: str,
    definition: dict[str, Any],
    workloads: list[dict[str, Any]],
    run_signature: str,
    families: list[str],
    arch: str,
    language: str = "cuda",
) -> str:
    lines = [f"# Task: {name}", "", description.strip(), ""]
    lines += ["## Signature", "", "| name | role | shape | dtype | description |", "| --- | --- | --- | --- | --- |"]
    for role, key in (("input", "inputs"), ("output", "outputs")):
        for tensor, spec in (definition.get(key) or {}).items():
            lines.append(
                f"| {tensor} | {role} | {_shape(spec)} | {spec.get('dtype', '')} | {spec.get('description', '')} |"
            )
    lines += ["", "## Axes", ""]
    for axis, spec in (definition.get("axes") or {}).items():
        value = f" = {spec['value']}" if spec.get("type") == "const" else " (varies by workload)"
        note = f": {spec['description']}" if spec.get("description") else ""
        lines.append(f"- {axis}{value}{note}")
    lines += ["", "## Workloads (every one is checked for correctness)", ""]
    for w in workloads:
        axes = ", ".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items())
        lines.append(
            f"- {axes}" + (" (headline: instructions and speed are measured here)" if w.get("headline") else "")
        )
    reference = definition.get("reference")
    if reference:
        lines += ["", "## PyTorch reference", "", "```python", str(reference).strip(), "```"]
    lines += [
        "",
        "## The function your file must " + ("define" if language == "triton" else "export"),
        "",
        "```python" if language == "triton" else "```cpp",
        run_signature.strip(),
        "```",
        "",
        f"Target architecture {arch}: the instructions that count are {', '.join(families) or 'none listed'}.",
        "Answer with the complete Python file in one ```python block."
        if language == "triton"
        else "Answer with the complete .cu file in one ```cuda block.",
    ]
    return "\n".join(lines) + "\n"
