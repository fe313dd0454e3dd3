"""The FP8 GEMM task (CPU): its folder is what the gemm_fp8 family says, its inputs are drawn by the family's rule
(e4m3 operands, scales away from 1), its reference and cuBLAS FP8 baseline (torch._scaled_mm, which runs on CPU
too) agree with float64 math, its tolerance holds kernels that drop a scale or re-quantize to e5m2 and passes an
honest reduced-precision accumulation, its physical limits use the FP8 peak, and its starters are sound."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from evaluator.both_sides import task_families
from evaluator.both_sides.flops import evaluate_flops
from evaluator.both_sides.inputs import input_deriver, make_inputs, scalar_input
from evaluator.both_sides.taskdata import Task, TensorSpec, Workload, find_task, load_tasks
from evaluator.checks import physical_limits
from evaluator.measure.compare import compare_output
from tests.support.task_suite_math import excess_error, gemm_exact, load_function
from tests.tasks.test_task_suite import REPO, TASKS

NAME = "gemm_fp8_n7168_k5120"
FAMILY = task_families.GEMM_FP8


@pytest.fixture(scope="module")
def task() -> Task:
    return find_task(TASKS, NAME)


def _inputs(task: Task, seed: int, **axes: int) -> list[torch.Tensor]:
    workload = Workload(uuid="", axes=axes, inputs={})
    return make_inputs(task.definition, workload, seed, device="cpu", derive=input_deriver(task))


def _exact(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor) -> torch.Tensor:
    return gemm_exact(a, b) * (scale_a.double() * scale_b.double())


def test_the_folder_is_what_the_family_says(task):
    d = task.definition
    assert d.op_type == FAMILY.op_type and task_families.family_of(d.op_type) is FAMILY
    assert [(s.name, s.shape, s.dtype) for s in d.inputs] == [
        ("A", ("M", "K"), "float8_e4m3fn"),
        ("B", ("N", "K"), "float8_e4m3fn"),
        ("scale_a", (), "float32"),
        ("scale_b", (), "float32"),
    ]
    assert [(s.name, s.shape, s.dtype) for s in d.outputs] == [("C", ("M", "N"), "bfloat16")]
    assert (task.group, task.flops) == ("gemm_fp8", "2*M*N*K")
    assert (task.atol, task.rtol, task.rel_norm_bound) == (0.02, 0.02, 0.02)
    assert [(b.id, b.function) for b in task.baselines] == [("cublas_fp8", "run")]
    assert [w.axes["M"] for w in task.workloads] == [128, 1024, 4096, 8192]
    assert task.workload(task.headline_workload).axes == {"M": 8192}
    for w in task.workloads:
        assert task.flops_for(w) == 2 * w.axes["M"] * 7168 * 5120


def test_inputs_are_e4m3_operands_and_scales_away_from_one(task):
    products = []
    for seed in range(40):
        a, b, scale_a, scale_b = _inputs(task, seed, M=8, N=16, K=64)
        assert (a.dtype, b.dtype, tuple(a.shape), tuple(b.shape)) == (
            torch.float8_e4m3fn,
            torch.float8_e4m3fn,
            (8, 64),
            (16, 64),
        )
        assert scale_a.dtype == scale_b.dtype == torch.float32 and scale_a.dim() == scale_b.dim() == 0
        for s in (float(scale_a), float(scale_b)):
            assert 0.125 <= s < 0.5
        products.append(float(scale_a) * float(scale_b))
        assert float(a.float().std()) > 0.5  # standard normal, cast to e4m3
    # Dropping a scale is off by a factor of 2 at least: the product never comes near 1.
    assert max(products) < 0.25 and min(products) >= 1 / 64
    # The same seed draws the same inputs (the parent and the candidate process each draw them).
    first, again = _inputs(task, 7, M=8, N=16, K=64), _inputs(task, 7, M=8, N=16, K=64)
    assert all(torch.equal(x.float(), y.float()) for x, y in zip(first, again, strict=True))


@pytest.mark.parametrize("m,n,k", [(7, 9, 40), (16, 33, 257)])
def test_reference_and_cublas_fp8_baseline_match_float64(task, m, n, k):
    inputs = _inputs(task, m * 1000 + k, M=m, N=n, K=k)
    exact = _exact(*inputs)
    reference = load_function(task.definition.reference, "run", f"reference_{NAME}")(*inputs)
    assert reference.dtype == torch.bfloat16 and reference.shape == (m, n)
    assert excess_error(reference, exact, task.atol, task.rtol) <= 0.1
    baseline = task.baselines[0]
    out = load_function(baseline.source, baseline.function, f"baseline_{NAME}")(*inputs)
    assert out.dtype == torch.bfloat16 and out.shape == (m, n)
    assert excess_error(out, exact, task.atol, task.rtol) <= 0.5


def _truncate(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Round toward zero to `bits` explicit mantissa bits: a model of a reduced-precision accumulator."""
    mantissa, exponent = torch.frexp(x)
    scale = 2.0 ** (bits + 1)
    return torch.ldexp(torch.trunc(mantissa * scale) / scale, exponent)


def _compare(task: Task, out: torch.Tensor, ref: torch.Tensor):
    return compare_output(
        out,
        ref,
        name="C",
        expected_shape=tuple(ref.shape),
        expected_dtype=torch.bfloat16,
        atol=task.atol,
        rtol=task.rtol,
        rel_norm_bound=task.rel_norm_bound,
    )


