"""The Blackwell knowledge pack: its helper header and worked GEMM compile for sm_100a with the real nvcc and
produce tcgen05 SASS; its descriptor builders and documented descriptor values agree with an independent
encoding of the PTX ISA bit tables; the rendered pack fits the 20k-30k token budget.

CPU-only: nvcc 13 and cuobjdump (+ nvdisasm, which cuobjdump needs to disassemble sm_100a) must be installed;
nothing is executed on a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from evaluator.binaries.sass import count_families, disassemble, parse_sass
from evaluator.build.compile import find_cuobjdump, find_nvcc, nvcc_command
from evaluator.errors import EnvironmentProblem
from evaluator.source_policy.policy import check_source
from evaluator.suite.packs import load_pack

REPO = Path(__file__).resolve().parents[2]
PACKS = REPO / "tasks" / "packs"
INCLUDE = PACKS / "include"
PACK_DIR = PACKS / "blackwell"
GENCODE = ["-gencode", "arch=compute_100a,code=sm_100a"]


def _tools() -> tuple[str, str]:
    try:
        return find_nvcc(), find_cuobjdump()
    except EnvironmentProblem as exc:
        pytest.skip(f"CUDA tools missing: {exc}")


def _dump_sass(cuobjdump: str, binary: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The evaluator's disassembler (evaluator/binaries/sass.py). cuobjdump hands sm_100a disassembly to nvdisasm; the
    wheels install both into the same bin folder, so that folder goes on PATH for the call."""
    path = f"{Path(cuobjdump).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    if shutil.which("nvdisasm", path=path) is None:
        pytest.fail("cuobjdump needs nvdisasm for sm_100a: install the nvidia-cuda-nvdisasm wheel")
    monkeypatch.setenv("PATH", path)
    return disassemble(binary, cuobjdump)


def sass_opcodes(sass: str) -> list[str]:
    """Full opcodes (with modifiers, e.g. 'LDTM.x32') of every instruction, by the evaluator's SASS parser."""
    return [ins.opcode for ins in parse_sass(sass)]


def test_the_evaluators_sass_parser_reads_blackwell_lines() -> None:
    captured = """
        /*0230*/                   UTCATOMSWS.FIND_AND_SET.ALIGN UP0, UR4, UR4 ;   /* 0x00000004ff0475e3 */
        /*0760*/                   UTCHMMA gdesc[UR10], gdesc[UR10], tmem[UR8], tmem[UR14], idesc[UR15], !UPT ;
        /*05b0*/                   @UP1 UTMALDG.2D [UR4], [UR10] ;
        /*08b0*/                   LDTM.x8 R36, tmem[UR5] ;
        /*0640*/               @!P1 SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R0+URZ], R3 ;
    """
    assert sass_opcodes(captured) == [
        "UTCATOMSWS.FIND_AND_SET.ALIGN",
        "UTCHMMA",
        "UTMALDG.2D",
        "LDTM.x8",
        "SYNCS.PHASECHK.TRANS64.TRYWAIT",
    ]
    counts = count_families(captured, "sm_100a")
    assert counts.families["tcgen05"] == 3 and counts.families["tma"] == 1 and counts.target_count == 3


# --- an independent Python encoding of the PTX ISA tables (tcgen05 instruction / shared-memory descriptors) ---


def idesc_f16(m: int, n: int, *, bf16: bool = True, f32: bool = True, a_mn: bool = False, b_mn: bool = False) -> int:
    """kind::f16 instruction descriptor: D type bits 4-5, A/B type 7-9/10-12, transpose 15/16, N>>3 17-22, M>>4 24-28."""
    return (
        (int(f32) << 4)
        | (int(bf16) << 7)
        | (int(bf16) << 10)
        | (int(a_mn) << 15)
        | (int(b_mn) << 16)
        | ((n >> 3) << 17)
        | ((m >> 4) << 24)
    )


