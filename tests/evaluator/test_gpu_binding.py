"""On a host of several GPUs the evaluator, pinned by its worker to one GPU (CUDA_VISIBLE_DEVICES=<uuid>), hands
exactly that GPU to every process it starts (compile, trusted baseline and candidate, the profiled call), records
only that GPU's figures (never another GPU's clock standing in), and refuses a CUDA device other than the pinned
one. The processes' environments are captured where they are built or, for the profile, by a fake `ncu` at the
process edge; nvidia-smi is a fake on PATH printing what a two-GPU host prints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evaluator import envinfo, host
from evaluator.arch_check.arch_stage import run_arch_stage
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import Correctness, Performance, SassCounts, Status, WorkloadResult
from evaluator.build.triton_compile import triton_env
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.sandbox import child_env
from evaluator.measure.candidate import CandidateSetup, candidate_env

MINE, NEIGHBOUR = "GPU-22222222-aaaa-bbbb-cccc-111111111111", "GPU-11111111-aaaa-bbbb-cccc-000000000000"
TINY = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
DEVICE_VARS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


@pytest.fixture
def pinned(monkeypatch):
    """This process as its worker starts it: pinned to the second of two GPUs."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", MINE)
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES", raising=False)


def _on_path(tmp_path: Path, monkeypatch, name: str, script: str) -> None:
    folder = tmp_path / f"{name}-bin"
    folder.mkdir()
    tool = folder / name
    tool.write_text(script)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def _devices(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in DEVICE_VARS}


def test_compile_candidate_and_baseline_processes_get_the_pinned_gpu_only(pinned, tmp_path):
    """The compile (nvcc, the Triton compile) and the candidate/trusted-baseline processes (candidate.start
    passes candidate_env) each see the pinned GPU and nothing wider."""
    for env in (child_env(tmp_path), candidate_env(tmp_path), {**child_env(tmp_path), **triton_env(tmp_path)}):
        assert _devices(env) == {"CUDA_VISIBLE_DEVICES": MINE}


def test_the_profiled_process_gets_the_pinned_gpu_only(pinned, tmp_path, monkeypatch):
    """The arch stage's Nsight Compute run, captured by a fake `ncu` that writes the environment it was given."""
    captured = tmp_path / "ncu.env"
    _on_path(tmp_path, monkeypatch, "ncu", f"#!/bin/sh\nenv > {captured}\nexit 1\n")
    setup = CandidateSetup(TINY, list(TINY.workloads), tmp_path / "k.so", tmp_path / "work", tmp_path / "x", None)
    setup.workdir.mkdir()
    evaluated = [
        WorkloadResult(w.uuid, dict(w.axes), Status.PASSED, "", Correctness(), Performance(latency_ms=0.5))
        for w in TINY.workloads
    ]
    run_arch_stage(
        setup,
        arch="sm_90a",
        sass=SassCounts("sm_90a", {"gmma": 4, "tma": 0}, {}, ["gmma", "tma"], 4, ["k"], 10),
        evaluated=evaluated,
        correctness_passed=True,
        profile_seed=lambda w: 7,
        timeout_s=30,
        allow_unsandboxed_profile=False,
        report=lambda stage, message: None,
        timed=True,
    )
    env = dict(line.split("=", 1) for line in captured.read_text().splitlines() if "=" in line)
    assert _devices(env) == {"CUDA_VISIBLE_DEVICES": MINE}


TWO_GPUS_SMI = "1980\n1755\n"  # `--query-gpu=clocks.sm` naming no GPU, on a host of two: one row per GPU


def _fake_smi(tmp_path, monkeypatch):
    """An nvidia-smi that knows two GPUs: `-i <uuid>` answers for that GPU; naming none lists both."""
    _on_path(
        tmp_path,
        monkeypatch,
        "nvidia-smi",
        "#!/bin/sh\n"
        f'case "$*" in *"-i {MINE}"*) echo 1755;; *"-i {NEIGHBOUR}"*) echo 1980;; *"-i "*) '
        'echo "No devices were found" >&2; exit 6;; '
        f'*) printf "{TWO_GPUS_SMI}";; esac\n',
    )


def test_the_clock_read_is_the_pinned_gpus_never_a_neighbours(pinned, tmp_path, monkeypatch):
    _fake_smi(tmp_path, monkeypatch)
    assert envinfo.sm_clock_mhz(MINE) == 1755
    assert envinfo.sm_clock_mhz(None) == 1755  # no UUID given: the pin names the GPU
    assert envinfo.sm_clock_mhz("GPU-unknown") is None  # not the first GPU's 1980
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert envinfo.sm_clock_mhz(None) is None  # two GPUs and nothing names one: no figure rather than GPU 0's


def test_parsers_on_captured_text():
    assert envinfo.only_row("1755\n") == "1755"
    assert envinfo.only_row(TWO_GPUS_SMI) is None
    assert envinfo.only_row("") is None
    assert envinfo.pinned_gpu({"CUDA_VISIBLE_DEVICES": MINE}) == MINE
    assert envinfo.pinned_gpu({"CUDA_VISIBLE_DEVICES": f"{MINE},{NEIGHBOUR}"}) is None
    assert envinfo.pinned_gpu({"CUDA_VISIBLE_DEVICES": "1"}) is None  # an index is not an identity
    assert envinfo.pinned_gpu({}) is None


def test_a_cuda_device_other_than_the_pinned_gpu_is_refused():
    host.check_pinned_gpu(MINE, MINE)
    host.check_pinned_gpu(None, NEIGHBOUR)  # not pinned (a developer's machine): nothing to compare
    host.check_pinned_gpu(MINE, None)  # a torch that reports no UUID
    with pytest.raises(EnvironmentProblem, match=f"pinned to GPU {MINE} .* its CUDA device is {NEIGHBOUR}"):
        host.check_pinned_gpu(MINE, NEIGHBOUR)
