"""The Python payloads that the in-process attack kernels run (tests/adversarial/*.cu, through PyRun_SimpleString)
still reach the evaluator internals they target. If a refactor renames what they patch, an attack silently turns
into an honest kernel and its corpus entry would "pass" for the wrong reason; this test fails first instead.

Each payload is read from its kernel's C string literal and executed here, as the kernel would execute it in the
candidate's __main__, against the real evaluator modules (CPU only, nothing patched is left behind).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "adversarial"


def payload(kernel: str, name: str) -> str:
    """The value of `static const char <name>[] = "..." "...";` in the kernel's source."""
    text = (HERE / kernel).read_text()
    match = re.search(rf"static const char {name}\[\] =(.*?);\n", text, re.DOTALL)
    assert match, f"{kernel}: no {name}"
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))
    return "".join(ast.literal_eval('"' + p + '"') for p in pieces)


def run_as_main(code: str) -> dict:
    namespace = {"__name__": "__main__"}
    exec(compile(code, "<payload>", "exec"), namespace)  # noqa: S102 - the point of the test
    return namespace


def test_patch_timer_divides_the_interval_merge_by_eight():
    import torch

    import evaluator.candidate_process.timing as timing

    real_merge, real_elapsed = timing.merge_intervals, torch.cuda.Event.elapsed_time
    try:
        before = timing.merge_intervals([(0, 800), (1000, 1800)])
        run_as_main(payload("python_patch_timer.cu", "kPatch"))
        run_as_main(payload("python_patch_timer.cu", "kPatch"))  # idempotent: called on every run
        assert timing.merge_intervals([(0, 800), (1000, 1800)]) == pytest.approx(before / 8)
        assert torch.cuda.Event.elapsed_time is not real_elapsed
    finally:
        timing.merge_intervals = real_merge
        torch.cuda.Event.elapsed_time = real_elapsed
        for obj in (timing, torch.cuda.Event):
            if hasattr(obj, "_adv_patched"):
                delattr(obj, "_adv_patched")


def test_timer_scaled_multiplies_the_interval_merge_by_four_fifths():
    import torch

    import evaluator.candidate_process.timing as timing

    real_merge, real_elapsed = timing.merge_intervals, torch.cuda.Event.elapsed_time
    try:
        before = timing.merge_intervals([(0, 800), (1000, 1800)])
        run_as_main(payload("harness_timer_scaled.cu", "kPatch"))
        run_as_main(payload("harness_timer_scaled.cu", "kPatch"))  # idempotent: called on every run
        assert timing.merge_intervals([(0, 800), (1000, 1800)]) == pytest.approx(before * 0.8)
        assert torch.cuda.Event.elapsed_time is not real_elapsed
    finally:
        timing.merge_intervals = real_merge
        torch.cuda.Event.elapsed_time = real_elapsed
        for obj in (timing, torch.cuda.Event):
            if hasattr(obj, "_adv_scaled"):
                delattr(obj, "_adv_scaled")


def test_gc_scan_finds_the_session_and_shrinks_its_timer_windows():
    import evaluator.candidate_process.child as child
    from evaluator.candidate_process.timing import HostTimer

    session = child.Session.__new__(child.Session)  # the real class; its __init__ needs a task and a GPU
    session.timer = HostTimer()
    honest = HostTimer()
    run_as_main(payload("gc_shrink_samples.cu", "kScan"))
    run_as_main(payload("gc_shrink_samples.cu", "kScan"))  # idempotent: called on every run
    assert session.timer.window(0, 5_000_000)[0] == pytest.approx(0.5)  # 5 ms read as a tenth
    assert honest.window(0, 5_000_000)[0] == pytest.approx(5.0)  # not a session's timer: untouched


def test_send_wrapper_rewrites_the_timing_message_of_the_child_session():
    import evaluator.candidate_process.child as child

    sent = []
    session = child.Session.__new__(child.Session)  # the real class; its __init__ needs a task and a GPU
    session.send = sent.append
    run_as_main(payload("forged_channel_rewrite.cu", "kWrap"))
    session.send({"event": "trial", "index": 0})
    session.send({"event": "timing", "series": {"candidate": {"samples_ms": [8.0]}, "baseline": {"samples_ms": [8.0]}}})
    assert sent[0] == {"event": "trial", "index": 0}
    assert sent[1]["series"]["candidate"]["samples_ms"] == [1.0]
    assert sent[1]["series"]["baseline"]["samples_ms"] == [8.0]


def test_secret_scan_would_print_a_planted_secret():
    # In a fresh, small process, as in the candidate's: the scan shows its first 30 finds, and a test worker's
    # heap, full of other tests' objects, would use them up before reaching the planted job.
    holder = (
        "class Holder:  # as the child's Session holds its job dict (a dict of atomic values, untracked by gc)\n"
        "    pass\n"
        "holder = Holder()\n"
        "holder.job = {'profile_seed': 1234567, 'secret_seed': 'payload-test-seed'}\n"
    )
    env = {"PATH": os.environ.get("PATH", ""), "PTXBENCH_CANARY_SECRET": "payload-test-canary"}
    code = holder + payload("secrets_python_reach.cu", "kLook")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "payload-test-canary" in out
    assert "payload-test-seed" in out and "1234567" in out
