"""Caps: what a submission can make the worker host hold, each capped with a verdict that names the cap.

- The compiler's files: RLIMIT_FSIZE on nvcc and everything it runs (`Limits.compiler_file_bytes`), so a
  `char big[700ull << 20] = {1};` stops when the assembler reaches the cap instead of writing 700 MB first.
- The compile cache: total bytes capped (`EVALUATOR_COMPILE_CACHE_MAX_BYTES`), least recently used entries first.
- The cgroup memory limit: a share of the host's MemTotal (`EVALUATOR_MEMORY_LIMIT` overrides), not a fixed 64 GiB.
- The assembler rule on a failed compile: gas may have run an `.include` before the failure and its errors quote
  the file, so the macro-expanded source is checked even then and a rejected source's log is withheld.

(The Triton build's cache caps are corpus entries: tests/adversarial/triton_escape_cache_many_files.py and
triton_escape_cache_total_bytes.py.) Compiles here are real nvcc, small: the caps are lowered by parameter or
environment rather than writing hundreds of megabytes.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import CompileResult, OverallStatus, to_json
from evaluator.build import compile_cache
from evaluator.build.compile import LIBRARY_MAX_BYTES, compile_kernel
from evaluator.errors import EnvironmentProblem
from evaluator.isolation import cgroups, limits
from evaluator.isolation.jail import Jail, open_jail
from evaluator.isolation.limits import GiB, Limits, MiB
from evaluator.pipeline import Options, evaluate
from evaluator.source_policy.policy import check_source
from tests.support.factories import LIGHT_KERNEL
from tests.support.sandbox import sandbox_problem

HERE = Path(__file__).resolve().parent
TINY = load_task(HERE / "tasks" / "tiny_gemm")
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)
pytestmark = pytest.mark.no_compile_cache  # the compiles are the subject: never a shared-cache hit

# The first lines of this worker's /proc/meminfo (a 23.5 GiB host), as captured.
MEMINFO_23G = """MemTotal:       24683568 kB
MemFree:        21549144 kB
MemAvailable:   23735316 kB
Buffers:           43456 kB
Cached:          2273984 kB
"""
MEMTOTAL_23G = 24683568 * 1024


def _message(v) -> str:
    """What the submitter reads: every workload's message (the same one when a build stage stopped the verdict)."""
    return v.workloads[0].message if v.workloads else ""


# --------------------------------------------------------------------------- memory


def test_the_memory_limit_is_a_share_of_the_hosts_memory():
    """Pure sizing on captured meminfo text. Old behaviour caught: a fixed 64 GiB, above this host's 23.5 GiB, so
    the kernel's OOM killer (not the cgroup) chose what died."""
    assert limits.memory_limit_bytes(MEMINFO_23G) == MEMTOTAL_23G // 2
    assert limits.memory_limit_bytes(MEMINFO_23G, fraction=0.25) == MEMTOTAL_23G // 4
    assert limits.memory_limit_bytes(MEMINFO_23G) < MEMTOTAL_23G < 64 * GiB
    # EVALUATOR_MEMORY_LIMIT: bytes, a size, or a share of MemTotal
    assert limits.memory_limit_bytes(MEMINFO_23G, "12884901888") == 12 * GiB
    assert limits.memory_limit_bytes(MEMINFO_23G, "12GiB") == limits.memory_limit_bytes(MEMINFO_23G, "12g") == 12 * GiB
    assert limits.memory_limit_bytes(MEMINFO_23G, "512MiB") == 512 * MiB
    assert limits.memory_limit_bytes(MEMINFO_23G, "40%") == int(MEMTOTAL_23G * 0.4)
    assert limits.memory_limit_bytes(MEMINFO_23G, "  ") == MEMTOTAL_23G // 2  # empty: not set
    # no meminfo (not Linux): a fixed fallback below the old 64 GiB; a share then cannot be computed
    assert limits.memory_limit_bytes(None) == limits.memory_limit_bytes("Nothing: 1 kB\n") == 16 * GiB
    for bad in ("lots", "-1G", "0", "150%", "0%"):
        with pytest.raises(EnvironmentProblem, match="EVALUATOR_MEMORY_LIMIT"):
            limits.memory_limit_bytes(MEMINFO_23G, bad)
    with pytest.raises(EnvironmentProblem, match="MemTotal"):
        limits.memory_limit_bytes(None, "50%")


