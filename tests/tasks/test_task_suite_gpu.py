"""The PTXBench task suite on a GPU: on each task's smallest workload every reference and library baseline agrees
with float64 math within the evaluator's tolerance with margin, and the starters build with nvcc and pass against
the reference. Set TASK_SUITE_REPORT=path.json to keep the measured error ratios (docs/baselines.md cites them)."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from evaluator.both_sides.arches import arch_for_capability  # noqa: E402
from evaluator.both_sides.inputs import input_deriver, make_inputs  # noqa: E402
from evaluator.both_sides.taskdata import Task, Workload, load_tasks  # noqa: E402
from tests.support.task_suite_build import compile_all  # noqa: E402
from tests.support.task_suite_math import (  # noqa: E402
    attention_exact,
    attention_grads_from_inputs,
    excess_error,
    gemm_exact,
    load_function,
    relative_norm_error,
    tolerance_ratio,
)

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: torch.cuda.is_available() is false", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
SUITE = sorted(t.name for t in load_tasks(TASKS) if "suite:ptxbench" in t.definition.tags)

# Beyond the rounding of the output dtype, as a fraction of the tolerance (see task_suite_math.excess_error).
REFERENCE_MARGIN = 0.1  # the fp32 references
BASELINE_MARGIN = 0.5  # cuBLAS/cuDNN/flash round intermediates (P, dS) to bf16; half the tolerance still holds
REL_NORM_BOUND = 2.5e-2  # half the evaluator's relative-norm bound (5e-2)

_report: list[dict] = []


@pytest.fixture(scope="module", autouse=True)
def _write_report():
    yield
    path = os.environ.get("TASK_SUITE_REPORT")
    if path:
        Path(path).write_text(json.dumps(_report, indent=1))


@pytest.fixture(scope="module")
def suite() -> dict[str, Task]:
    return {t.name: t for t in load_tasks(TASKS)}


def _causal(name: str) -> bool:
    return name.endswith("_causal")


def _inputs(task: Task, axes: dict[str, int], seed: int) -> list[torch.Tensor]:
    """The evaluator's inputs: drawn by the task family's rule, derived ones replaced."""
    workload = Workload(uuid="", axes=axes, inputs={})
    return make_inputs(task.definition, workload, seed, device="cuda", derive=input_deriver(task))


def _exact(task: Task, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    if task.group == "gemm":
        return (gemm_exact(*inputs),)
    if task.group == "gemm_fp8":
        a, b, scale_a, scale_b = inputs
        return (gemm_exact(a, b) * (scale_a.double() * scale_b.double()),)
    if task.group == "mha_fwd":
        return attention_exact(*inputs, _causal(task.name))
    return attention_grads_from_inputs(*inputs, _causal(task.name))


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _smallest(task: Task) -> dict[str, int]:
    return dict(task.workloads[0].axes)


@pytest.mark.parametrize("name", SUITE)
def test_reference_and_baselines_match_float64(suite, name):
    task = suite[name]
    axes = _smallest(task)
    inputs = _inputs(task, axes, seed=1234)
    exact = _exact(task, inputs)
    candidates = [("reference", load_function(task.definition.reference, "run", f"ref_{name}"), REFERENCE_MARGIN)]
    candidates += [
        (b.id, load_function(b.source, b.function, f"{b.id}_{name}"), BASELINE_MARGIN) for b in task.baselines
    ]
    failures = []
    for label, fn, margin in candidates:
        outputs = _as_tuple(fn(*inputs))
        torch.cuda.synchronize()
        assert len(outputs) == len(task.definition.outputs), label
        for spec, out, ex in zip(task.definition.outputs, outputs, exact, strict=True):
            expected_shape = tuple(task.definition.axis_values(axes)[a] for a in spec.shape)
            assert tuple(out.shape) == expected_shape and out.dtype == getattr(torch, spec.dtype), (label, spec.name)
            excess = excess_error(out, ex, task.atol, task.rtol)
            rel = relative_norm_error(out, ex)
            _report.append(
                {"task": name, "axes": axes, "impl": label, "output": spec.name, "excess": excess, "rel_norm": rel}
            )
            if not (excess <= margin and rel <= REL_NORM_BOUND):
                failures.append(f"{label}.{spec.name}: excess {excess:.3f} (margin {margin}), rel-norm {rel:.2e}")
    assert not failures, failures


# --------------------------------------------------------------------------- starters


@pytest.fixture(scope="module")
def starters(suite, tmp_path_factory) -> dict[str, Path]:
    major, minor = torch.cuda.get_device_capability()
    arch = arch_for_capability(major, minor)
    if arch is None:
        pytest.skip(f"compute capability {major}.{minor} is not an architecture PTXBench targets")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    pytest.importorskip("tvm_ffi")
    out = tmp_path_factory.mktemp("starters")
    return compile_all(TASKS, SUITE, out, arch.name, workers=min(8, os.cpu_count() or 1))


def _odd_axes(task: Task) -> dict[str, dict[str, int]]:
    """A shape that is no multiple of any tile: the starters read all sizes from the tensors."""
    if task.group in ("gemm", "gemm_fp8"):
        return {"M": 77}
    return {"S": 77}


@pytest.mark.parametrize("name", SUITE)
def test_starter_passes_against_the_reference(suite, starters, name):
    import tvm_ffi

    task = suite[name]
    module = tvm_ffi.load_module(str(starters[name]))
    reference = load_function(task.definition.reference, "run", f"ref_{name}")
    cases = [_smallest(task), _odd_axes(task)]
    for axes in cases:
        inputs = _inputs(task, axes, seed=99)
        outputs = []
        for spec in task.definition.outputs:
            shape = tuple(task.definition.axis_values(axes)[a] for a in spec.shape)
            outputs.append(torch.full(shape, float("nan"), dtype=getattr(torch, spec.dtype), device="cuda"))
        module.run(*inputs, *outputs)
        torch.cuda.synchronize()
        expected = _as_tuple(reference(*inputs))
        for spec, out, ref in zip(task.definition.outputs, outputs, expected, strict=True):
            ratio = tolerance_ratio(out, ref, task.atol, task.rtol)
            rel = relative_norm_error(out, ref.double())
            _report.append(
                {"task": name, "axes": axes, "impl": "starter", "output": spec.name, "ratio": ratio, "rel_norm": rel}
            )
            assert ratio <= 1.0 and not math.isnan(rel) and rel <= 5e-2, (axes, spec.name, ratio, rel)