def smem_desc(addr: int, lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    """sm_100 shared-memory matrix descriptor: fields >> 4, fixed 0b001 at bits 46-48, swizzle at 61-63."""
    enc = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731 - matrix-descriptor-encode() of the PTX ISA
    return enc(addr) | (enc(lbo) << 16) | (enc(sbo) << 32) | (1 << 46) | (base_offset << 49) | (swizzle << 61)


def test_documented_idesc_values_match_the_bit_table() -> None:
    text = (PACK_DIR / "tcgen05-mma.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) x (\d+) \| `(0x[0-9a-fA-F]{8})` \|$", text, re.MULTILINE)
    assert len(rows) >= 4, "worked idesc table not found in tcgen05-mma.md"
    for m, n, value in rows:
        assert int(value, 16) == idesc_f16(int(m), int(n)), f"M={m} N={n}"
    # The GEMM example quotes the same value for its 128x256 tile.
    assert f"`{idesc_f16(128, 256):#010x}`" in (PACK_DIR / "gemm-example.md").read_text(encoding="utf-8")


# A kernel that calls every wrapper of blackwell.cuh and keeps the results live (written to global memory).
# The static_asserts pin the constexpr descriptor builders to the Python encoding above.
PROBE_TEMPLATE = r"""
#include "ptxbench/blackwell.cuh"
using namespace ptxb;
using namespace ptxb::sm100;

static_assert(make_idesc_f16(128, 256) == {idesc_128x256}u, "idesc 128x256");
static_assert(make_idesc_f16(64, 64) == {idesc_64x64}u, "idesc 64x64");
static_assert(make_idesc_f16(128, 128, true, true, false, true) == {idesc_pv}u, "idesc MN-major B");
static_assert(make_smem_desc(0x1400, 16, 1024, Swizzle::k128B) == {desc_sw128}ull, "smem desc 128B");
static_assert(make_smem_desc(0x800, 16384, 1024, Swizzle::k64B, 3) == {desc_sw64}ull, "smem desc 64B");
static_assert(smem_desc_advance(make_smem_desc(0x1400, 16, 1024, Swizzle::k128B), 32) == {desc_adv}ull, "advance");
static_assert(tmem_addr(0x10, 32, 8) == 0x200018u, "tmem addr");

__global__ void probe(const __grid_constant__ CUtensorMap tmap, float* out) {
  __shared__ alignas(1024) uint8_t tile[128 * 64 * 2];
  __shared__ uint64_t bar;
  __shared__ uint32_t tmem_slot;
  const int warp = threadIdx.x / 32;
  if (threadIdx.x == 0) { mbar_init(&bar, 1); fence_mbarrier_init(); tma_prefetch_desc(&tmap); }
  if (warp == 0) { tmem_alloc(&tmem_slot, 256); tmem_relinquish_alloc_permit(); }
  tcgen05_before_thread_sync();
  __syncthreads();
  tcgen05_after_thread_sync();
  const uint32_t tmem = tmem_slot;
  if (warp == 1 && elect_one()) {
    mbar_arrive_expect_tx(&bar, sizeof(tile));
    tma_load_2d(tile, &tmap, &bar, 0, blockIdx.x);
  }
  mbar_wait(&bar, 0);
  if (warp == 1 && elect_one()) {
    tcgen05_after_thread_sync();
    const uint64_t d = make_smem_desc(smem_u32(tile), 16, 1024, Swizzle::k128B);
    mma_f16_ss(tmem, d, d, make_idesc_f16(128, 64), false);
    mma_f16_ts(tmem + 64, tmem, smem_desc_advance(d, 32), make_idesc_f16(128, 64), true);
    tcgen05_commit(&bar);
  }
  mbar_wait(&bar, 1);
  tcgen05_after_thread_sync();
  uint32_t r8[8], r16[16], r32[32];
  const uint32_t row = tmem_addr(tmem, 32 * (warp % 4), 0);
  tmem_ld_32x32b_x8(row, r8);
  tmem_ld_32x32b_x16(row + 8, r16);
  tmem_ld_32x32b_x32(row + 32, r32);
  tmem_ld_wait();
  float s = 0.f;
  for (int i = 0; i < 8; ++i) s += __uint_as_float(r8[i]);
  for (int i = 0; i < 16; ++i) s += __uint_as_float(r16[i]);
  for (int i = 0; i < 32; ++i) s += __uint_as_float(r32[i]);
  tmem_st_32x32b_x8(row + 128, r8);
  tmem_st_wait();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  tile[threadIdx.x] = static_cast<uint8_t>(s);
  fence_proxy_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store_2d(&tmap, tile, 0, blockIdx.x);
    bulk_commit_group();
    bulk_wait_group_read<0>();
    mbar_arrive(&bar);
  }
  tcgen05_before_thread_sync();
  __syncthreads();
  if (warp == 0) { tcgen05_after_thread_sync(); tmem_dealloc(tmem, 256); }
}
"""


def _probe_source() -> str:
    values = {
        "idesc_128x256": hex(idesc_f16(128, 256)),
        "idesc_64x64": hex(idesc_f16(64, 64)),
        "idesc_pv": hex(idesc_f16(128, 128, b_mn=True)),
        "desc_sw128": hex(smem_desc(0x1400, 16, 1024, 2)),
        "desc_sw64": hex(smem_desc(0x800, 16384, 1024, 4, base_offset=3)),
        "desc_adv": hex(smem_desc(0x1400 + 32, 16, 1024, 2)),
    }
    source = PROBE_TEMPLATE
    for key, value in values.items():
        source = source.replace("{" + key + "}", value)
    return source


@pytest.mark.slow  # nvcc
def test_header_compiles_for_sm100a_and_emits_tcgen05_sass(tmp_path: Path, monkeypatch) -> None:
    nvcc, cuobjdump = _tools()
    src = tmp_path / "probe.cu"
    src.write_text(_probe_source(), encoding="utf-8")
    obj = tmp_path / "probe.o"
    proc = subprocess.run(
        [nvcc, "-std=c++17", "-O3", "-c", *GENCODE, f"-I{INCLUDE}", str(src), "-o", str(obj)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    sass = _dump_sass(cuobjdump, obj, monkeypatch)
    ops = sass_opcodes(sass)
    bases = [op.split(".")[0] for op in ops]

    assert bases.count("UTCHMMA") == 2  # mma_f16_ss and mma_f16_ts
    assert "UTCBAR" in bases  # tcgen05.commit
    assert {"UTCATOMSWS.FIND_AND_SET.ALIGN", "UTCATOMSWS.AND"} <= set(ops)  # tcgen05.alloc / dealloc
    assert {"LDTM.x8", "LDTM.x16", "LDTM.x32", "STTM.x8"} <= set(ops)  # tcgen05.ld / st shapes
    assert {"UTMALDG.2D", "UTMASTG.2D"} <= set(ops)  # TMA load / store wrappers
    assert count_families(sass, "sm_100a").target_count > 0  # what the evaluator's static SASS stage counts


@pytest.mark.slow  # nvcc
def test_header_refuses_a_non_arch_specific_target(tmp_path: Path) -> None:
    nvcc, _ = _tools()
    src = tmp_path / "probe.cu"
    src.write_text(_probe_source(), encoding="utf-8")
    proc = subprocess.run(
        [nvcc, "-std=c++17", "-c", "-gencode", "arch=compute_100,code=sm_100", f"-I{INCLUDE}", str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert "compute_100a" in proc.stderr  # our #error names the right -gencode, not a wall of ptxas errors


def _gemm_example_source() -> str:
    text = (PACK_DIR / "gemm-example.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```cuda\n(.*?)```", text, re.DOTALL)
    full = [b for b in blocks if "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run" in b]
    assert len(full) == 1, "gemm-example.md must hold exactly one complete kernel file"
    return full[0]


@pytest.mark.slow  # nvcc
def test_gemm_example_builds_with_the_harness_line_and_uses_tcgen05(tmp_path: Path, monkeypatch) -> None:
    _, cuobjdump = _tools()
    source = _gemm_example_source()
    assert check_source(source) == []  # the example obeys the submission policy
    src = tmp_path / "kernel.cu"
    src.write_text(source, encoding="utf-8")
    lib = tmp_path / "kernel.so"
    cmd = nvcc_command(src, lib, "sm_100a")
    cmd.insert(1, f"-I{INCLUDE}")  # stands in for pasting the two ptxbench headers
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ops = set(sass_opcodes(_dump_sass(cuobjdump, lib, monkeypatch)))
    bases = {op.split(".")[0] for op in ops}
    assert {"UTCHMMA", "UTCBAR", "LDTM", "UTMALDG"} <= bases
    assert "LDTM.x32" in ops


def test_rendered_pack_is_complete_and_within_budget() -> None:
    pack = load_pack(PACKS, "blackwell")
    assert pack.arch == "sm_100a"
    assert 20_000 <= pack.token_count <= 30_000, pack.token_count
    assert pack.headers[-1] == "include/ptxbench/blackwell.cuh"
    assert all(f.startswith("common/") for f in pack.fragments[:3])
    # The exact PTX spellings an author has to type appear verbatim.
    for ptx in (
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
        "tcgen05.mma.cta_group::1.kind::f16",
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
        "tcgen05.ld.sync.aligned.32x32b.x32.b32",
        "tcgen05.fence::before_thread_sync",
        "tcgen05.wait::ld.sync.aligned",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "clusterlaunchcontrol.try_cancel",
    ):
        assert ptx in pack.text, ptx
