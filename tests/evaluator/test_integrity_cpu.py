"""The timed-call integrity flow end to end on CPU tensors (host clock): fresh inputs every call, outputs the
trusted parent chooses to compare after each call returned, the re-check and the parent-timed batches."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.checks.integrity import CHECK_FRACTION, HOST_TIME
from evaluator.pipeline import Options, evaluate
from tests.support.variants import SOURCE, variant_workdir
from tests.support.verdicts import validate

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
WORKLOAD = "00000000-0000-4000-8000-000000000016"


def timed(variant: str | None, **options):
    with variant_workdir(variant) as work:
        opts = Options(
            **{
                "device_type": "cpu",
                "timeout_s": 60,
                "warmup": 3,
                "iters": 20,
                "allow_unsandboxed": True,
                "workdir": work,
            }
            | options
        )
        verdict = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    validate(json.loads(vm.to_json(verdict)))
    return verdict


def test_honest_kernel_passes_with_its_calls_checked_and_timed_from_outside():
    """The parent compares about CHECK_FRACTION of the timed calls, besides one call per batch. Mutation caught:
    `TimingPlan.draw` choosing no timed call."""
    # A host-code call here takes microseconds, so one context switch in a batch on a loaded 2-core machine can
    # exceed the clock check's slack (0.05 ms a call); the fastest batch counts, so more batches keep it honest.
    iters, batches = 60, 8
    v = timed(None, batches=batches, iters=iters)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    record = v.integrity
    assert record.timed_calls == iters and record.holds == []
    # one call of each batch is always compared in full, every other one on sampled elements; timed calls at
    # random, each with CHECK_FRACTION
    timed_checked = record.checked_calls - batches
    assert record.sampled_calls > 0 and record.sampled_calls % batches == 0, record.sampled_calls
    assert v.workloads[0].correctness.timed_outputs_checked == timed_checked
    # Binomial(60, 0.5): 12..48 holds but for ~4e-6 of honest runs
    assert CHECK_FRACTION == 0.5 and 12 <= timed_checked <= 48, timed_checked
    assert record.trusted_ms_per_call[WORKLOAD] > 0
    perf = v.workloads[0].performance
    assert perf.candidate.method == "host_clock" and perf.latency_ms > 0


@pytest.mark.parametrize("variant", ["SKIP_SEEN_BUFFERS", "DRIFT"])
def test_reusing_results_between_calls_fails_with_the_call_named(variant):
    v = timed(variant)
    w = v.workloads[0]
    assert v.status == OverallStatus.INCORRECT_NUMERICAL, w.message
    # Each trial runs on the same lent slot with new values: a kernel that keys on its buffers fails at trial 2.
    assert w.message.startswith("trial 2:") or "may not be reused between calls" in w.message, w.message
    assert w.performance is None


def test_results_reused_on_some_timed_calls_only_fail_naming_a_timed_call():
    """STALE_CALLS writes the previous call's result on timed calls 3..20 only: the correctness trials, the first
    timed calls, the re-check and every batch call are correct, so only the parent's check of a timed call, chosen
    after the call returned, can catch it. Mutation caught: `TimingPlan.draw` choosing no timed call (then this
    kernel PASSES). A miss needs none of the 18 stale calls checked: 0.5**18, about 4e-6."""
    trials, warmup, iters = 3, 3, 20
    first_timed = trials + warmup + 1  # the process's calls: trials, warm-up calls, then the timed calls
    v = timed(f"STALE_CALLS:{first_timed + 2}:{first_timed + iters - 1}", trials=trials, warmup=warmup, iters=iters)
    w = v.workloads[0]
    assert v.status == OverallStatus.INCORRECT_NUMERICAL, w.message
    named = re.search(r"output of timed call (\d+) differs from the reference", w.message)
    assert named is not None, w.message
    assert 3 <= int(named.group(1)) <= iters
    assert "may not be reused between calls" in w.message and w.performance is None


def test_one_wrong_call_in_a_ranked_batch_fails_whoever_the_full_comparison_picks():
    """STALE_CALLS on one call of the first batch (the previous call's result: right shape, wrong values). The
    fastest batch ranks, so a kernel that skips a share of one batch's calls ranks faster by that share; one call a
    batch is compared in full, so alone that would catch this call about once in the batch's length. Every call of
    every batch is also compared on sampled elements taken before the clock stopped. Mutation caught: the batch
    samples not compared (`_sampled_batch_failure` returning None): the kernel then PASSES unless the full
    comparison happens to pick that call."""
    trials, warmup, iters = 3, 3, 6
    first_batch_call = trials + warmup + iters + 1
    stale = first_batch_call + 3
    v = timed(f"STALE_CALLS:{stale}:{stale}", trials=trials, warmup=warmup, iters=iters, batches=1)
    w = v.workloads[0]
    assert v.status == OverallStatus.INCORRECT_NUMERICAL, w.message
    assert "of a back-to-back batch differs from the reference" in w.message, w.message
    assert w.performance is None


def test_a_kernel_whose_in_process_clock_under_reports_is_held_at_the_outside_clock():
    """TAMPERED_CLOCK slows the candidate process's host timer 1000x and takes 5 ms a call for real: the parent's
    own clock over the back-to-back batches disagrees, so the result is held (host_time) and the slower figure is
    used. Mutation caught: the trusted-clock hold never applied (`trusted_clock_hold`'s result dropped in
    evaluator/measure/candidate.py: the kernel then passes unheld at ~5 microseconds a call)."""
    v = timed("TAMPERED_CLOCK", batches=3)
    w = v.workloads[0]
    assert v.status == OverallStatus.PASSED, w.message  # correct outputs: held for review, not failed
    codes = [h.code for h in v.integrity.holds]
    assert HOST_TIME in codes, codes
    assert "the evaluator's own clock measured" in next(h.message for h in v.integrity.holds if h.code == HOST_TIME)
    trusted = v.integrity.trusted_ms_per_call[WORKLOAD]
    assert trusted >= 5.0  # every call sleeps 5 ms
    assert w.performance.latency_ms == pytest.approx(trusted)  # the outside clock's figure, not the forged one


def test_the_candidate_process_sees_no_secret_of_the_evaluator(monkeypatch):
    """The ranked check's secret seed reaches the evaluator through its environment; never the candidate."""
    monkeypatch.setenv("EVALUATOR_SEED", "secret-seed-marker-7f3a")
    monkeypatch.setenv("SECRET_KEY", "django-secret-marker-91c2")
    with variant_workdir("PRINT_ENV") as work:
        opts = Options(device_type="cpu", timeout_s=60, allow_unsandboxed=True, workdir=work)
        v = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["correctness"], options=opts)
    out = v.workloads[0].stdout_tail
    assert "ENV " in out  # the candidate did print its environment
    assert "secret-seed-marker-7f3a" not in out and "django-secret-marker-91c2" not in out


