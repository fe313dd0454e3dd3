"""Compile stage with the real nvcc (CI has nvcc 13.0) and the ptxas -v parser on captured output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.binaries.sass import count_families, disassemble
from evaluator.build.compile import OUTPUT_CAP, cap_text, compile_kernel, parse_ptxas_resources

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)

PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4gemmPKfS0_Pf' for 'sm_90a'
ptxas info    : Function properties for _Z4gemmPKfS0_Pf
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 8448 bytes smem, 400 bytes cmem[0]
ptxas info    : Function properties for _Z6helperv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z5otherv' for 'sm_90a'
ptxas info    : Function properties for _Z5otherv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 352 bytes cmem[0]
"""


def test_parse_ptxas_resources():
    gemm, other = parse_ptxas_resources(PTXAS)
    assert (gemm.name, gemm.registers, gemm.shared_bytes, gemm.barriers) == ("_Z4gemmPKfS0_Pf", 168, 8448, 1)
    assert (gemm.stack_frame_bytes, gemm.spill_store_bytes, gemm.spill_load_bytes) == (16, 8, 12)
    assert (other.name, other.registers, other.shared_bytes, other.spill_store_bytes) == ("_Z5otherv", 8, None, 0)


def test_cap_text_keeps_head_and_tail():
    text = "A" * 100_000 + "TAIL"
    capped, cut = cap_text(text, OUTPUT_CAP)
    assert cut and len(capped.encode()) <= OUTPUT_CAP + 100
    assert capped.startswith("AAAA") and capped.endswith("TAIL")
    assert cap_text("short", OUTPUT_CAP) == ("short", False)


@needs_nvcc
def test_compile_success_for_sm90a(tmp_path):
    compiled = compile_kernel((KERNELS / "simt_gemm.cu").read_text(), "sm_90a", tmp_path)
    r = compiled.result
    assert r.ok, r.output
    assert compiled.library is not None and compiled.library.is_file()
    assert "-gencode" in r.command and "arch=compute_90a,code=sm_90a" in r.command
    assert "-lineinfo" in r.command and "-O3" in r.command and "-std=c++17" in r.command
    assert len(r.cubin_sha256) == 64 and len(r.library_sha256) == 64
    (kernel,) = r.resources
    assert "simt_gemm_kernel" in kernel.name and kernel.registers > 0 and kernel.shared_bytes == 8448
    counts = count_families(disassemble(compiled.cubin), "sm_90a")
    assert counts.target_count == 0 and counts.instructions > 50
    # The image a timed kernel's module must have (the driver loads this cubin byte for byte: measured on an H100,
    # docs/runs/integrity/h100-2026-12-06c/)
    assert compiled.device_images() == frozenset({r.cubin_sha256})


@needs_nvcc
def test_compile_failure_is_a_result(tmp_path):
    bad = (KERNELS / "simt_gemm.cu").read_text().replace("acc[i] +=", "acc[i] += undeclared_symbol +")
    compiled = compile_kernel(bad, "sm_90a", tmp_path)
    assert not compiled.result.ok
    assert compiled.library is None
    assert compiled.result.returncode not in (0, None)
    assert "undeclared_symbol" in compiled.result.output


@needs_nvcc
def test_compile_timeout_kills_nvcc(tmp_path):
    compiled = compile_kernel((KERNELS / "simt_gemm.cu").read_text(), "sm_90a", tmp_path, timeout_s=0.2)
    assert not compiled.result.ok and compiled.result.timed_out and compiled.result.returncode is None
    assert "killed after" in compiled.result.output
