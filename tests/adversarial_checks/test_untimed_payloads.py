"""The Python of the corpus class "untimed work" (tests/adversarial/untimed_*, triton_untimed_*) reaches what it
attacks, run here on the CPU against the real evaluator: the timer forgery scales every window of the candidate
process's timers, and the seed hunt predicts a ranked call the moment a seed is within its reach. Without these, an
entry expected to be "neutralised" (PASSED at honest speed, "seed hunt: no hit") could pass only because its
payload had quietly stopped working.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "tests" / "adversarial"
TINY = REPO / "tests" / "evaluator" / "tasks" / "tiny_gemm"
UUID = "00000000-0000-4000-8000-000000000016"
RUN_SEED = bytes.fromhex("5be0a7c41d3f96e2087b1c5a9e4d3f21")


def _cuda_hunt() -> str:
    text = (HERE / "untimed_seed_prediction.cu").read_text()
    return text[text.index('R"PY(') + len('R"PY(') : text.index(')PY"')]


def _on_cpu(source: str) -> str:
    """The payload with its inputs drawn on the CPU (the hunt draws on the GPU the parent draws on)."""
    assert source.count('device="cuda"') == 1
    return source.replace('device="cuda"', 'device="cpu"')


# Run in a process of its own, as in the candidate process: the hunt scans the interpreter's objects, and this
# test's own RUN_SEED must not be among them.
HUNT = """
import ctypes, importlib.util, json, sys
kind, source = sys.argv[2], open(sys.argv[3]).read()
if kind == "cuda":
    registered = set()
    add = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(lambda k0, k1, c: registered.add((k0, k1)))
    namespace = {"__name__": "__main__", "ADD_ADDRESS": ctypes.cast(add, ctypes.c_void_p).value}
    exec(compile(source, "<payload>", "exec"), namespace)
    namespace["_hunt"]()
    predicted = namespace["_predicted"]
    assert registered == {key[:2] for key in predicted}
else:
    spec = importlib.util.spec_from_file_location("candidate", sys.argv[3])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._hunt()
    predicted = module._predicted
print("KEYS", json.dumps([list(key[:2]) for key in predicted]))
"""


def _hunt(kind: str, job: dict, tmp_path: Path) -> set[tuple[int, ...]]:
    """The fingerprints of A the payload of `kind` predicts, run in a process whose job file is `job`."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"task_dir": str(TINY), "workload": UUID, **job}))
    source = _cuda_hunt() if kind == "cuda" else (HERE / "triton_untimed_seed_prediction.py").read_text()
    (tmp_path / "payload.py").write_text(_on_cpu(source))
    done = subprocess.run(
        [sys.executable, "-c", HUNT, str(path), kind, str(tmp_path / "payload.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    keys = next(line for line in done.stdout.splitlines() if line.startswith("KEYS "))
    return {tuple(key) for key in json.loads(keys[len("KEYS ") :])}


def _ranked_call_key() -> tuple[int, ...]:
    """The fingerprint of A in the 8th call of the 2nd batch, as the parent draws it from RUN_SEED."""
    import torch

    from evaluator.both_sides.inputs import derive_seed, input_deriver, make_inputs
    from evaluator.both_sides.taskdata import load_task

    task = load_task(TINY)
    a = make_inputs(
        task.definition, task.workload(UUID), derive_seed(RUN_SEED, UUID, "batch1", 7), "cpu", input_deriver(task)
    )[0]
    return tuple(a.reshape(-1)[:8].view(torch.int64).tolist())[:2]


@pytest.mark.parametrize("kind", ["cuda", "triton"])
def test_seed_hunt_predicts_a_ranked_call_once_the_run_seed_is_readable(kind, tmp_path):
    started = time.monotonic()
    predicted = _hunt(kind, {"note": RUN_SEED.hex()}, tmp_path)
    assert _ranked_call_key() in predicted
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("kind", ["cuda", "triton"])
def test_seed_hunt_predicts_nothing_the_parent_draws_when_no_seed_is_readable(kind, tmp_path):
    assert _ranked_call_key() not in _hunt(kind, {}, tmp_path)


def _forge(kind: str) -> None:
    if kind == "cuda":
        from tests.adversarial_checks.test_adversarial_payloads import payload, run_as_main

        run_as_main(payload("untimed_timer_forgery.cu", "kPatch"))
        run_as_main(payload("untimed_timer_forgery.cu", "kPatch"))  # idempotent: called on every run
        return
    spec = importlib.util.spec_from_file_location("untimed_forgery_candidate", HERE / "triton_untimed_timer_forgery.py")
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.parametrize("kind", ["cuda", "triton"])
def test_timer_forgery_scales_every_window_of_the_candidate_timers(kind):
    import torch

    import evaluator.candidate_process.timing as timing

    classes = [c for c in vars(timing).values() if isinstance(c, type) and callable(getattr(c, "window", None))]
    assert {c.__name__ for c in classes} >= {"CuptiTimer", "HostTimer"}
    saved = {c: c.__dict__["window"] for c in classes}
    elapsed = torch.cuda.Event.elapsed_time
    timer = timing.HostTimer()
    t0 = timer.now()
    time.sleep(0.02)
    t1 = timer.now()
    truth = timer.window(t0, t1)[0]
    try:
        _forge(kind)
        assert all(c.__dict__["window"] is not saved[c] for c in classes)
        assert timer.window(t0, t1)[0] == pytest.approx(truth * 0.95)
        assert torch.cuda.Event.elapsed_time is not elapsed
    finally:
        for c, window in saved.items():
            c.window = window
            if "_adv_scaled" in c.__dict__:
                delattr(c, "_adv_scaled")
        torch.cuda.Event.elapsed_time = elapsed
        if "_adv_scaled" in torch.cuda.Event.__dict__:
            delattr(torch.cuda.Event, "_adv_scaled")