def test_the_sized_memory_limit_reaches_the_cgroup_and_the_sandbox_record(tmp_path, monkeypatch):
    """The value written to memory.max (v2) / memory.limit_in_bytes (v1) and shown in the verdict is the sized one.
    Mutation caught: Limits.memory_bytes left at 64 GiB (memory.max was 68719476736)."""
    monkeypatch.delenv("EVALUATOR_MEMORY_LIMIT", raising=False)
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else None
    assert Limits().memory_bytes == limits.memory_limit_bytes(meminfo) == limits.host_memory_limit_bytes()
    if meminfo is not None:
        assert Limits().memory_bytes < MEMTOTAL_23G * 100  # a share of this host, whatever it is
        assert Limits().memory_bytes == int(int(meminfo.split()[1]) * 1024 * 0.5)

    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "3GiB")
    sized = Limits()
    assert sized.memory_bytes == 3 * GiB
    # a v2 hierarchy in a folder: the cgroup made for a process tree gets the sized limit
    (tmp_path / "cgroup.controllers").write_text("pids memory\n")
    (tmp_path / "cgroup.subtree_control").write_text("pids memory\n")
    monkeypatch.setattr(cgroups, "_own_cgroup_paths", lambda: {"": "/"})
    cgroup, why = cgroups.Cgroup.create(sized, root=tmp_path)
    assert cgroup is not None, why
    assert (cgroup.dirs["unified"] / "memory.max").read_text() == str(3 * GiB)
    # v1: memory.limit_in_bytes
    for controller in ("pids", "memory"):
        (tmp_path / "v1" / controller).mkdir(parents=True)
        (tmp_path / "v1" / controller / "cgroup.procs").write_text("")
    monkeypatch.setattr(cgroups, "_own_cgroup_paths", lambda: {"pids": "/", "memory": "/"})
    cgroup, why = cgroups.Cgroup.create(sized, root=tmp_path / "v1")
    assert cgroup is not None and cgroup.version == 1, why
    assert (cgroup.dirs["memory"] / "memory.limit_in_bytes").read_text() == str(3 * GiB)
    # the jail every evaluation opens carries it, and so does the verdict's record
    jail = Jail("bubblewrap", "", Limits(), bwrap="/usr/bin/bwrap")
    jail.ledger.started(cgroups.Cgroup(2, {}), "")
    assert jail.record().limits["memory_bytes"] == f"{3 * GiB} (cgroup memory.max)"
    monkeypatch.setenv("EVALUATOR_MEMORY_LIMIT", "a lot")
    with pytest.raises(EnvironmentProblem, match="EVALUATOR_MEMORY_LIMIT: 'a lot' is not a size"):
        open_jail(allow_unsandboxed=True)  # an operator's mistake is said at once, not replaced by a default


# --------------------------------------------------------------------------- the compiler's files

# 32 MiB of initialised data: compiles to a 32 MiB library without a cap (the form, at 1/22 of its size).
BIG_DATA = (
    LIGHT_KERNEL
    + """
char big[32ull << 20] = {1};
extern "C" char byte_at(unsigned long i) { return big[i]; }
"""
)
SMALL_CAP = 8 * MiB


@needs_nvcc
@pytest.mark.skipif(sandbox_problem() is not None, reason="bubblewrap is not usable here")
def test_a_huge_library_stops_at_the_compilers_file_size_cap_and_the_verdict_names_it(tmp_path):
    """RLIMIT_FSIZE on the compiler's processes: the assembler is stopped at the cap (the 8 MiB cap of this test;
    256 MiB by default, the library cap), so nothing larger is ever written, and the verdict names the cap. A small
    kernel still compiles under the same cap. Old behaviour caught: the compile sandbox had the candidate's 8 GiB
    RLIMIT_FSIZE, so the issue's 700 MB library was written in full (8.6 s) before the library cap refused it, and
    this 32 MiB one compiled."""
    assert Limits().compiler_file_bytes == LIBRARY_MAX_BYTES
    jail = open_jail(allow_unsandboxed=False, limits=Limits(compiler_file_bytes=SMALL_CAP))
    started = time.monotonic()
    big = compile_kernel(BIG_DATA, "sm_90a", tmp_path / "big", jail=jail, cache_dir=None)
    assert not big.result.ok and big.library is None
    assert big.why is not None and "RLIMIT_FSIZE" in big.why and f"{SMALL_CAP} bytes (8 MiB)" in big.why, big.why
    assert "[evaluator] the compiler tried to write a file larger than" in big.result.output
    assert time.monotonic() - started < 60
    written = [p.stat().st_size for p in (tmp_path / "big").rglob("*") if p.is_file()]
    assert max(written) <= SMALL_CAP
    assert jail.record().limits["compiler_file_bytes"] == f"{SMALL_CAP} (RLIMIT_FSIZE of the compiler)"

    small = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "small", jail=jail, cache_dir=None)
    assert small.result.ok, small.result.output
    assert small.cubin is not None  # cuobjdump (also under the cap) extracted it

    # Through the pipeline: a COMPILE_ERROR whose message is the cap, not "nvcc exited with 4".
    opts = Options(device_type="cpu", timeout_s=60, limits=Limits(compiler_file_bytes=SMALL_CAP))
    v = evaluate(BIG_DATA, TINY, "sm_90a", stages=["compile"], options=opts)
    assert v.status == OverallStatus.COMPILE_ERROR, v.policy
    assert "compile sandbox's limit of 8388608 bytes (8 MiB)" in _message(v), _message(v)


