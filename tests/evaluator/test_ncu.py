"""Nsight Compute source-page parsing on captured H200 CSVs, and every arch-status decision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evaluator.arch_check import tensor_share
from evaluator.arch_check.ncu import (
    NcuParseError,
    compare_timers,
    decide_arch,
    family_execution,
    ncu_error_reason,
    ncu_profile_command,
    other_tensor_note,
    parse_launches,
    parse_raw_metrics,
    parse_source_page,
    tensor_core_flops,
    tensor_evidence,
    tensor_evidence_note,
)
from evaluator.binaries.sass import count_families
from evaluator.both_sides.arches import family_of, get_arch, gpu_models
from evaluator.both_sides.verdict import ArchStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = (FIXTURES / "ncu" / "h200-probe-wgmma-executed.csv").read_text()
HOPPER_SASS = count_families((FIXTURES / "sass" / "hopper_sm90a.sass").read_text(), "sm_90a")
HGMMA_FLOPS = 2 * 64 * 8 * 16


def _zero_hgmma(text: str) -> str:
    """The same probe with the branch around the wgmma not taken: the HGMMA row reads 0 / 0 / 0."""
    out = []
    for line in text.splitlines():
        if "HGMMA" in line:
            fields = line.split('","')
            fields[4:7] = ["0", "0", "0"]
            line = '","'.join(fields)
        out.append(line)
    return "\n".join(out) + "\n"


def test_parse_real_sample():
    (kernel,) = parse_source_page(SAMPLE)
    assert kernel.name == "probe(float *, int)"
    assert len(kernel.rows) == 80
    hgmma = [r for r in kernel.rows if r.opcode.startswith("HGMMA")]
    assert len(hgmma) == 1
    row = hgmma[0]
    assert row.opcode == "HGMMA.64x8x16.F32.BF16"
    assert (row.executed, row.thread_executed, row.predicated_on) == (4, 128, 128)
    assert family_execution([kernel])["gmma"] == (4, 128)
    assert tensor_core_flops("sm_90a", [kernel]).flops == HGMMA_FLOPS  # one warpgroup issue


def test_verified_when_executed_and_doing_the_work():
    kernels = parse_source_page(SAMPLE)
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=kernels, task_flops=HGMMA_FLOPS)
    assert check.status == ArchStatus.VERIFIED
    assert check.ptxbench_verified is True
    assert check.full is False  # no TMA executed in the probe
    assert check.tensor_core_share == pytest.approx(1.0)
    assert check.families["gmma"].executed == 4 and check.families["gmma"].predicated_on == 128
    assert check.families["tma"].predicated_on == 0


def test_token_when_share_is_negligible():
    kernels = parse_source_page(SAMPLE)
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=kernels, task_flops=2.0 * 8192 * 7168 * 5120)
    assert check.status == ArchStatus.TOKEN
    assert check.ptxbench_verified is True  # PTXBench's rule alone would accept it
    assert check.tensor_core_share < 1e-6
    assert "threshold 50%" in check.reason


def test_not_executed_when_branch_not_taken():
    kernels = parse_source_page(_zero_hgmma(SAMPLE))
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=kernels, task_flops=HGMMA_FLOPS)
    assert check.status == ArchStatus.NOT_EXECUTED
    assert check.ptxbench_verified is False
    assert check.families["gmma"].static == 3 and check.families["gmma"].executed == 0


def test_absent_decided_from_static_sass_alone():
    simt = count_families("", "sm_90a")
    check = decide_arch(arch="sm_90a", sass=simt, kernels=None, task_flops=1.0)
    assert check.status == ArchStatus.ABSENT


def test_full_when_gmma_and_tma_both_execute():
    extra = (
        '"0x7fb37b7a0600","      UTMALDG.2D [UR8], [UR4]","0","0","1","1","1","1","1","0","0","-","-","-",'
        + ",".join(['"0"'] * 16)
        + "\n"
    )
    kernels = parse_source_page(SAMPLE + extra)
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=kernels, task_flops=HGMMA_FLOPS)
    assert check.status == ArchStatus.VERIFIED and check.full is True


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ('"Kernel Name","probe(float *, int)",\n', "no source page"),
        ("==PROF== Disconnected from process 1\n", "no source page"),
    ],
)
def test_empty_reports_are_errors(text, why):
    with pytest.raises(NcuParseError, match=why):
        parse_source_page(text)


def test_truncated_report_is_an_error():
    lines = SAMPLE.splitlines()
    cut = "\n".join(lines[:40]) + "\n" + lines[40][:30]  # a row broken off mid-way
    with pytest.raises(NcuParseError, match="truncated"):
        parse_source_page(cut)


def test_profile_error_status_carries_the_reason():
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=None, task_flops=1.0, error="ncu missing")
    assert check.status == ArchStatus.PROFILE_ERROR and check.reason == "ncu missing"
    assert check.ptxbench_verified is False


# --------------------------------------------------------------------------- sm_100a: the tcgen05 share rule
# UTCHMMA keeps its tile in a descriptor, so the rule sums Nsight Compute's UTC*MMA math-op counters over the
# submission's kernels (evaluator/both_sides/arches.py). No Blackwell capture exists here: the raw page below is SYNTHETIC,
# written by hand in the format of the real H200 raw page (tests/fixtures/ncu/README.md).

BLACKWELL_SASS = count_families((FIXTURES / "sass" / "blackwell_sm100a.sass").read_text(), "sm_100a")
UTCHMMA_SAMPLE = SAMPLE.replace(
    "HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0", "UTCHMMA gdesc[UR4], tmem[UR8]"
)
SYNTHETIC_B200_RAW = (FIXTURES / "ncu" / "synthetic-b200-tcgen05-raw.csv").read_text()
PROBE_TCGEN05_OPS = 4_194_304 + 1_048_576  # the probe's two non-zero UTCHMMA counters in the synthetic page


def _blackwell(raw_page, task_flops=PROBE_TCGEN05_OPS):
    kernels = parse_source_page(UTCHMMA_SAMPLE)
    return decide_arch(arch="sm_100a", sass=BLACKWELL_SASS, kernels=kernels, task_flops=task_flops, raw_page=raw_page)


def test_blackwell_tcgen05_executed_is_never_verified_without_its_share():
    for raw_page, why in (
        (None, "no raw page"),
        # a raw page of the probe without the UTC*MMA counters
        (RAW.replace("gemm_kernel", "probe(float *, int)"), "lacks the counters"),
        # the real H200 raw page: counters of other kernels only
        ((FIXTURES / "ncu" / "h200-bf16-matmul-1024-raw.csv").read_text(), "name none of the submission's kernels"),
        # the chip did not give a counter: "n/a" is no zero
        (SYNTHETIC_B200_RAW.replace('"4,194,304"', '"n/a"'), "lacks the counters"),
        (SYNTHETIC_B200_RAW.replace('"4,194,304"', '"inf"'), "lacks the counters"),
        (SYNTHETIC_B200_RAW.replace('"4,194,304"', '"-4,194,304"'), "lacks the counters"),
        ("", "unreadable raw page"),
    ):
        check = _blackwell(raw_page)
        assert check.ptxbench_verified is True  # tcgen05 ran: PTXBench's own rule alone would say verified
        assert check.status == ArchStatus.PROFILE_ERROR, why
        assert check.tensor_core_share is None and why in check.reason


def test_blackwell_share_is_the_sum_of_the_utcmma_counters_of_the_submissions_kernels():
    check = _blackwell(SYNTHETIC_B200_RAW)
    assert check.status == ArchStatus.VERIFIED
    assert check.tensor_core_flops == PROBE_TCGEN05_OPS and check.tensor_core_share == pytest.approx(1.0)
    # The foreign library kernel's 1e12 ops in the same page are not the submission's work: a token share.
    token = _blackwell(SYNTHETIC_B200_RAW, task_flops=1e12)
    assert token.status == ArchStatus.TOKEN and token.tensor_core_share == pytest.approx(PROBE_TCGEN05_OPS / 1e12)


def test_an_architecture_without_a_share_rule_is_never_verified(monkeypatch):
    from evaluator.both_sides import arches

    monkeypatch.setitem(arches.ARCHES, "sm_100a", replace(arches.ARCHES["sm_100a"], tensor_share=None))
    check = _blackwell(SYNTHETIC_B200_RAW)
    assert check.status == ArchStatus.PROFILE_ERROR and "no tensor-core share rule" in check.reason


def test_the_blackwell_rule_names_only_counters_ncu_lists_for_gb100():
    """Each counter of the rule is in `ncu --query-metrics --chip gb100` (Nsight Compute 2025.3.1, captured)."""
    from evaluator.both_sides.arches import ARCHES

    listed = {
        line.split()[0]
        for line in (FIXTURES / "ncu" / "gb100-query-metrics-utcmma.txt").read_text().splitlines()
        if line.startswith("sm__")
    }
    rule = ARCHES["sm_100a"].tensor_share
    assert rule.metrics and {m.removesuffix(".sum") for m in rule.metrics} <= listed
    # every UTC*MMA op counter, in its two sparsity halves (what a B200's `--set full` report holds), none whole:
    # the whole counter beside its halves would count the work twice
    assert {m for m in listed if "sparsity" in m} == {m.removesuffix(".sum") for m in rule.metrics}


def test_the_profile_collects_and_reads_the_counters_of_the_architectures_rule():
    from evaluator.both_sides.arches import ARCHES

    wanted = ",".join(("gpu__time_duration.sum", *ARCHES["sm_100a"].tensor_share.metrics))
    blackwell = ncu_profile_command("ncu", Path("r"), ["python"], arch="sm_100a")
    assert blackwell[blackwell.index("--metrics") + 1] == wanted
    # Hopper's rule reads the source page alone: no counter its chip could refuse
    hopper = ncu_profile_command("ncu", Path("r"), ["python"], arch="sm_90a")
    assert hopper[hopper.index("--metrics") + 1] == "gpu__time_duration.sum"


def test_read_report_asks_the_raw_page_for_the_rules_counters(tmp_path):
    from evaluator.arch_check.ncu import read_report
    from evaluator.both_sides.arches import ARCHES

    fake = tmp_path / "ncu"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != --page ]; do shift; done\necho "$2 $5"\n')
    fake.chmod(0o755)
    _, raw = read_report(str(fake), tmp_path / "r.ncu-rep", arch="sm_100a")
    assert raw.split()[1].split(",")[1:] == list(ARCHES["sm_100a"].tensor_share.metrics)


# --------------------------------------------------------------------------- one real capture, both rules
# A 1024^3 bf16 torch.matmul on an H200 (cuBLAS's nvjet HGMMA kernel), 2026-12-04: the source-page rule and the
# tensor-op counter agree to the FLOP, which is what the counter rule rests on (a multiply-add counts as two).


def test_the_mnemonic_rule_and_the_tensor_op_counter_agree_on_a_real_h200_capture():
    from evaluator.arch_check.ncu import parse_counters
    from evaluator.both_sides.arches import CounterShareRule

    kernels = parse_source_page((FIXTURES / "ncu" / "h200-bf16-matmul-1024-source-hgmma.csv").read_text())
    assert [k.name for k in kernels] == ["nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"]
    assert tensor_core_flops("sm_90a", kernels).flops == 2 * 1024**3

    metric = "sm__ops_path_tensor_src_bf16_dst_fp32.sum"
    raw = parse_counters((FIXTURES / "ncu" / "h200-bf16-matmul-1024-raw.csv").read_text(), (metric,))
    assert len(raw) == 6  # randn twice, the product, the copy, abs, the sum
    own = [values for name, values in raw if name == kernels[0].name]
    assert tensor_share.from_counters(CounterShareRule((metric,)), own).flops == 2 * 1024**3


def test_multiple_kernel_blocks():
    two = SAMPLE + SAMPLE.replace("probe(float *, int)", "second(int)")
    kernels = parse_source_page(two)
    assert [k.name for k in kernels] == ["probe(float *, int)", "second(int)"]
    assert family_execution(kernels)["gmma"] == (8, 256)


def test_thousands_separators_in_counts():
    text = SAMPLE.replace('"4","128","128","32","32"', '"4,096","131,072","131,072","32","32"', 1)
    (kernel,) = parse_source_page(text)
    assert kernel.rows[0].executed == 4096 and kernel.rows[0].predicated_on == 131072


RAW = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","gpu__time_duration.sum"\n'
    '"","","","","","","","","","","","usecond"\n'
    '"0","4242","python3","h200","gemm_kernel","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","812.45"\n'
    '"1","4242","python3","h200","epilogue","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","1,024.00"\n'
)


def test_parse_raw_metrics_converts_units():
    assert parse_raw_metrics(RAW) == [("gemm_kernel", pytest.approx(0.81245)), ("epilogue", pytest.approx(1.024))]
    with pytest.raises(NcuParseError):
        parse_raw_metrics("")


def test_timer_comparison_flags_disagreement():
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=parse_source_page(SAMPLE), task_flops=HGMMA_FLOPS)
    check.ncu_gpu_time_ms = 1.10
    compare_timers(check, 1.0, margin=0.2)
    assert check.timer_ratio == pytest.approx(1.1) and check.timer_disagreement is False
    check.ncu_gpu_time_ms = 1.5
    compare_timers(check, 1.0, margin=0.2)
    assert check.timer_disagreement is True


def test_timer_comparison_uses_the_ranked_latency_for_the_trusted_ratio():
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=parse_source_page(SAMPLE), task_flops=HGMMA_FLOPS)
    check.ncu_gpu_time_ms = 0.8
    # The candidate's timer says 0.1 ms; the ranked latency (bounded by the trusted clock) is 0.8 ms.
    compare_timers(check, 0.1, ranked_latency_ms=0.8)
    assert check.timer_ratio == pytest.approx(8.0) and check.trusted_ratio == pytest.approx(1.0)
    compare_timers(check, 0.8, ranked_latency_ms=None)
    assert check.ranked_latency_ms is None


def test_tensor_evidence_from_the_timed_rate():
    check = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=parse_source_page(SAMPLE), task_flops=HGMMA_FLOPS)
    check.status = ArchStatus.VERIFIED
    tensor_evidence(check, 700.0, 133.8)
    assert check.timed_beyond_non_tensor is True and tensor_evidence_note(check) is None
    tensor_evidence(check, 30.0, 133.8)  # a SIMT-speed kernel that showed wgmma only when profiled
    assert check.timed_beyond_non_tensor is False
    note = tensor_evidence_note(check)
    assert note is not None and "30 TFLOP/s" in note and "133.8" in note
    tensor_evidence(check, 30.0, None)  # a GPU without a table entry: no claim either way
    assert check.timed_beyond_non_tensor is None and tensor_evidence_note(check) is None
    check.status = ArchStatus.TOKEN
    tensor_evidence(check, 30.0, 133.8)
    assert tensor_evidence_note(check) is None  # nothing to qualify: not verified


def test_ncu_error_reasons():
    assert "ERR_NVGPUCTRPERM" in ncu_error_reason("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert "no kernel" in ncu_error_reason("==WARNING== No kernels were profiled.")
    assert ncu_error_reason("==ERROR== Failed to profile kernel") == "==ERROR== Failed to profile kernel"
    assert ncu_error_reason("==PROF== Connected to process") is None


def test_profile_command_leaves_clocks_alone_and_filters():
    cmd = ncu_profile_command("ncu", Path("r"), ["python", "x.py"])
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--nvtx-include") + 1] == "ptxbench_candidate/"
    assert cmd[-2:] == ["python", "x.py"]
    by_name = ncu_profile_command("ncu", Path("r"), ["python"], kernel_names=["_Z1kv", "a.b"])
    assert by_name[by_name.index("--kernel-name") + 1] == r"regex:^(_Z1kv|a\.b)$"
    # the raw page on the profiler's own output, with kernel names as the SASS gives them
    assert cmd[cmd.index("--page") + 1 : cmd.index("--page") + 3] == ["raw", "--csv"]
    assert cmd[cmd.index("--print-kernel-base") + 1] == "mangled"


# --------------------------------------------------------------------------- the raw page on the profiler's pipe
# Nsight Compute's stdout while it profiled a 1024^3 bf16 torch.matmul with `--page raw --csv` and `-o` (H200,
# 2026-12-05, bench/probe_ncu_pipe.sh): its ==PROF== lines, then the raw page of the one kernel, while the report
# was written beside it.
PIPE_CAPTURE = FIXTURES.parents[1] / "docs/runs/integrity/h200-2026-12-05/ncu-pipe/2-stdout.csv"
NVJET = "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"


def test_the_raw_page_is_read_from_what_the_profiler_printed():
    from evaluator.arch_check.ncu import parse_counters, printed_raw_page

    printed = printed_raw_page(PIPE_CAPTURE.read_text())
    assert printed is not None
    assert parse_raw_metrics(printed) == [(NVJET, pytest.approx(0.006976))]
    assert parse_launches(printed)[0].grid == (2, 64, 1)
    counters = parse_counters(printed, ("sm__ops_path_tensor_src_bf16_dst_fp32.sum",))
    assert counters == [(NVJET, {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 2 * 1024**3})]
    # the profiler's messages alone (a run whose page was not printed) are no page
    messages = "".join(line + "\n" for line in PIPE_CAPTURE.read_text().splitlines() if line.startswith("=="))
    assert printed_raw_page(messages) is None


def test_a_report_whose_launches_differ_from_the_printed_page_is_not_of_that_run():
    """The report file lies where the profiled process may write; the page the profiler printed does not. A
    report that adds a kernel (a tensor-core one to claim its work) or leaves one out (a foreign library's) is
    named as not of the run. Mutation caught: `report_not_of_run` matching a launch more than once (the
    doubled launch passes)."""
    from evaluator.arch_check.ncu import SourceKernel, report_not_of_run

    printed = PIPE_CAPTURE.read_text()
    assert report_not_of_run([SourceKernel(NVJET)], printed) is None
    added = report_not_of_run([SourceKernel(NVJET), SourceKernel("_Z6forgedv")], printed)
    assert added is not None and "in the report only: _Z6forgedv" in added
    left_out = report_not_of_run([], printed)
    assert left_out is not None and f"printed by the profiler only: {NVJET}" in left_out
    doubled = report_not_of_run([SourceKernel(NVJET), SourceKernel(NVJET)], printed)
    assert doubled is not None and "in the report only" in doubled


def test_a_name_printed_mangled_on_one_page_and_demangled_on_the_other_is_the_same_launch():
    """How a page prints names must not refuse an honest report: the reference GEMM's raw page (demangled names)
    against its source page with the name mangled, as `--print-kernel-base mangled` gives it. A different kernel
    is still told apart."""
    from evaluator.arch_check.ncu import SourceKernel, report_not_of_run

    raw = (FIXTURES / "ncu" / "gpu-hopper_gemm-M8192-raw.csv").read_text()
    mangled = "_Z21gemm_tma_wgmma_kernel14CUtensorMap_stS_P13__nv_bfloat16iii"
    assert report_not_of_run([SourceKernel(mangled)], raw) is None
    assert report_not_of_run([SourceKernel("_Z10other_kernv")], raw) is not None


# --------------------------------------------------------------------------- real H200 captures of the GEMM task
# Source pages of the reference kernels at M=8192 (docs/verdicts/raw/2026-11-30_h200, copied gzipped). They begin
# with ncu's ==PROF== lines and the profiled program's own print, which the parser must skip.

GEMM_FLOPS = 2.0 * 8192 * 7168 * 5120


def _golden(name: str) -> list:
    import gzip

    return parse_source_page(gzip.decompress((FIXTURES / "ncu" / name).read_bytes()).decode())


def _static_from(kernels, arch: str):
    """Static family counts of the profiled kernels: their source page lists every SASS instruction."""
    sass = "".join(
        f"\t\tFunction : {k.name}\n" + "".join(f"        /*{i:04x}*/   {r.source} ;\n" for i, r in enumerate(k.rows))
        for k in kernels
    )
    return count_families(sass, arch)


def test_golden_hopper_gemm_is_verified_full_with_whole_share():
    kernels = _golden("h200-gemm-hopper_tma_wgmma.csv.gz")
    check = decide_arch(arch="sm_90a", sass=_static_from(kernels, "sm_90a"), kernels=kernels, task_flops=GEMM_FLOPS)
    assert check.status == ArchStatus.VERIFIED and check.full is True
    assert check.families["gmma"].executed == 4_587_520
    assert check.families["gmma"].predicated_on == 146_800_640
    assert check.families["tma"].predicated_on == 286_720
    assert check.tensor_core_share == pytest.approx(1.0)


def test_golden_dead_wgmma_is_not_executed():
    kernels = _golden("h200-gemm-simt_dead_wgmma.csv.gz")
    sass = _static_from(kernels, "sm_90a")
    assert sass.families["gmma"] == 1
    check = decide_arch(arch="sm_90a", sass=sass, kernels=kernels, task_flops=GEMM_FLOPS)
    assert check.status == ArchStatus.NOT_EXECUTED
    assert check.families["gmma"].executed == 0 and check.ptxbench_verified is False


def test_golden_token_wgmma_is_token():
    kernels = _golden("h200-gemm-simt_token_wgmma.csv.gz")
    check = decide_arch(arch="sm_90a", sass=_static_from(kernels, "sm_90a"), kernels=kernels, task_flops=GEMM_FLOPS)
    assert check.status == ArchStatus.TOKEN and check.ptxbench_verified is True
    assert (check.families["gmma"].executed, check.families["gmma"].predicated_on) == (4, 128)
    assert check.tensor_core_share == pytest.approx(2 * 64 * 64 * 16 / GEMM_FLOPS)


def test_golden_causal_attention_share_above_one():
    kernels = _golden("h200-mha-causal-hopper_wgmma_fa.csv.gz")
    flops = 2.0 * 4 * 48 * 4096 * 4096 * 128  # the task's formula "2*B*H*S*S*D" at S=4096 (causal half of 4*...)
    check = decide_arch(arch="sm_90a", sass=_static_from(kernels, "sm_90a"), kernels=kernels, task_flops=flops)
    assert check.status == ArchStatus.VERIFIED and check.full is True
    # Diagonal tiles are computed whole and then masked: a little more than the task's FLOPs.
    assert 1.0 < check.tensor_core_share < 1.1


def test_golden_truncated_halfway_is_an_error():
    import gzip

    text = gzip.decompress((FIXTURES / "ncu" / "h200-gemm-hopper_tma_wgmma.csv.gz").read_bytes()).decode()
    cut = text[: len(text) // 2]
    with pytest.raises(NcuParseError, match="truncated"):
        parse_source_page(cut)


# --------------------------------------------------------------------------- captured by the evaluator's arch stage
# scripts/gpu_tests.sh on the H200, 2026-11-30: the reference GEMM at M=8192, the dead/token SIMT GEMMs at M=128.


def test_evaluator_capture_raw_page_with_nvtx_columns():
    text = (FIXTURES / "ncu" / "gpu-hopper_gemm-M8192-raw.csv").read_text()
    ((name, ms),) = parse_raw_metrics(text)
    assert name.startswith("gemm_tma_wgmma_kernel(")
    assert ms == pytest.approx(0.823648)


def test_evaluator_captures_decide_like_the_gpu_run():
    cases = {
        "gpu-hopper_gemm-M8192-source.csv.gz": (GEMM_FLOPS, ArchStatus.VERIFIED),
        "gpu-token_wgmma-M128-source.csv.gz": (2.0 * 128 * 7168 * 5120, ArchStatus.TOKEN),
        "gpu-dead_wgmma-M128-source.csv.gz": (2.0 * 128 * 7168 * 5120, ArchStatus.NOT_EXECUTED),
    }
    for name, (flops, status) in cases.items():
        kernels = _golden(name)
        check = decide_arch(arch="sm_90a", sass=_static_from(kernels, "sm_90a"), kernels=kernels, task_flops=flops)
        assert check.status == status, name


def test_read_report_returns_each_page_of_its_own_import(tmp_path):
    """The two imports run side by side; each output must still come back as the page it asked for."""
    from evaluator.arch_check.ncu import read_report

    fake = tmp_path / "ncu"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != --page ]; do shift; done\nsleep 0.2\necho "page $2"\n')
    fake.chmod(0o755)
    source, raw = read_report(str(fake), tmp_path / "r.ncu-rep")
    assert (source, raw) == ("page source\n", "page raw\n")


def test_non_tensor_peaks_name_whole_gpus_and_stay_below_tensor_peaks():
    from evaluator.checks import peaks

    assert peaks.non_tensor_peak_tflops("NVIDIA H200") == 133.8
    assert peaks.non_tensor_peak_tflops("NVIDIA H100 PCIe") == 102.4
    assert peaks.non_tensor_peak_tflops("NVIDIA GH200 480GB") is None  # whole words: GH200 is not an H200
    assert peaks.non_tensor_peak_tflops("NVIDIA B200") is None  # not stated: no claim
    for model in gpu_models():
        if model.non_tensor_tflops is not None:
            assert model.non_tensor_tflops < model.dense_tensor_tflops["bfloat16"] / 5


def test_a_second_tensor_core_path_in_the_module_is_disclosed_on_a_verified_check():
    """A kernel that branches to mma.sync when timed and to wgmma when profiled launches the same kernels either way,
    and runs above the non-tensor rate: only its static SASS shows the second path, and a verified check says so."""
    two = count_families((FIXTURES / "sass" / "hopper_two_tensor_paths.sass").read_text(), "sm_90a")
    check = decide_arch(arch="sm_90a", sass=two, kernels=parse_source_page(SAMPLE), task_flops=HGMMA_FLOPS)
    assert check.status == ArchStatus.VERIFIED and check.other_tensor_static == {"mma": 1}
    tensor_evidence(check, 700.0, 133.8)
    assert tensor_evidence_note(check) is None  # the rate alone shows tensor cores, not whose
    note = other_tensor_note(check)
    assert note is not None and "1 HMMA/IMMA/DMMA/BMMA/QMMA" in note and "rests on the profiled call alone" in note
    plain = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=parse_source_page(SAMPLE), task_flops=HGMMA_FLOPS)
    assert plain.status == ArchStatus.VERIFIED and plain.other_tensor_static == {}
    assert other_tensor_note(plain) is None
    check.status = ArchStatus.TOKEN
    assert other_tensor_note(check) is None  # nothing to qualify: not verified


def _with_opcode(text: str, opcode: str) -> str:
    """The probe's page with its one HGMMA row renamed: the same issue count, another operand type."""
    return text.replace("HGMMA.64x8x16.F32.BF16", opcode)


def test_a_task_that_names_fp8_operands_counts_only_fp8_wgmma_toward_its_share():
    """The FP8 GEMM's target is wgmma with FP8 operands (QGMMA): a kernel that converts its inputs and runs bf16
    wgmma does the work on tensor cores, but not the target's work, so its share counts none of it."""
    bf16 = parse_source_page(SAMPLE)
    fp8 = parse_source_page(_with_opcode(SAMPLE, "QGMMA.64x8x32.F32.E4M3.E4M3"))
    fp8_flops = 2 * 64 * 8 * 32
    done = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=fp8, task_flops=fp8_flops, operands="fp8")
    assert done.status == ArchStatus.VERIFIED and done.tensor_core_share == pytest.approx(1.0)
    converted = decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=bf16, task_flops=HGMMA_FLOPS, operands="fp8")
    assert converted.status == ArchStatus.TOKEN and converted.tensor_core_share == 0
    assert "counting fp8 operands only (QGMMA)" in converted.reason
    # A task that names no operand type counts any wgmma, as before.
    assert (
        decide_arch(arch="sm_90a", sass=HOPPER_SASS, kernels=bf16, task_flops=HGMMA_FLOPS).status == ArchStatus.VERIFIED
    )


