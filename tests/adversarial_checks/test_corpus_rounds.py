"""The corpus runner's round: CPU entries beside the GPU ones, outcomes kept in the manifest's order.

The "GPU" entry here is a CPU entry marked as one (its stage is the policy), so that the scheduling is seen on a
host without a GPU; every evaluation is real."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402


def _entries():
    by_name = {e["name"]: e for e in corpus.entries(gpu=False)}
    first, second = by_name["cublas_dlopen"], by_name["include_etc_passwd"]
    as_gpu = {**by_name["cublas_dlopen"], "name": "cublas_dlopen_as_gpu", "gpu": True}
    return [first, as_gpu, second]


def _round(beside: int):
    threads: dict[str, str] = {}

    def done(outcome: corpus.Outcome) -> None:
        threads[outcome.name] = threading.current_thread().name

    caps = {"gpu": None, "sandbox": None, "pids_limit": None}  # the marked entry runs: its stage needs no GPU
    return corpus.run_round(_entries(), caps, done, beside=beside), threads


def test_cpu_entries_run_beside_the_gpu_ones_and_the_outcomes_keep_their_order():
    outcomes, threads = _round(beside=2)
    assert [o.name for o in outcomes] == ["cublas_dlopen", "cublas_dlopen_as_gpu", "include_etc_passwd"]
    assert all(o.ok for o in outcomes), [(o.name, o.detail) for o in outcomes]
    assert threads["cublas_dlopen_as_gpu"] == threading.main_thread().name
    assert {threads["cublas_dlopen"], threads["include_etc_passwd"]}.isdisjoint({threading.main_thread().name})


def test_without_beside_every_entry_runs_in_turn_on_the_calling_thread():
    outcomes, threads = _round(beside=0)
    assert [o.name for o in outcomes] == ["cublas_dlopen", "cublas_dlopen_as_gpu", "include_etc_passwd"]
    assert set(threads.values()) == {threading.main_thread().name}


def test_the_prebuild_keeps_each_gpu_entrys_compile_and_a_cuda_entrys_sass(
    tmp_path, monkeypatch, allow_unsandboxed_without_bwrap
):
    """The round's first evaluation of an entry then finds its compile (CUDA and Triton) and a CUDA entry its
    disassembly in the cache (about a second of cuobjdump an entry on the GPU host). Fails when the prebuild stops
    at the compile stage (no disassembly is kept) or leaves Triton entries out."""
    by_name = {e["name"]: e for e in corpus.entries(gpu=True)}
    triton = next(e for e in by_name.values() if e.get("language") == "triton" and not e.get("needs"))
    light = {"name": "light_as_gpu", "file": "../kernels/light_kernel.cu", "on": "tiny", "gpu": True,
             "stages": "correctness", "options": {"skip_source_policy": True}, "expect": {"status": ["PASSED"]}}  # fmt: skip
    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", str(cache))
    assert corpus.prebuild([light, triton], 2) == ["light_as_gpu", triton["name"]]
    entries = [p for p in cache.iterdir() if p.is_dir() and (p / "kernel.so").exists()]
    assert len(entries) == 1
    assert "saxpy_steps" in (entries[0] / "kernel.sass").read_text()
    assert len([p for p in cache.iterdir() if (p / "triton-cache.tar").is_file()]) == 1


def test_only_runs_the_entries_in_the_order_given_and_refuses_a_name_it_does_not_know(tmp_path, capsys):
    """`--only b,a` runs b first (a session's run cut short by the device keeps the entries it named first), and a
    misspelt name stops the run before anything is evaluated instead of leaving the entry out in silence."""
    out = tmp_path / "corpus.json"
    later, earlier = "include_etc_passwd", "cublas_dlopen"  # the manifest lists cublas_dlopen first
    names = [e["name"] for e in corpus.entries(gpu=False)]
    assert names.index(earlier) < names.index(later)
    assert corpus.main(["--cpu-only", "--only", f"{later},{earlier}", "--no-compile-cache", "--json", str(out)]) == 0
    (record,) = json.loads(out.read_text())
    assert [o["name"] for o in record["outcomes"]] == [later, earlier]
    with pytest.raises(SystemExit) as stop:
        corpus.main(["--cpu-only", "--only", f"{earlier},cublas_dlopn", "--no-compile-cache"])
    assert stop.value.code == 2
    assert "--only names no entry of this selection: cublas_dlopn" in capsys.readouterr().err


def _failing_host(monkeypatch, failures: dict[str, int]) -> list[str]:
    """The evaluation of each entry named in `failures` raises EnvironmentProblem that many times first (a host that
    lost a trusted process); the rest is the real evaluation."""
    real, calls = corpus.evaluate_entry, []

    def evaluate_entry(entry, **kwargs):
        calls.append(entry["name"])
        if failures.get(entry["name"], 0) > 0:
            failures[entry["name"]] -= 1
            raise corpus.EnvironmentProblem("the trusted library-baseline process failed: planted")
        return real(entry, **kwargs)

    monkeypatch.setattr(corpus, "evaluate_entry", evaluate_entry)
    return calls


def test_an_entry_whose_host_failed_once_is_evaluated_again(monkeypatch):
    """As the portal requeues an evaluation after an infrastructure failure. Mutation caught: one attempt only."""
    calls = _failing_host(monkeypatch, {"cublas_dlopen": 1})
    outcomes, _ = _round(beside=0)
    assert calls.count("cublas_dlopen") == 2
    first = outcomes[0]
    assert first.ok, first.detail
    assert "evaluated again after an environment problem: the trusted library-baseline process failed" in first.detail


def test_a_host_that_keeps_failing_one_entry_loses_that_entry_not_the_round(monkeypatch):
    """A GPU pass lost the rest of a round to one EnvironmentProblem. Mutation caught: the exception left to escape."""
    _failing_host(monkeypatch, {"cublas_dlopen_as_gpu": 5})
    outcomes, _ = _round(beside=0)
    by_name = {o.name: o for o in outcomes}
    lost = by_name["cublas_dlopen_as_gpu"]
    assert not lost.ok and lost.actual == "environment problem"
    assert lost.detail.count("planted") == corpus.ENVIRONMENT_ATTEMPTS
    assert by_name["cublas_dlopen"].ok and by_name["include_etc_passwd"].ok
