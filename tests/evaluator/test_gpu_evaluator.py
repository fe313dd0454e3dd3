"""GPU tests of the evaluator on an H100/H200 (sm_90a): adversarial fixtures and their expected verdicts.

Each test runs the real command line (`python -m evaluator run ... --json`) in a subprocess, as the portal's
workers do, and validates the verdict against the JSON schema. Set PTXBENCH_ARTIFACTS to a folder to keep
every verdict and the Nsight Compute source pages there (scripts/gpu_tests.sh does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gpu_requirements import hopper_problem

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "kernels"
SOLUTIONS = REPO / "tasks" / "gemm_n7168_k5120" / "solutions"
TASK = "gemm_n7168_k5120"
SMALL = "7c3574b8-ac27-5f03-8aba-2f5b9d87fc4e"  # M=128
HEADLINE = "7abd165d-8d16-5996-9d55-3b80c1718242"  # M=8192


_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]


def _artifacts() -> Path | None:
    value = os.environ.get("PTXBENCH_ARTIFACTS")
    if not value:
        return None
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def evaluate_cli(
    kernel: Path,
    name: str,
    *,
    workload: str = SMALL,
    stages: str | None = None,
    timeout: float | None = None,
    task: str = TASK,
) -> dict[str, Any]:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"verdict-{name}.json"
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"work-{name}"
    shutil.rmtree(workdir, ignore_errors=True)
    cmd = [sys.executable, "-m", "evaluator", "run", str(kernel), "--task", task, "--arch", "sm_90a"]
    cmd += ["--workload", workload, "--json", str(out), "--workdir", str(workdir)]
    if stages:
        cmd += ["--stages", stages]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    print(proc.stdout)
    print(proc.stderr[-3000:])
    assert proc.returncode == 0, f"evaluator exited {proc.returncode}: {proc.stderr[-2000:]}"
    verdict = json.loads(out.read_text())
    _validate(verdict)
    art = _artifacts()
    if art is not None:
        shutil.copy(out, art / f"verdict-{name}.json")
        for extra in ("ncu-source.csv", "ncu-raw.csv", "ncu.log"):
            src = workdir / "logs" / extra
            if src.is_file():
                shutil.copy(src, art / f"{name}-{extra}")
    return verdict


def _validate(verdict: dict[str, Any]) -> None:
    try:
        import jsonschema
    except ImportError:
        pytest.fail("jsonschema is needed to validate verdicts (carry its wheels to the GPU host)")
    schema = json.loads((REPO / "evaluator" / "verdict.schema.json").read_text())
    jsonschema.validate(verdict, schema)


def _passing_evaluation(name: str) -> None:
    """The evaluation right after a fault must pass: the GPU is usable again."""
    v = evaluate_cli(KERNELS / "simt_gemm.cu", name, stages="correctness")
    assert v["status"] == "PASSED", v["workloads"][0]["message"]


def test_simple_simt_gemm_passes_with_zero_target_instructions():
    v = evaluate_cli(KERNELS / "simt_gemm.cu", "simt_gemm")
    assert v["status"] == "PASSED"
    assert v["sass"]["target_count"] == 0
    assert v["arch_check"]["status"] == "absent"
    (w,) = v["workloads"]
    assert w["status"] == "PASSED"
    assert w["correctness"]["trials"] == 3
    assert 1 <= w["correctness"]["timed_outputs_checked"] <= 32  # CHECK_FRACTION of the 50 timed calls, capped
    assert w["correctness"]["relative_norm_error"] < 1e-2
    perf = w["performance"]
    assert perf["candidate"]["n"] == 50 and perf["baseline_timing"]["n"] == 50
    assert perf["candidate"]["method"] == "cupti", v["notes"]
    assert perf["latency_ms"] > 0 and perf["baseline_latency_ms"] > 0
    lo, hi = perf["speedup_ci95"]
    assert lo <= perf["speedup_factor"] <= hi
    assert 0 < perf["fraction_of_peak"] < 1
    env = v["environment"]
    assert "H" in env["gpu_name"] and env["gpu_uuid"] and env["driver_version"]
    assert env["peak_bf16_tflops"] > 100


@pytest.mark.skipif(not (SOLUTIONS / "simt_dead_wgmma").is_dir(), reason="reference kernel not in the tree")
def test_dead_wgmma_is_not_executed():
    v = evaluate_cli(SOLUTIONS / "simt_dead_wgmma" / "kernel.cu", "dead_wgmma", stages="correctness,arch")
    assert v["status"] == "PASSED"
    assert v["sass"]["families"]["gmma"] > 0
    a = v["arch_check"]
    assert a["status"] == "not_executed", a["reason"]
    assert a["families"]["gmma"]["predicated_on"] == 0


@pytest.mark.skipif(not (SOLUTIONS / "simt_token_wgmma").is_dir(), reason="reference kernel not in the tree")
def test_token_wgmma_is_token():
    v = evaluate_cli(SOLUTIONS / "simt_token_wgmma" / "kernel.cu", "token_wgmma", stages="correctness,arch")
    assert v["status"] == "PASSED"
    a = v["arch_check"]
    assert a["status"] == "token", a["reason"]
    assert a["ptxbench_verified"] is True
    assert a["families"]["gmma"]["executed"] > 0
    assert a["tensor_core_share"] is not None and a["tensor_core_share"] < 0.01


@pytest.mark.skipif(not (SOLUTIONS / "hopper_tma_wgmma").is_dir(), reason="reference kernel not in the tree")
def test_hopper_reference_gemm_is_verified_and_full():
    v = evaluate_cli(SOLUTIONS / "hopper_tma_wgmma" / "kernel.cu", "hopper_gemm", workload=HEADLINE)
    assert v["status"] == "PASSED", v["workloads"][0]["message"]
    a = v["arch_check"]
    assert a["status"] == "verified", a["reason"]
    assert a["full"] is True
    assert 0.9 < a["tensor_core_share"] < 1.2
    assert a["ncu_gpu_time_ms"] > 0 and a["cupti_median_ms"] > 0
    # the kernel time and launches came from the profiler's own output, not from the report file
    assert not [n for n in v["notes"] if "printed no raw page" in n], v["notes"]


def test_wrong_kernel_is_incorrect_numerical():
    v = evaluate_cli(KERNELS / "wrong_gemm.cu", "wrong", stages="correctness")
    assert v["status"] == "INCORRECT_NUMERICAL"
    assert v["workloads"][0]["correctness"]["failing_elements"] > 0


def test_nan_writer_is_incorrect_numerical():
    v = evaluate_cli(KERNELS / "nan_gemm.cu", "nan", stages="correctness")
    assert v["status"] == "INCORRECT_NUMERICAL"
    assert v["workloads"][0]["correctness"]["nan_count"] >= 1


def test_unwritten_output_fails():
    v = evaluate_cli(KERNELS / "unwritten_gemm.cu", "unwritten", stages="correctness")
    assert v["status"] == "INCORRECT_NUMERICAL"
    assert v["workloads"][0]["correctness"]["nan_count"] == 128 // 2 * 7168


def test_input_modifier_fails_with_that_reason():
    v = evaluate_cli(KERNELS / "input_modifier_gemm.cu", "input_modifier", stages="correctness")
    assert v["status"] == "INCORRECT_NUMERICAL"
    assert "modified its input" in v["workloads"][0]["message"]
    assert v["workloads"][0]["correctness"]["inputs_modified"] == ["A"]


def test_infinite_loop_times_out_then_gpu_is_usable():
    v = evaluate_cli(KERNELS / "infinite_loop.cu", "infinite_loop", stages="correctness", timeout=10)
    assert v["status"] == "TIMEOUT"
    assert "killed" in v["workloads"][0]["message"]
    _passing_evaluation("after_timeout")


def test_illegal_address_is_runtime_error_then_gpu_is_usable():
    v = evaluate_cli(KERNELS / "illegal_address.cu", "illegal_address", stages="correctness")
    assert v["status"] == "RUNTIME_ERROR"
    assert "illegal" in v["workloads"][0]["message"].lower()
    _passing_evaluation("after_illegal_address")


def test_out_of_memory_is_runtime_error_saying_so_then_gpu_is_usable():
    v = evaluate_cli(KERNELS / "oom.cu", "oom", stages="correctness")
    assert v["status"] == "RUNTIME_ERROR"
    assert "out of memory" in v["workloads"][0]["message"].lower()
    _passing_evaluation("after_oom")


def test_cublas_include_is_rejected_without_compiling():
    v = evaluate_cli(KERNELS / "cublas_gemm.cu", "cublas")
    assert v["status"] == "POLICY_REJECTED"
    assert v["compile"] is None
    assert any(f["rule"] == "forbidden-library" and f["line"] for f in v["policy"])