# --------------------------------------------------------------------------- the compile cache


def _fake_compile(tmp: Path, name: str, size: int) -> tuple[CompileResult, Path]:
    library = tmp / f"{name}.so"
    library.write_bytes(name.encode() * (size // len(name)))
    return CompileResult(ok=True, command=[], returncode=0, seconds=0.1, output="", nvcc_version="x"), library


def _entries(cache: Path) -> set[str]:
    return {p.name for p in cache.iterdir() if not p.name.startswith(".")}


def test_the_cache_keeps_at_most_its_byte_cap_evicting_the_least_recently_used(tmp_path):
    """Old behaviour caught: only MAX_ENTRIES (256) bounded the cache, so 256 libraries of up to 256 MiB (the issue's
    700 MB form gave 175 GiB) stayed on disk. Now the entries' bytes are capped; a hit makes an entry recent."""
    cache = tmp_path / "cache"
    cap = 10 * MiB
    for i, key in enumerate(("a", "b", "c")):
        result, library = _fake_compile(tmp_path, key, 3 * MiB)
        assert compile_cache.store(cache, key, result, library, None, "pre", max_bytes=cap) == cache / key
        os.utime(cache / key, ns=(i * 10**9, i * 10**9))  # stored one second apart
    assert _entries(cache) == {"a", "b", "c"}
    assert compile_cache.load(cache, "a", tmp_path / "hit") is None  # a fake library does not match its digest
    os.utime(cache / "a")  # ...but a real hit marks its entry used like this (load's utime)
    result, library = _fake_compile(tmp_path, "d", 3 * MiB)
    assert compile_cache.store(cache, "d", result, library, None, "pre", max_bytes=cap) == cache / "d"
    assert _entries(cache) == {"a", "c", "d"}  # b was the least recently used
    assert sum(compile_cache.entry_bytes(cache / k) for k in _entries(cache)) <= cap
    # larger than the whole cap on its own: not kept, and nothing else is evicted for it
    result, library = _fake_compile(tmp_path, "huge", 11 * MiB)
    assert compile_cache.store(cache, "huge", result, library, None, "pre", max_bytes=cap) is None
    assert _entries(cache) == {"a", "c", "d"}


def test_the_cache_byte_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("EVALUATOR_COMPILE_CACHE_MAX_BYTES", raising=False)
    assert compile_cache.max_bytes_from_env() == compile_cache.DEFAULT_MAX_BYTES == 8 * GiB
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE_MAX_BYTES", "2GiB")
    assert compile_cache.max_bytes_from_env() == 2 * GiB
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE_MAX_BYTES", "big")
    with pytest.raises(EnvironmentProblem, match="EVALUATOR_COMPILE_CACHE_MAX_BYTES"):
        compile_cache.max_bytes_from_env()


@needs_nvcc
def test_real_compiles_beyond_the_byte_cap_evict_the_oldest_entry(tmp_path, monkeypatch):
    """Two real compiles, a cap that holds one: the second evicts the first, and is itself a hit afterwards.
    Mutation caught: prune counting entries only (both kept)."""
    cache = tmp_path / "cache"
    first = compile_kernel(LIGHT_KERNEL, "sm_90a", tmp_path / "a", cache_dir=cache)
    assert first.result.ok and first.cache_entry is not None
    one = compile_cache.entry_bytes(first.cache_entry)
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE_MAX_BYTES", str(one + one // 2))
    second = compile_kernel(
        LIGHT_KERNEL + "\n// a comment makes a new entry\n", "sm_90a", tmp_path / "b", cache_dir=cache
    )
    assert second.result.ok and not second.result.cached
    assert _entries(cache) == {second.cache_entry.name}
    assert compile_kernel(
        LIGHT_KERNEL + "\n// a comment makes a new entry\n", "sm_90a", tmp_path / "c", cache_dir=cache
    ).result.cached


# --------------------------------------------------------------------------- assembler text on a failed compile

# `.include` built by pasting and stringizing (the raw check sees neither the word nor the path), of a header the
# compile sandbox shows: gas reads it, fails on every C line, and quotes each line in its errors.
INCLUDE_THEN_FAIL = (
    r"""#define S(...) #__VA_ARGS__
#define X(...) S(__VA_ARGS__)
#define CAT(a, b) a##b
asm("\t" X(.CAT(inc, lude)) " " X(X(/usr/CAT(inc, lude)/stdio.h)));
"""
    + LIGHT_KERNEL
)


@needs_nvcc
def test_a_failed_compile_is_still_policy_rejected_and_its_log_withheld(tmp_path):
    """Old behaviour caught: the preprocessed text was kept only for a successful compile, so this source got
    COMPILE_ERROR and its public log quoted the included file line by line ("no such instruction: `typedef
    __off_t off_t'"): the log was the channel. Now: POLICY_REJECTED after macro expansion, log withheld."""
    assert not [f for f in check_source(INCLUDE_THEN_FAIL) if f.rule == "assembler-directive"]  # raw: unseen
    compiled = compile_kernel(INCLUDE_THEN_FAIL, "sm_90a", tmp_path / "build", jail=open_jail(), cache_dir=None)
    assert not compiled.result.ok and "typedef __off_t off_t" in compiled.result.output  # the channel is real
    assert compiled.preprocessed is not None

    v = evaluate(INCLUDE_THEN_FAIL, TINY, "sm_90a", stages=["compile"], options=Options(device_type="cpu"))
    assert v.status == OverallStatus.POLICY_REJECTED, (v.status, _message(v))
    assert "assembler .include" in _message(v) and "after macro expansion" in _message(v), _message(v)
    assert v.compile.output.startswith("[evaluator] the compile log is withheld")
    assert "typedef" not in to_json(v)  # nowhere in the verdict


# --------------------------------------------------------------------------- memory, through a verdict

# Module-level code of a Triton file runs in the compile process: 3 GiB of touched memory, above a 2 GiB limit.
TRITON_HOG = """
import triton
import triton.language as tl

_hog = bytearray(3 << 30)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
"""


@pytest.mark.skipif(sandbox_problem() is not None, reason="bubblewrap is not usable here")
def test_a_compile_killed_by_the_memory_limit_names_the_limit(tmp_path):
    """The cgroup's OOM kill of the Triton compile or of nvcc is the verdict's message, with the limit. Old behaviour
    caught: the message was "the compile process wrote no manifest" or "nvcc exited with 1", naming no limit."""
    pytest.importorskip("triton")
    from evaluator.both_sides.taskdata import find_task

    cgroup, why = cgroups.Cgroup.create(Limits(memory_bytes=2 * GiB))
    if cgroup is None:
        pytest.skip(f"no writable memory cgroup here: {why}")
    cgroup.remove()
    task = find_task(HERE.parents[1] / "tasks", "gemm_n7168_k5120")
    opts = Options(device_type="cpu", limits=Limits(memory_bytes=2 * GiB), skip_source_policy=True)
    v = evaluate(TRITON_HOG, task, "sm_90a", stages=["compile"], options=opts, language="triton")
    assert v.status == OverallStatus.COMPILE_ERROR
    assert "memory limit of 2147483648 bytes (2 GiB)" in _message(v), _message(v)

    # nvcc under 64 MiB: its front end is killed at once; the message names the limit, not "nvcc exited with 1"
    small = Options(device_type="cpu", limits=Limits(memory_bytes=64 * MiB))
    v = evaluate(LIGHT_KERNEL, TINY, "sm_90a", stages=["compile"], options=small)
    assert v.status == OverallStatus.COMPILE_ERROR
    assert _message(v) == (
        "the compiler hit the sandbox's memory limit of 67108864 bytes (64 MiB) (EVALUATOR_MEMORY_LIMIT)"
    ), _message(v)
