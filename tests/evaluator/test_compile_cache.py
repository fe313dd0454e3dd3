"""The compile cache (evaluator/compile_cache.py) with the real nvcc: hits give the same library, misses and
tampered entries compile again, failures are never kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.compile import compile_kernel
from evaluator.sass import count_families, disassemble
from tests.support.factories import LIGHT_KERNEL

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
pytestmark = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)


def test_second_compile_of_the_same_source_is_a_verified_hit(tmp_path):
    source = LIGHT_KERNEL  # the cache is the subject, not the kernel
    cache = tmp_path / "cache"
    first = compile_kernel(source, "sm_90a", tmp_path / "a", cache_dir=cache)
    assert first.result.ok and not first.result.cached
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert {p.name for p in entry.iterdir()} >= {"kernel.so", "kernel.cubin", "kernel.ii", "result.json"}

    second = compile_kernel(source, "sm_90a", tmp_path / "b", cache_dir=cache)
    assert second.result.cached and second.result.ok
    assert second.result.library_sha256 == first.result.library_sha256
    assert second.result.cubin_sha256 == first.result.cubin_sha256
    assert second.result.resources == first.result.resources
    assert second.library == tmp_path / "b" / "kernel.so" and second.library.is_file()
    assert second.preprocessed == first.preprocessed and "run_impl" in second.preprocessed
    assert count_families(disassemble(second.cubin), "sm_90a").instructions > 50

    # Another source (one comment more) and another target are misses.
    other = compile_kernel(source + "\n// v2\n", "sm_90a", tmp_path / "c", cache_dir=cache)
    assert other.result.ok and not other.result.cached
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 2


def test_tampered_entry_is_ignored_and_failures_are_not_kept(tmp_path):
    source = LIGHT_KERNEL  # the cache is the subject, not the kernel
    cache = tmp_path / "cache"
    first = compile_kernel(source, "sm_90a", tmp_path / "a", cache_dir=cache)
    (entry,) = list(cache.iterdir())
    (entry / "kernel.so").write_bytes(b"not the library")
    again = compile_kernel(source, "sm_90a", tmp_path / "b", cache_dir=cache)
    assert again.result.ok and not again.result.cached and first.result.ok
    # The damaged entry was replaced by the new compile.
    assert compile_kernel(source, "sm_90a", tmp_path / "e", cache_dir=cache).result.cached

    broken = compile_kernel("this is not CUDA", "sm_90a", tmp_path / "c", cache_dir=cache)
    assert not broken.result.ok
    assert len(list(cache.iterdir())) == 1
    assert not compile_kernel("this is not CUDA", "sm_90a", tmp_path / "d", cache_dir=cache).result.cached


def test_an_unsandboxed_evaluation_neither_reads_nor_fills_the_cache(tmp_path):
    from evaluator.jail import Jail

    source = LIGHT_KERNEL  # the cache is the subject, not the kernel
    cache = tmp_path / "cache"
    unsandboxed = Jail("unsandboxed", "test: operator allowed it")
    first = compile_kernel(source, "sm_90a", tmp_path / "a", cache_dir=cache, jail=unsandboxed)
    assert first.result.ok and not cache.exists()
    compile_kernel(source, "sm_90a", tmp_path / "b", cache_dir=cache)  # trusted caller fills it
    again = compile_kernel(source, "sm_90a", tmp_path / "c", cache_dir=cache, jail=unsandboxed)
    assert again.result.ok and not again.result.cached


def test_the_disassembly_is_kept_with_its_entry_and_checked_before_use(tmp_path, monkeypatch):
    from evaluator import build_stages

    cache = tmp_path / "cache"
    first = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "a", cache_dir=cache)
    made = build_stages.disassembly(first, [first.cubin])  # the first evaluation disassembles and keeps it
    assert first.cache_entry is not None and (first.cache_entry / "kernel.sass").read_text() == made
    assert made == disassemble(first.cubin) and "FFMA" in made

    hit = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "b", cache_dir=cache)
    assert hit.result.cached and hit.cache_entry == first.cache_entry

    def no_cuobjdump(binary):
        raise AssertionError("disassembled again although the entry holds the SASS")

    monkeypatch.setattr(build_stages, "disassemble", no_cuobjdump)
    assert build_stages.disassembly(hit, [hit.cubin]) == made

    # A changed disassembly no longer matches its digest; a cubin other than the entry's is not its SASS.
    (first.cache_entry / "kernel.sass").write_text(made.replace("FFMA", "HGMMA"))
    monkeypatch.undo()
    assert build_stages.disassembly(hit, [hit.cubin]) == made  # made again from the cubin (and kept again)
    assert (first.cache_entry / "kernel.sass").read_text() == made
    hit.result.cubin_sha256 = "0" * 64
    monkeypatch.setattr(build_stages, "disassemble", lambda binary: "other")
    assert build_stages.disassembly(hit, [hit.cubin]) == "other"
