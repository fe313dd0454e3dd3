"""A profiled call of several kernels of one library: Nsight Compute's source page repeats their blocks (captured on an
H100, tests/fixtures/ncu/README.md), while the arch stage reads one block per launch. The repeats are dropped down
to the launches the raw page shows, so that an honest two-kernel submission is not refused as "not of its run" and a
repeat never adds to the counts; blocks that repetition cannot explain are still refused."""

from __future__ import annotations

import gzip
from pathlib import Path

from evaluator.arch_check import ncu
from evaluator.arch_check.ncu import SourceKernel, SourceRow
from evaluator.both_sides.launches import Launch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
SOURCE_HEAD = gzip.decompress((FIXTURES / "h100-two-kernels-one-library-source-head.csv.gz").read_bytes()).decode()
PRINTED = (FIXTURES / "h100-two-kernels-one-library-printed.txt").read_text()
SPLITK = "_Z11gemm_splitkPK13__nv_bfloat16S1_Pfiii"
TO_BF16 = "_Z7to_bf16PKfP13__nv_bfloat16m"


def _gemm() -> SourceKernel:
    return ncu.parse_source_page(SOURCE_HEAD)[0]


def _again(kernel: SourceKernel) -> SourceKernel:
    return SourceKernel(kernel.name, list(kernel.rows))


def _to_bf16() -> SourceKernel:
    # Not in the capture (it ends inside gemm_splitk's second block): a small block of the same form.
    return SourceKernel(
        TO_BF16, [SourceRow("0x7fd2c77b3000", "F2FP.BF16.F32.PACK_AB R0, R3, R2", 8448, 270336, 270336)]
    )


def test_the_captured_page_repeats_a_kernels_block_row_for_row():
    kernels = ncu.parse_source_page(SOURCE_HEAD)
    assert [k.name for k in kernels] == [SPLITK, SPLITK]
    first, again = kernels
    assert len(first.rows) == 456 and len(again.rows) == 130
    assert again.rows == first.rows[:130]
    assert [launch.name for launch in ncu.parse_launches(PRINTED)] == [SPLITK, TO_BF16]


def test_each_launch_keeps_one_block_and_a_repeat_adds_nothing():
    gemm, to_bf16 = _gemm(), _to_bf16()
    page = [gemm, _again(gemm), to_bf16, _again(to_bf16)]  # each kernel twice, as the H100 printed it
    launches = ncu.parse_launches(PRINTED)
    assert "in the report only" in (ncu.report_not_of_run(page, PRINTED) or "")  # what held the honest control
    kept = ncu.one_block_per_launch(page, launches)
    assert [k is b for k, b in zip(kept, (gemm, to_bf16), strict=True)] == [True, True]
    assert ncu.report_not_of_run(kept, PRINTED) is None
    assert ncu.family_execution(kept) == ncu.family_execution([gemm, to_bf16])


def test_blocks_that_repetition_cannot_explain_are_kept_and_refused():
    gemm, to_bf16 = _gemm(), _to_bf16()
    launches = ncu.parse_launches(PRINTED)
    # A second gemm_splitk block with other counts (a tensor-core path written into the report): not a repeat.
    forged = SourceKernel(
        SPLITK, [SourceRow("0x7fd2c77b0d00", "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ", 4, 128, 128)]
    )
    page = [gemm, forged, to_bf16]
    assert ncu.one_block_per_launch(page, launches) == page
    assert "in the report only: " + SPLITK in (ncu.report_not_of_run(page, PRINTED) or "")
    # A launch without its block.
    assert "printed by the profiler only: " + TO_BF16 in (
        ncu.report_not_of_run(ncu.one_block_per_launch([gemm, _again(gemm)], launches), PRINTED) or ""
    )


def test_launches_of_one_kernel_keep_a_block_each_even_when_the_blocks_are_equal():
    gemm = _gemm()
    twice = [Launch(SPLITK, (128, 256, 4), (32, 8, 1))] * 2
    assert len(ncu.one_block_per_launch([gemm, _again(gemm)], twice)) == 2
    assert len(ncu.one_block_per_launch([gemm, _again(gemm), _again(gemm), _again(gemm)], twice)) == 2
