"""The sm_100a tensor-share rule (evaluator/both_sides/arches.py) on real Blackwell counters: two Nsight Compute
2025.3.1 reports of `--set full` captured on a B200 and published by others, each one launch of an NVFP4 GEMM at
M=128, N=7168, K=16384 done with tcgen05 (UTCOMMA), one by CUTLASS, one hand-written. Their counters, and the
executions of each SASS opcode, were read from the report files with bench/ncu_report_metrics.py; the raw page of
the rule's counters was also printed from each report by Nsight Compute itself (`ncu --import ... --page raw
--csv --metrics`, bench/import_ncu_report.sh), which the arch stage's own parser reads here. Provenance in
tests/fixtures/ncu/README.md."""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
from pathlib import Path

import pytest

from evaluator.arch_check import tensor_share
from evaluator.arch_check.ncu import (
    SourceKernel,
    SourceRow,
    decide_arch,
    family_execution,
    parse_counters,
    parse_launches,
    tensor_core_flops,
)
from evaluator.binaries.sass import instruction_family
from evaluator.both_sides.arches import CounterShareRule, arch_for_capability, get_arch
from evaluator.both_sides.verdict import ArchStatus, SassCounts

NCU = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
CAPTURES = ("b200-nvfp4-cutlass", "b200-nvfp4-tcgen05-handwritten")
GEMM_FLOPS = 2 * 128 * 7168 * 16384  # a multiply-add counted as two
FP4_DENSE = "sm__ops_path_tensor_op_utcomma_src_fp4_dst_fp32_sparsity_off.sum"
RULE = get_arch("sm_100a").tensor_share
assert isinstance(RULE, CounterShareRule)


def _launch(name: str) -> dict:
    (launch,) = json.loads((NCU / f"{name}-counters.json").read_text())["launches"]  # one launch per report
    return launch


def _raw_page(launch: dict) -> str:
    """The captured launch laid out as `ncu --import --page raw --csv --metrics ...` prints one (the layout of the
    real H200 pages beside it), with the rule's counters as its columns."""
    metrics = launch["metrics"]
    out = io.StringIO()
    page = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    page.writerow(["ID", "Kernel Name", "Block Size", "Grid Size", "CC", "gpu__time_duration.sum", *RULE.metrics])
    page.writerow(["", "", "", "", "", "nsecond", *[""] * len(RULE.metrics)])
    cc = f"{metrics['device__attribute_compute_capability_major']}.{metrics['device__attribute_compute_capability_minor']}"
    values = [f"{metrics[m]:,.0f}" for m in RULE.metrics]
    dims = [f"({', '.join(map(str, launch[k]))})" for k in ("block", "grid")]
    page.writerow(["0", launch["mangled"], *dims, cc, f"{metrics['gpu__time_duration.sum']:.0f}", *values])
    return out.getvalue()


@pytest.mark.parametrize("name", CAPTURES)
def test_each_capture_is_one_launch_on_a_b200_which_is_sm_100a(name):
    metrics = _launch(name)["metrics"]
    assert metrics["device__attribute_display_name"] == "NVIDIA B200"
    arch = arch_for_capability(
        metrics["device__attribute_compute_capability_major"], metrics["device__attribute_compute_capability_minor"]
    )
    assert arch is not None and arch.name == "sm_100a"


@pytest.mark.parametrize("name", CAPTURES)
def test_every_counter_of_the_rule_is_in_a_b200_report_and_they_sum_to_the_gemms_flops(name):
    metrics = _launch(name)["metrics"]
    assert set(RULE.metrics) <= set(metrics)
    assert tensor_share.from_counters(RULE, [metrics]).flops == GEMM_FLOPS
    assert {m for m in RULE.metrics if metrics[m]} == {FP4_DENSE}  # dense FP4 work only, as the kernel does
    # Nsight Compute's counter of all FP4 tensor work agrees: nothing of it escaped the rule's counters.
    assert metrics["sm__ops_path_tensor_src_fp4_dst_fp32.sum"] == GEMM_FLOPS


@pytest.mark.parametrize("name", CAPTURES)
def test_a_full_b200_report_holds_each_counter_in_its_sparsity_halves_only(name):
    """Why the rule names the halves: the whole counters (`ncu --query-metrics` lists them too) are not in a report
    of `--set full`, and a rule asking for them gets no figure there, never a zero."""
    metrics = _launch(name)["metrics"]
    whole = tuple(sorted({m.replace("_sparsity_off", "").replace("_sparsity_on", "") for m in RULE.metrics}))
    assert len(whole) == 8 and not set(whole) & set(metrics)
    measured = tensor_share.from_counters(CounterShareRule(metrics=whole), [metrics])
    assert measured.flops is None and "lacks the counters" in measured.why_not


