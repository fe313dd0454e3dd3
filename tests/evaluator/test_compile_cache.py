"""The compile cache (evaluator/build/compile_cache.py) with the real nvcc: hits give the same library, misses and
tampered entries compile again, failures are never kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.binaries.sass import count_families, disassemble
from evaluator.build.compile import compile_kernel
from tests.support.factories import LIGHT_KERNEL
from tests.support.sandbox import sandbox_problem

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
    # A hit is loaded into the trusted folder beside the build folder, never into the build folder.
    assert second.library == tmp_path / "b-trusted" / "kernel.so" and second.library.is_file()
    assert not (tmp_path / "b" / "kernel.so").exists()
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


def test_an_unsandboxed_evaluation_neither_reads_nor_fills_the_cache(host_tmp):
    tmp_path = host_tmp
    from evaluator.isolation.jail import Jail

    source = LIGHT_KERNEL  # the cache is the subject, not the kernel
    cache = tmp_path / "cache"
    unsandboxed = Jail("unsandboxed", "test: operator allowed it")
    first = compile_kernel(source, "sm_90a", tmp_path / "a", cache_dir=cache, jail=unsandboxed)
    assert first.result.ok and not cache.exists()
    compile_kernel(source, "sm_90a", tmp_path / "b", cache_dir=cache)  # trusted caller fills it
    again = compile_kernel(source, "sm_90a", tmp_path / "c", cache_dir=cache, jail=unsandboxed)
    assert again.result.ok and not again.result.cached


def test_what_the_sass_stage_reads_is_kept_with_its_entry_and_checked_before_use(tmp_path):
    from evaluator.binaries.sass import dump_resource_usage
    from evaluator.build import build_stages

    cache = tmp_path / "cache"
    first = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "a", cache_dir=cache)
    # the first evaluation disassembles the library and keeps the text
    made = build_stages.kept_or_made(first, "kernel.sass", lambda: disassemble(first.library))
    assert first.cache_entry is not None and (first.cache_entry / "kernel.sass").read_text() == made
    assert made == disassemble(first.library) and "FFMA" in made
    usage = build_stages.kept_or_made(first, "resource-usage.txt", lambda: dump_resource_usage(first.library))
    assert (first.cache_entry / "resource-usage.txt").read_text() == usage and "REG:" in usage

    hit = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "b", cache_dir=cache)
    assert hit.result.cached and hit.cache_entry == first.cache_entry

    def again():
        raise AssertionError("read from the library again although the entry holds the text")

    assert build_stages.kept_or_made(hit, "kernel.sass", again) == made
    assert build_stages.kept_or_made(hit, "resource-usage.txt", again) == usage

    # A changed text no longer matches its digest; a library other than the entry's is not its SASS.
    (first.cache_entry / "kernel.sass").write_text(made.replace("FFMA", "HGMMA"))
    assert build_stages.kept_or_made(hit, "kernel.sass", lambda: disassemble(hit.library)) == made  # made again
    assert (first.cache_entry / "kernel.sass").read_text() == made  # and kept again
    hit.result.library_sha256 = "0" * 64
    assert build_stages.kept_or_made(hit, "kernel.sass", lambda: "other") == "other"


@pytest.mark.skipif(sandbox_problem() is not None, reason="bubblewrap is not usable here")
def test_a_sandboxed_compile_extracts_the_kernels_cubin_and_records_its_digest(tmp_path):
    """cuobjdump writes the ELF files into its working folder: inside the sandbox that folder must be the
    writable cubin folder, or the cubin lands in the sandbox's private /tmp and the verdict has no digest."""
    from evaluator.build.hashing import sha256_file
    from evaluator.isolation.jail import open_jail

    compiled = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "a", jail=open_jail(), cache_dir=None)
    assert compiled.result.ok and compiled.cubin is not None
    assert compiled.result.cubin_sha256 == sha256_file(compiled.cubin)
    assert "FFMA" in disassemble(compiled.cubin)  # the kernels' ELF, not the device-link stub beside it


def test_a_process_that_misses_a_key_another_is_compiling_waits_for_its_entry(tmp_path):
    """Two workers that miss the same source at once: the second waits for the first one's entry instead of
    compiling it again (its verdict says `cached`). Here the test itself plays the first worker: it holds the
    key's lock, lets the second start and miss, then stores the entry and lets go. The store happens only once the
    second process holds the key's lock file open (seen in /proc/PID/fd): it has missed and is waiting, whatever
    the machine's load, so the overlap is proved rather than assumed from a sleep."""
    import json
    import subprocess
    import sys
    import textwrap
    import time

    from evaluator.build import compile_cache
    from evaluator.build.compile import cache_flags, find_nvcc, nvcc_version, tvm_ffi_paths

    built = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "built", cache_dir=None)
    assert built.result.ok and built.preprocessed is not None
    cache = tmp_path / "cache"
    key = compile_cache.cache_key(LIGHT_KERNEL, cache_flags("sm_90a"), nvcc_version(find_nvcc()), tvm_ffi_paths())
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from evaluator.build.compile import compile_kernel
        c = compile_kernel(Path({str(KERNELS / "light_kernel.cu")!r}).read_text(), "sm_90a",
                           Path(sys.argv[1]), cache_dir=Path({str(cache)!r}))
        print(json.dumps({{"ok": c.result.ok, "cached": c.result.cached}}))
        """
    )
    with compile_cache.compiling(cache, key, wait_s=0):
        second = subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / "second")], stdout=subprocess.PIPE, text=True
        )
        lock = cache / f".lock-{key}"
        deadline = time.monotonic() + 300
        while not _holds_open(second.pid, lock) and second.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # an event, not a guess: the second process opens the lock file after its miss
        assert _holds_open(second.pid, lock), "the second process never came to wait on the key's lock"
        assert compile_cache.store(cache, key, built.result, built.library, built.cubin, built.preprocessed)
        assert second.poll() is None, "the second process did not wait for the key's lock"
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0
    assert json.loads(out.strip().splitlines()[-1]) == {"ok": True, "cached": True}
    assert not list(cache.glob(".lock-*"))  # the lock file is gone with its holder


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (one of its /proc/PID/fd links points at it)."""
    import os

    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False
