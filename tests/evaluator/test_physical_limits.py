"""The physical limits of a workload on a named GPU, and the hold on a ranked figure beyond them (pure rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.checks import peaks
from evaluator.checks.integrity import BEYOND_PHYSICAL_LIMIT, HOLD_CODES, physical_limit_hold
from evaluator.checks.physical_limits import PhysicalLimits, io_bytes, limits_for, peak_for_inputs

REPO = Path(__file__).resolve().parents[2]
GEMM = load_task(REPO / "tasks" / "gemm_n4096_k4096")
MHA_BWD = load_task(REPO / "tasks" / "mha_bwd_d128")
REFERENCE_VERDICTS = sorted((REPO / "docs/runs/integrity/h200-2026-12-02h/verdicts").glob("*.json"))


def test_datasheet_tables_name_the_gpus_by_whole_words():
    assert peaks.tensor_peak_tflops("NVIDIA H200", "bfloat16") == 989.4
    assert peaks.tensor_peak_tflops("NVIDIA H100 80GB HBM3", "float8_e4m3fn") == 1978.9
    assert peaks.tensor_peak_tflops("NVIDIA H100 PCIe", "bfloat16") == 756.0
    assert peaks.tensor_peak_tflops("NVIDIA B200", "float4_e2m1") == 9000.0
    assert peaks.tensor_peak_tflops("NVIDIA GH200 480GB", "bfloat16") is None  # "GH200" is no H200
    assert peaks.tensor_peak_tflops("NVIDIA H200", "bool") is None
    assert (peaks.hbm_tbps("NVIDIA H200"), peaks.hbm_tbps("NVIDIA H100 80GB HBM3"), peaks.hbm_tbps("NVIDIA B200")) == (
        4.8,
        3.35,
        8.0,
    )
    # the bf16 column is the "of peak" denominator's: one figure per GPU
    for needed, tflops in peaks.DENSE_BF16_TFLOPS:
        assert peaks.tensor_peak_tflops(" ".join(needed), "bfloat16") == tflops


def test_a_workloads_bytes_are_its_tensors_read_once_and_outputs_written_once():
    m128 = next(w for w in GEMM.workloads if w.axes["M"] == 128)
    assert io_bytes(GEMM.definition, m128) == (128 * 4096 + 4096 * 4096 + 128 * 4096) * 2
    limits = limits_for(GEMM.definition, m128, "NVIDIA H200")
    assert limits.min_ms == pytest.approx(35_651_584 / 4.8e12 * 1e3)
    assert (limits.peak_tflops, limits.peak_dtype) == (989.4, "bfloat16")


def test_the_peak_that_bounds_a_task_is_its_fastest_input_dtype():
    """Attention backward takes bf16 tensors and a float32 LSE: bounded by the bf16 rate, not TF32's."""
    assert {s.dtype for s in MHA_BWD.definition.inputs} >= {"bfloat16", "float32"}
    assert peak_for_inputs(MHA_BWD.definition, "NVIDIA H200") == (989.4, "bfloat16")
    assert peak_for_inputs(MHA_BWD.definition, "a GPU of no table") == (None, None)


LIMITS = PhysicalLimits("NVIDIA H200", 989.4, "bfloat16", 48_000_000, 4.8)  # 0.01 ms at 4.8 TB/s


@pytest.mark.parametrize(
    ("latency_ms", "tflops", "named"),
    [
        (0.5, 990.0, ["990 TFLOP/s", "989.4 TFLOP/s dense bfloat16"]),
        (0.0099, 10.0, ["0.0099 ms per call", "0.01 ms", "48 MB", "4.8 TB/s"]),
        (0.0099, 1000.0, ["1000 TFLOP/s", "0.0099 ms per call"]),
    ],
)
def test_a_ranked_figure_beyond_either_limit_is_held_naming_both_figures(latency_ms, tflops, named):
    hold = physical_limit_hold(latency_ms=latency_ms, tflops=tflops, limits=LIMITS)
    assert hold is not None and hold.code == BEYOND_PHYSICAL_LIMIT
    assert all(text in hold.message for text in named), hold.message


def test_figures_within_the_limits_or_unknown_limits_hold_nothing():
    assert physical_limit_hold(latency_ms=0.01, tflops=989.4, limits=LIMITS) is None
    unknown = PhysicalLimits(None, None, None, 48_000_000, None)
    assert physical_limit_hold(latency_ms=1e-9, tflops=1e9, limits=unknown) is None
    assert BEYOND_PHYSICAL_LIMIT in HOLD_CODES


@pytest.mark.parametrize("path", REFERENCE_VERDICTS, ids=lambda p: p.stem)
def test_the_committed_reference_verdicts_are_within_the_limits(path):
    """Honest kernels are never held: every reference kernel's committed H200 verdict, and its library baseline,
    stays well inside both limits (the nearest is 11x above the bandwidth floor)."""
    verdict = json.loads(path.read_text())
    task = load_task(REPO / "tasks" / verdict["task"])
    assert REFERENCE_VERDICTS and verdict["environment"]["gpu_name"] == "NVIDIA H200"
    for row in verdict["workloads"]:
        perf = row["performance"]
        limits = limits_for(task.definition, task.workload(row["uuid"]), verdict["environment"]["gpu_name"])
        for latency in (perf["latency_ms"], perf["reference_latency_ms"]):  # the version-1 name
            tflops = task.flops_for(task.workload(row["uuid"])) / (latency * 1e-3) / 1e12
            assert physical_limit_hold(latency_ms=latency, tflops=tflops, limits=limits) is None