@pytest.mark.parametrize("name", CAPTURES)
def test_the_captured_counters_count_for_the_submissions_kernel_by_name_and_operand_type(name):
    launch = _launch(name)
    page = _raw_page(launch)
    own = [SourceKernel(name=launch["mangled"])]
    assert tensor_core_flops("sm_100a", own, page).flops == GEMM_FLOPS
    # Judged as an FP8 task, FP4 work is not the target's: only the UTCQMMA counters count.
    assert tensor_core_flops("sm_100a", own, page, operands="fp8").flops == 0
    # Another kernel's counters are not the submission's work.
    other = tensor_core_flops("sm_100a", [SourceKernel(name="another_librarys_kernel")], page)
    assert other.flops is None and "name none of the submission's kernels" in other.why_not


def _kernel(launch: dict) -> SourceKernel:
    """The launch as the arch stage's source page would give it, from the report's instruction statistics: one row
    per SASS opcode with its warp-level executions and its predicated-on thread executions (what `family_execution`
    sums per family; the statistics carry no separate all-threads count, so the predicated-on one stands for it)."""
    metrics = launch["metrics"]
    executed = metrics["sass__inst_executed_per_opcode"]["instances"]
    predicated_on = metrics["sass__thread_inst_executed_true_per_opcode"]["instances"]
    rows = [
        SourceRow(f"{i:#06x}", opcode, int(n), int(predicated_on.get(opcode, 0)), int(predicated_on.get(opcode, 0)))
        for i, (opcode, n) in enumerate(sorted(executed.items()))
    ]
    return SourceKernel(name=launch["mangled"], rows=rows)


def _static(kernel: SourceKernel) -> SassCounts:
    """Static counts of the opcodes that ran (the cubin inside the report is another project's code, not kept here)."""
    tcgen05 = sum(instruction_family(row.opcode) == "tcgen05" for row in kernel.rows)
    return SassCounts("sm_100a", {"tcgen05": tcgen05}, {}, ["tcgen05"], tcgen05, [kernel.name], len(kernel.rows))


@pytest.mark.parametrize("name", CAPTURES)
def test_a_b200_gemm_done_on_tcgen05_is_verified_end_to_end_on_its_captured_counts(name):
    launch = _launch(name)
    kernel, page = _kernel(launch), _raw_page(launch)
    executed, predicated_on = family_execution([kernel])["tcgen05"]
    assert executed > 0 and predicated_on > 0  # UTCOMMA, UTCCP, LDTM... ran with a true predicate

    judge = functools.partial(decide_arch, arch="sm_100a", sass=_static(kernel), kernels=[kernel], raw_page=page)
    check = judge(task_flops=GEMM_FLOPS)
    assert check.status == ArchStatus.VERIFIED, check.reason
    assert check.ptxbench_verified and check.tensor_core_share == pytest.approx(1.0)

    # The same launch against four times the work: a quarter of it on the tensor cores is a token share.
    token = judge(task_flops=4 * GEMM_FLOPS)
    assert token.status == ArchStatus.TOKEN and token.tensor_core_share == pytest.approx(0.25)
    # Judged as an FP8 task it did none of the target's work.
    fp8 = judge(task_flops=GEMM_FLOPS, operands="fp8")
    assert fp8.status == ArchStatus.TOKEN and fp8.tensor_core_flops == 0


def _printed_page(name: str) -> str:
    """The rule's raw page as Nsight Compute 2025.3.1 printed it from the report (bench/import_ncu_report.sh)."""
    return gzip.decompress((NCU / f"{name}-raw-rule.csv.gz").read_bytes()).decode()


@pytest.mark.parametrize("name", CAPTURES)
def test_the_page_nsight_compute_prints_gives_the_same_counters_launch_and_verdict(name):
    """Our report reader and Nsight Compute agree on every counter of the rule, and the arch stage's parser, on the
    page as the profiler prints it, finds the GEMM's FLOPs and judges the launch as above."""
    launch, page = _launch(name), _printed_page(name)
    ((kernel_name, counters),) = parse_counters(page, RULE.metrics)
    assert kernel_name == launch["mangled"]
    assert counters == {m: launch["metrics"][m] for m in RULE.metrics}
    assert sum(counters.values()) == GEMM_FLOPS
    (printed_launch,) = parse_launches(page)
    assert (printed_launch.grid, printed_launch.block) == (tuple(launch["grid"]), tuple(launch["block"]))

    kernel = _kernel(launch)
    check = decide_arch(arch="sm_100a", sass=_static(kernel), kernels=[kernel], raw_page=page, task_flops=GEMM_FLOPS)
    assert check.status == ArchStatus.VERIFIED, check.reason
    assert check.tensor_core_share == pytest.approx(1.0)