def test_the_tolerance_passes_promoted_accumulation_and_holds_shortcuts(task):
    a, b, scale_a, scale_b = _inputs(task, 3, M=32, N=64, K=1024)
    reference = load_function(task.definition.reference, "run", f"reference_{NAME}")(a, b, scale_a, scale_b)
    scale = float(scale_a) * float(scale_b)
    a64, b64 = a.double(), b.double()
    # 13-bit accumulation inside each 128-element k-slice, promoted to fp32 between slices (the expert kernel's way).
    total = torch.zeros(32, 64)
    for start in range(0, 1024, 128):
        part = torch.zeros(32, 64, dtype=torch.float64)
        for k0 in range(start, start + 128, 32):
            part = _truncate(part + a64[:, k0 : k0 + 32] @ b64[:, k0 : k0 + 32].t(), 13)
        total += part.float()
    assert _compare(task, (total * scale).to(torch.bfloat16), reference).ok
    # A kernel that drops a scale, or re-quantizes the inputs to e5m2 to go faster, is held.
    unscaled = (a.float() @ b.float().t() * float(scale_a)).to(torch.bfloat16)
    assert not _compare(task, unscaled, reference).ok
    a5, b5 = a.float().to(torch.float8_e5m2).float(), b.float().to(torch.float8_e5m2).float()
    requantized = _compare(task, (a5 @ b5.t() * scale).to(torch.bfloat16), reference)
    assert not requantized.ok and requantized.relative_norm_error > task.rel_norm_bound


def test_physical_limits_use_the_fp8_peak_and_the_family_bytes(task):
    workload = task.workload(task.headline_workload)
    limits = physical_limits.limits_for(task.definition, workload, "NVIDIA H200")
    assert (limits.peak_dtype, limits.peak_tflops) == ("float8_e4m3fn", 1978.9)
    m, n, k = 8192, 7168, 5120
    assert limits.io_bytes == m * k + n * k + 4 + 4 + 2 * m * n


def test_every_suite_task_moves_the_bytes_its_family_states():
    """The registry's bytes formula and the definition's shapes and dtypes (physical_limits) say the same."""
    for task in load_tasks(TASKS):
        family = task_families.family_of(task.definition.op_type)
        assert family is not None, task.name
        for w in task.workloads:
            axes = task.definition.axis_values(w.axes)
            assert physical_limits.io_bytes(task.definition, w) == evaluate_flops(family.io_bytes, axes), task.name


def test_a_float8_scalar_input_keeps_its_fraction():
    workload = Workload(uuid="", axes={}, inputs={"s": {"type": "scalar", "value": 0.5}})
    for dtype in ("float8_e4m3fn", "float8_e5m2", "bfloat16", "float32"):
        value = scalar_input(TensorSpec("s", None, dtype), workload)
        assert isinstance(value, float) and value == 0.5, dtype
    assert scalar_input(TensorSpec("s", None, "int32"), workload) == 0


def test_the_triton_starter_passes_the_policy_and_the_reference_in_the_interpreter(task):
    pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    from evaluator.source_policy.triton_policy import check_source

    starter = TASKS / NAME / "starter_triton.py"
    params = [s.name for s in (*task.definition.inputs, *task.definition.outputs)]
    assert check_source(starter.read_text(encoding="utf-8"), params) == []
    shapes = ["M=37,N=45,K=70", "M=64,N=96,K=128"]
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.triton_interpret", NAME, str(starter), *shapes],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert [r["shape"] for r in report] == shapes
    for r in report:
        assert r["status"] == "PASSED" and r["relative_norm_error"] < 1e-2, r


@pytest.mark.slow  # nvcc
def test_the_cuda_starter_compiles_for_sm90a(tmp_path):
    from tests.support.task_suite_build import compile_starter

    pytest.importorskip("tvm_ffi")
    so = tmp_path / "starter.so"
    compile_starter(TASKS / NAME / "starter.cu", so, "sm_90a")
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True).stdout
    assert "__tvm_ffi_run" in symbols


def test_every_family_names_pack_pages_that_a_pack_renders():
    from evaluator.suite.packs import DEFAULT_ROOT, load_packs

    fragments = {
        f
        for pack in load_packs(DEFAULT_ROOT)
        for f in json.loads((DEFAULT_ROOT / pack.id / "manifest.json").read_text())["fragments"]
    }
    for family in task_families.FAMILIES.values():
        assert family.knowledge_pages, family.name
        assert set(family.knowledge_pages) <= fragments, family.name


@pytest.mark.slow  # seconds of Triton compile
def test_the_triton_starter_compiles_for_sm90a_without_wgmma_or_tma(task, allow_unsandboxed_without_bwrap):
    pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    from evaluator.both_sides.verdict import OverallStatus
    from evaluator.pipeline import Options, evaluate

    source = (TASKS / NAME / "starter_triton.py").read_text(encoding="utf-8")
    verdict = evaluate(
        source,
        task,
        "sm_90a",
        stages=("policy", "compile", "sass"),
        options=Options(compile_timeout_s=300),
        language="triton",
    )
    assert verdict.status == OverallStatus.STATIC_ONLY, verdict.compile.output if verdict.compile else verdict.policy
    assert sorted(verdict.sass.kernels) == ["gemm_fp8_tile"]
    assert verdict.sass.families["gmma"] == 0 and verdict.sass.families["tma"] == 0
