"""The corpus runner's round: CPU entries beside the GPU ones, outcomes kept in the manifest's order.

The "GPU" entry here is a CPU entry marked as one (its stage is the policy), so that the scheduling is seen on a
host without a GPU; every evaluation is real."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

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
