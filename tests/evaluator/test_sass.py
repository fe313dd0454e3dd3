"""SASS parsing on committed golden cuobjdump output for sm_90a and sm_100a."""

from __future__ import annotations

from pathlib import Path

from evaluator.binaries.sass import count_families, instruction_family, mma_flops_per_issue, parse_sass

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sass"
HOPPER = (FIXTURES / "hopper_sm90a.sass").read_text()
BLACKWELL = (FIXTURES / "blackwell_sm100a.sass").read_text()


def test_hopper_golden_counts():
    c = count_families(HOPPER, "sm_90a")
    assert c.families == {"gmma": 3, "tma": 3, "tcgen05": 0, "mma": 0}
    assert c.target_families == ["gmma", "tma"]
    assert c.target_count == 6
    assert c.opcodes == {
        "HGMMA.64x16x16.F32.BF16": 1,
        "HGMMA.64x8x16.F32.BF16": 2,
        "UTMALDG.2D": 1,
        "UTMAREDG.2D.ADD": 1,
        "UTMASTG.2D": 1,
    }
    assert set(c.kernels) == {
        "_Z16wgmma_tma_kernel14CUtensorMap_stPfi",
        "_Z11simt_kernelPKfPfi",
        "_Z17dead_wgmma_kernelPfi",
    }


def test_utmacmdflush_is_not_a_transfer():
    assert instruction_family("UTMACMDFLUSH") is None
    assert instruction_family("UTMALDG.2D") == "tma"


def test_per_kernel_attribution():
    by_kernel: dict[str, list[str]] = {}
    for ins in parse_sass(HOPPER):
        if instruction_family(ins.opcode):
            by_kernel.setdefault(ins.kernel, []).append(ins.base)
    assert by_kernel["_Z17dead_wgmma_kernelPfi"] == ["HGMMA"]
    assert "_Z11simt_kernelPKfPfi" not in by_kernel
    assert sorted(by_kernel["_Z16wgmma_tma_kernel14CUtensorMap_stPfi"]) == [
        "HGMMA",
        "HGMMA",
        "UTMALDG",
        "UTMAREDG",
        "UTMASTG",
    ]


def test_blackwell_golden_counts():
    c = count_families(BLACKWELL, "sm_100a")
    assert c.target_families == ["tcgen05"]
    assert c.families["gmma"] == 0 and c.families["tma"] == 0
    bases = sorted({op.split(".")[0] for op in c.opcodes})
    assert bases == ["LDTM", "STTM", "UTCATOMSWS", "UTCBAR", "UTCHMMA"]
    assert c.families["tcgen05"] == c.target_count == 7


def test_same_sass_counted_for_other_arch_targets():
    # Hopper SASS judged against the Blackwell targets has no tcgen05.
    assert count_families(HOPPER, "sm_100a").target_count == 0


def test_predicate_guard_is_stripped():
    text = (
        "\t\tFunction : k\n"
        "        /*0010*/              @P0 HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;  /* 0x0 */\n"
        "        /*0020*/             @!UPT UTMALDG.2D [UR8], [UR4] ;  /* 0x0 */\n"
        "        /*0030*/                   EXIT ;  /* 0x0 */\n"
    )
    ins = parse_sass(text)
    assert [(i.opcode, i.predicated) for i in ins] == [
        ("HGMMA.64x256x16.F32.BF16", True),
        ("UTMALDG.2D", True),
        ("EXIT", False),
    ]


def test_mma_flops_per_issue():
    assert mma_flops_per_issue("HGMMA.64x256x16.F32.BF16") == 2 * 64 * 256 * 16
    assert mma_flops_per_issue("QGMMA.64x128x32.F32.E4M3.E4M3") == 2 * 64 * 128 * 32
    assert mma_flops_per_issue("UTCHMMA") is None
    assert mma_flops_per_issue("FFMA") is None


def test_empty_input():
    c = count_families("", "sm_90a")
    assert c.instructions == 0 and c.target_count == 0 and c.kernels == []


def test_resource_usage_per_function_from_a_shared_library_and_a_cubin():
    from evaluator.binaries.sass import parse_resource_usage
    from evaluator.both_sides.verdict import KernelFootprint

    # `cuobjdump --dump-resource-usage` of a tvm-ffi library (two fatbin ELFs, one with no function) and of a
    # cubin with three kernels: SHARED counts the 1 KB the driver reserves (ptxas said 8448 and 400 bytes smem).
    lib = parse_resource_usage((FIXTURES / "res_usage_gemm_tiled_so.txt").read_text())
    assert lib == {"_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii": [KernelFootprint(32, 9472)]}
    cubin = parse_resource_usage((FIXTURES / "res_usage_three_kernels_cubin.txt").read_text())
    assert cubin == {
        "_Z4statPf": [KernelFootprint(10, 1424)],
        "_Z7dynsmemPf": [KernelFootprint(10, 1024)],
        "_Z6nosmemPf": [KernelFootprint(8, 1024)],
    }
    hopper = parse_resource_usage((FIXTURES / "res_usage_hopper_sm90a.txt").read_text())
    assert hopper["_Z16wgmma_tma_kernel14CUtensorMap_stPfi"] == [KernelFootprint(38, 9224)]
    assert hopper["_Z11simt_kernelPKfPfi"] == [KernelFootprint(12, 0)]  # sm_90a without the reserve here
    assert parse_resource_usage("") == {} and parse_resource_usage(" Function x:\n garbage\n") == {}


def test_warp_level_mma_is_counted_as_a_second_tensor_path_not_as_a_target():
    """One kernel with a wgmma path and an mma.sync path (both in its static SASS): HMMA is the `mma` family, which
    no architecture targets, and the register moves the compiler puts on the MMA pipe (HFMA2.MMA) are not in it."""
    two = count_families((FIXTURES / "hopper_two_tensor_paths.sass").read_text(), "sm_90a")
    assert two.families["gmma"] == 1 and two.families["mma"] == 1
    assert two.target_count == 1  # the HMMA is not target use
    assert two.opcodes["HMMA.16816.F32.BF16"] == 1
    moves = (FIXTURES / "hopper_simt_mma_pipe_moves.sass").read_text()
    assert moves.count("HFMA2.MMA") == 5
    simt = count_families(moves, "sm_90a")
    assert simt.families["mma"] == 0 and simt.target_count == 0
    assert instruction_family("HFMA2.MMA") is None and instruction_family("HMMA.16816.F32.BF16") == "mma"


def test_fp8_mma_sync_is_counted_as_a_second_tensor_path_wherever_it_compiles():
    """An FP8 GEMM's warp-level path: on sm_90a the compiler turns e4m3 mma.sync into two HMMA, where the GPU has an
    FP8 warp-level MMA (sm_89) into one QMMA; both are the `mma` family, neither is the FP8 target (QGMMA)."""
    hopper = count_families((FIXTURES / "hopper_fp8_mma_sync.sass").read_text(), "sm_90a")
    assert hopper.families["mma"] == 2 and hopper.opcodes == {"HMMA.16816.F32": 2}
    assert hopper.target_count == 0
    ada = parse_sass((FIXTURES / "ada_fp8_mma_sync.sass").read_text())
    qmma = [i.opcode for i in ada if i.opcode.startswith("QMMA")]
    assert qmma == ["QMMA.16832.F32.E4M3.E4M3"]
    assert instruction_family(qmma[0]) == "mma" and instruction_family("QGMMA.64x64x32.F32.E4M3.E4M3") == "gmma"
