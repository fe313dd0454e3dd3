"""On an H200/H100 only: the false-hold rate. Every sm_90a reference kernel under
tasks/*/solutions/ (CUDA and Triton, negative controls too: they are honest code) is uploaded FALSE_HOLDS_REPEATS
times (default 5) and scored through the portal's GPU path (the evaluation job on the architecture's queue, the
real evaluator with every stage, the verdict recorded as the web tier would), with a CPU load beside it on all but
two cores, the way tests/fixit/test_fixit_gpu.py runs the portal. No evaluation may be held: an honest kernel held on a
busy host is the failure this measures. With FALSE_HOLDS_OUT set, one JSON line per evaluation (kernel, status,
review state and reason, holds, latency, trusted clock, host floor) is written there, and a table is printed.

FALSE_HOLDS_REHEARSAL=1 runs the same path on a machine without a GPU (CPU stages: STATIC_ONLY, nothing timed, so
no hold can arise), to check the test before spending GPU time."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

REHEARSAL = os.environ.get("FALSE_HOLDS_REHEARSAL") == "1"
pytestmark = [pytest.mark.gpu, pytest.mark.django_db(transaction=True)]
if not REHEARSAL:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: torch.cuda.is_available() is false", allow_module_level=True)
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (compute capability 9.0) for sm_90a", allow_module_level=True)

from django.test import override_settings  # noqa: E402

from evaluator.suite.solutions import find_solutions  # noqa: E402
from portal.catalog.models import Task  # noqa: E402
from portal.submissions.models import Evaluation, Submission  # noqa: E402
from portal.submissions.services import submission_create  # noqa: E402
from tests.support.agent_support import LOOP_SETTINGS, drain  # noqa: E402
from tests.support.factories import REPO, make_user, sync_catalog  # noqa: E402

REPEATS = int(os.environ.get("FALSE_HOLDS_REPEATS", "5"))
# Kernel labels (task/solution, as printed) to run, comma-separated; empty: all. Through the portal an evaluation
# takes 35 s (GEMM) to 115 s (attention) on the H200, so 5 rounds of all ten (about an hour) do not fit one session's
# device time: the measurement is split across sessions by kernel, and the rows appended to FALSE_HOLDS_OUT.
ONLY = {x for x in os.environ.get("FALSE_HOLDS_ONLY", "").split(",") if x}
# "i/n": this process runs the i-th of n parts of the kernels (every n-th from the i-th), so that a host of n GPUs
# runs the measurement as n processes, each pinned to its GPU (CUDA_VISIBLE_DEVICES) as a GPU worker is.
PART = os.environ.get("FALSE_HOLDS_PART", "0/1")
# The CPU load's processes: all but two cores by default; a process that runs one of n parts loads its share.
LOAD = int(os.environ.get("FALSE_HOLDS_LOAD") or max(1, (os.cpu_count() or 3) - 2))


def part_of(items: list, part: str) -> list:
    """The `part` ("i/n") share of `items`: every n-th from the i-th."""
    index, count = (int(x) for x in part.split("/"))
    if not 0 <= index < count:
        raise ValueError(f"FALSE_HOLDS_PART={part!r}: want i/n with 0 <= i < n")
    return items[index::count]


def _spin(stop: multiprocessing.Event) -> None:  # type: ignore[valid-type]
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _row(evaluation: Evaluation, label: str) -> dict:
    verdict = evaluation.verdict or {}
    integrity = verdict.get("integrity") or {}
    perf = next((w.get("performance") for w in verdict.get("workloads", []) if w.get("performance")), None) or {}
    return {
        "kernel": label,
        "evaluation": str(evaluation.id),
        "status": evaluation.status,
        "review_state": evaluation.review_state,
        "review_reason": evaluation.review_reason,
        "holds": [h.get("code") for h in integrity.get("holds", [])],
        "latency_ms": perf.get("latency_ms"),
        "in_process_latency_ms": perf.get("in_process_latency_ms"),
        "latency_from": perf.get("latency_from"),
        "trusted_ms_per_call": integrity.get("trusted_ms_per_call"),
        "host_floor_ms": perf.get("host_floor_ms"),
        # Nsight Compute's time over the ranked latency: its spread on honest kernels is what integrity.NCU_MARGIN
        # (25%) must cover, and what would justify a smaller one.
        "trusted_ratio": (verdict.get("arch_check") or {}).get("trusted_ratio"),
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", ""),  # which GPU of the host, when the run is spread
        "cpu_load_processes": LOAD,
    }


@override_settings(**{**LOOP_SETTINGS, "EVALUATOR_STAGES": "policy,compile,sass" if REHEARSAL else "all"})
def test_no_reference_kernel_is_held_on_a_busy_host(settings):
    settings.RANKED_CHECK = False  # the public evaluation is the path measured; a ranked check doubles the time
    settings.EVALUATIONS_PER_HOUR = 10_000
    settings.MAX_ACTIVE_EVALUATIONS = 10_000
    sync_catalog()
    user = make_user("holds")
    chosen = [s for s in find_solutions(REPO / "tasks", "sm_90a") if not ONLY or s.label in ONLY]
    solutions = part_of(chosen, PART)
    assert solutions, f"no sm_90a reference kernels found (FALSE_HOLDS_ONLY={sorted(ONLY)}, part {PART})"
    out = os.environ.get("FALSE_HOLDS_OUT")
    stop = multiprocessing.Event()
    load = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(LOAD)]
    for p in load:
        p.start()
    rows = []
    try:
        for _ in range(REPEATS):
            labels = {}
            for s in solutions:
                result = submission_create(
                    user=user,
                    task=Task.objects.get(slug=s.task),
                    arch="sm_90a",
                    source=s.source(),
                    name=s.label,
                    force=True,
                    language=s.language,
                    kind=Submission.Kind.KERNEL,
                )
                labels[result.evaluation.id] = s.label
            drain()
            for evaluation_id, label in labels.items():
                rows.append(_row(Evaluation.objects.get(id=evaluation_id), label))
                if out:  # each round as it ends: a run cut short by the device's time still leaves its rows
                    with Path(out).open("a") as fh:
                        fh.write(json.dumps(rows[-1]) + "\n")
    finally:
        stop.set()
        for p in load:
            p.join(timeout=10)
    for r in rows:
        print(
            f"{r['kernel']:<48} {r['status']:<20} {r['review_state'] or '-':<8} {','.join(r['holds']) or '-':<24} "
            f"{r['latency_ms']} {r['trusted_ms_per_call']} {r['host_floor_ms']} {r['trusted_ratio']}"
        )
    assert len(rows) == REPEATS * len(solutions)
    assert all(r["status"] for r in rows), [r for r in rows if not r["status"]]
    held = [r for r in rows if r["review_state"] == "held" or r["holds"]]
    assert not held, held
