"""Triton compiles in the compile cache (evaluator/build/triton_cache.py), with the real Triton compiling for sm_90a:
a second compile of the same file is a checked hit unpacked into the trusted folder, a damaged entry is dropped,
a failure is never kept, and an unsandboxed evaluation neither reads nor fills the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import find_task
from evaluator.build import triton_cache
from evaluator.build.triton_compile import compile_triton
from tests.support.factories import REPO

pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")

TASK = find_task(REPO / "tasks", "gemm_n4096_k4096")
REFERENCE = (REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py").read_text()
ONE = [TASK.workloads[0]]  # one workload: one kernel to trace, the cache is the subject


def _entries(cache: Path) -> list[Path]:
    return [p for p in cache.iterdir() if not p.name.startswith(".")] if cache.exists() else []


def test_a_second_compile_is_a_checked_hit_and_a_damaged_entry_is_dropped(tmp_path, monkeypatch):
    """Mutation caught: the hit's cubins not held to the record's digest (the damaged entry is used)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", str(cache))
    first = compile_triton(REFERENCE, TASK, ONE, "sm_90a", tmp_path / "a", timeout_s=300)
    assert first.result.ok and not first.result.cached, first.result.output
    (entry,) = _entries(cache)
    assert {p.name for p in entry.iterdir()} == {"result.json", triton_cache.TREE}

    second = compile_triton(REFERENCE, TASK, ONE, "sm_90a", tmp_path / "b", timeout_s=300)
    assert second.result.ok and second.result.cached
    assert second.result.cubin_sha256 == first.result.cubin_sha256 and second.result.resources == first.result.resources
    # Unpacked into the trusted folder the candidate process loads from; the compile process never ran.
    assert [c.name for c in second.cubins] == [c.name for c in first.cubins] == ["gemm_kernel.cubin"]
    assert second.cubins[0].is_relative_to(tmp_path / "b-trusted" / "triton-cache")
    assert second.library == tmp_path / "b-trusted" / "kernel.py" and second.library.read_text() == REFERENCE
    assert not (tmp_path / "b" / "triton-manifest.json").exists()
    # Another workload set is another key.
    assert triton_cache.cache_key(REFERENCE, "3.6.0", 90, [1]) != triton_cache.cache_key(REFERENCE, "3.6.0", 90, [2])

    record = json.loads((entry / "result.json").read_text())
    (entry / "result.json").write_text(json.dumps({**record, "cubin_sha256": "0" * 64}))
    assert triton_cache.load(cache, entry.name, tmp_path / "c-cache") is None
    assert not entry.exists()  # dropped: the next compile makes it again


def test_a_failed_compile_is_not_kept(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", str(cache))
    broken = REFERENCE.replace("def run(A, B, C):", "def run(A, B, C)")
    assert not compile_triton(broken, TASK, ONE, "sm_90a", tmp_path / "a", timeout_s=300).result.ok
    assert _entries(cache) == []


def test_an_unsandboxed_evaluation_neither_reads_nor_fills_the_cache(tmp_path, monkeypatch):
    """The rule both compilers ask (compile_cache.usable_dir); a Triton compile run unsandboxed cannot start here
    (the sandbox user cannot run this checkout's interpreter), so the rule is held directly and the Triton path is
    shown to ask it. Mutation caught: compile_triton reading the cache whatever the jail."""
    from evaluator.build import compile_cache
    from evaluator.isolation.jail import Jail

    cache = tmp_path / "cache"
    assert compile_cache.usable_dir(cache, Jail("unsandboxed", "test: operator allowed it")) is None
    assert compile_cache.usable_dir(cache, None) == cache
    asked = []
    monkeypatch.setattr(compile_cache, "usable_dir", lambda d, j: asked.append(j) or None)
    broken = REFERENCE.replace("def run(A, B, C):", "def run(A, B, C)")
    compile_triton(broken, TASK, ONE, "sm_90a", tmp_path / "a", timeout_s=300)
    assert asked == [None]