def test_the_counter_rule_counts_only_the_named_operands_counters():
    """sm_100a: the probe's counters are bf16 and fp16 UTCHMMA ones, so for an FP8 task they are no FP8 work."""
    assert _blackwell(SYNTHETIC_B200_RAW).status == ArchStatus.VERIFIED  # no operand type named: every counter
    kernels = parse_source_page(UTCHMMA_SAMPLE)
    token = decide_arch(
        arch="sm_100a",
        sass=BLACKWELL_SASS,
        kernels=kernels,
        task_flops=PROBE_TCGEN05_OPS,
        raw_page=SYNTHETIC_B200_RAW,
        operands="fp8",
    )
    assert token.status == ArchStatus.TOKEN and token.tensor_core_flops == 0
    assert "fp8 operands only (4 counters)" in token.reason
    fp8 = "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32_sparsity_off.sum"
    rule = get_arch("sm_100a").tensor_share
    launch = {m: 0.0 for m in rule.metrics} | {fp8: 5.0, rule.metrics[0]: 7.0}
    assert tensor_share.from_counters(rule, [launch], "fp8").flops == 5.0
    assert tensor_share.from_counters(rule, [launch]).flops == 12.0


def test_every_operand_type_a_task_family_names_is_known_to_every_architectures_rule():
    """Else a task of that family could not be judged on that architecture (the lookup would fail mid-evaluation)."""
    from evaluator.both_sides.arches import ARCHES, CounterShareRule, MnemonicShareRule
    from evaluator.both_sides.task_families import FAMILIES

    named = {f.tensor_operands for f in FAMILIES.values() if f.tensor_operands}
    assert named == {"fp8"}
    for arch in ARCHES.values():
        rule = arch.tensor_share
        if isinstance(rule, MnemonicShareRule):
            assert named <= set(rule.operand_opcodes), arch.name
            assert all(family_of(b) in rule.families for op in named for b in rule.operand_opcodes[op])
        elif isinstance(rule, CounterShareRule):
            assert named <= set(rule.operand_metrics), arch.name
            assert all(rule.operand_metrics[op] and set(rule.operand_metrics[op]) <= set(rule.metrics) for op in named)