def test_the_library_baseline_is_timed_where_the_candidate_cannot_reach_it():
    """The denominator: the SLOW_BASELINE variant replaces torch.matmul (the tiny task's baseline) with one
    that sleeps 20 ms, from inside its own process, on its first call. When the baseline was timed in the candidate's
    process this made the baseline ~20 ms and the speedup enormous. Mutation caught: timing the baseline in the
    candidate's process again (`start(..., baseline=True)` and no trusted baseline process)."""
    v = timed("SLOW_BASELINE", batches=8)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    perf = v.workloads[0].performance
    assert perf.baseline_measured_by == "trusted process"
    assert perf.baseline_latency_ms is not None and perf.baseline_latency_ms < 10.0, perf.baseline_latency_ms
    assert perf.host_floor_ms is not None and perf.host_floor_ms >= 0


def test_the_ranked_latency_is_the_parents_clock_whatever_the_process_reports():
    """The UNDER_REPORT variant makes the in-process timer read 80% of each call's real time (a payload rewriting
    the timer or its records), too little for the host_time hold (1.5x). The ranked latency is the parent's clock
    over the batches; the in-process figure stays a labelled hint. Mutation caught: `rank_by_trusted_clock` not
    called (the ranked latency was the in-process 80%)."""
    v = timed("UNDER_REPORT", batches=4)
    w = v.workloads[0]
    assert v.status == OverallStatus.PASSED, w.message
    perf = w.performance
    trusted = v.integrity.trusted_ms_per_call[WORKLOAD]
    assert perf.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
    assert perf.latency_ms == pytest.approx(trusted, abs=1e-6)
    assert perf.in_process_latency_ms is not None and perf.in_process_latency_ms < perf.latency_ms
    # the speedup and throughput come from the ranked latency (the consistency hold would say otherwise)
    assert perf.speedup_factor == pytest.approx(perf.baseline_latency_ms / perf.latency_ms, rel=1e-6)
    assert not [h for h in v.integrity.holds if h.code == "inconsistent_figures"]


def test_outputs_recomputed_when_saved_are_caught_where_the_parent_captures_them():
    """RECOMPUTE_AT_SAVE computes 56% of C in each call and patches the harness's round routine to finish every
    output once the round is over. Every call writes into memory the parent owns, and the parent copies what it
    compares before it ends the round: the partial call is caught at the first trial."""
    v = timed("RECOMPUTE_AT_SAVE", batches=3)
    w = v.workloads[0]
    assert v.status == OverallStatus.INCORRECT_NUMERICAL, w.message
    assert w.message.startswith("trial 1:"), w.message
    assert w.performance is None


def test_the_submission_loads_only_once_the_baseline_process_is_gone(monkeypatch):
    """The candidate's process starts beside the trusted baseline's, to overlap the two start-ups, but it may only
    load the submission after the baseline was timed and its process closed: what the submission does at load
    (a static initialiser spinning threads, for one) must not reach the denominator; and the baseline's rounds
    begin only once the candidate's process has finished its own setup. Mutations caught: the `load` command sent
    before the baseline is measured; the baseline timed before the candidate's `standby`."""
    from evaluator.both_sides import protocol
    from evaluator.measure import candidate

    events: list[tuple[str, ...]] = []
    real_start = candidate.start

    def spy_start(setup, workload, shared, *, trusted_baseline=False):
        child = real_start(setup, workload, shared, trusted_baseline=trusted_baseline)
        who = "baseline" if trusted_baseline else "candidate"
        events.append(("start", who))
        send, close, receive = child.send, child.close, child.receive

        def spied_receive(*args, **kwargs):
            message = receive(*args, **kwargs)
            events.append(("received", who, str(message.get(protocol.EVENT, ""))))
            return message

        def spied_send(message):
            events.append(("send", who, protocol.command_name(message)))
            send(message)

        def spied_close(*args, **kwargs):
            code = close(*args, **kwargs)
            events.append(("closed", who))
            return code

        child.send, child.close, child.receive = spied_send, spied_close, spied_receive
        return child

    monkeypatch.setattr(candidate, "start", spy_start)
    v = timed(None, batches=2)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    assert events[:2] == [("start", "candidate"), ("start", "baseline")]  # the start-ups overlap
    standby = events.index(("received", "candidate", "standby"))
    assert standby < events.index(("send", "baseline", "round"))
    load = events.index(("send", "candidate", "load"))
    assert events.index(("closed", "baseline")) < load
    assert [e for e in events[:load] if e[1] == "candidate"] == [("start", "candidate"), events[standby]]
    assert [e for e in events[load:] if e[1] == "baseline"] == []
