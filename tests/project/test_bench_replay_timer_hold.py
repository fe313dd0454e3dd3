"""bench/replay_timer_hold.py replays the evaluator's timer check over corpus files: here one written in the corpus
runner's shape with h100-2026-12-06j's honest GEMM at M=128 (held when it ran) and an entry with no profile."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from evaluator.both_sides.verdict import (
    ArchCheck,
    ArchStatus,
    Integrity,
    IntegrityHold,
    OverallStatus,
    Performance,
    Status,
    Verdict,
    WorkloadResult,
    to_dict,
)
from tests.support.factories import REPO


def _outcome(name: str, *, ncu_ms: float | None, ranked_ms: float, floor_ms: float, held: bool) -> dict:
    """One corpus outcome around a verdict as the evaluator writes it (the replay reads it back as one)."""
    verdict = Verdict("t", "gemm", "sm_90a", OverallStatus.PASSED, "now", "0" * 64, 1, ["timing", "arch"])
    performance = Performance(latency_ms=ranked_ms, host_floor_ms=floor_ms)
    verdict.workloads = [WorkloadResult("w1", {"M": 128}, Status.PASSED, performance=performance)]
    verdict.arch_check = ArchCheck(
        ArchStatus.VERIFIED, workload="w1", ncu_gpu_time_ms=ncu_ms, ranked_latency_ms=ranked_ms
    )
    verdict.integrity = Integrity(holds=[IntegrityHold("timer_disagreement", "...")] if held else [])
    return {"name": name, "expected": "PASSED + arch verified + held none", "verdict": to_dict(verdict)}


def test_a_decision_the_check_makes_otherwise_now_is_listed_and_unprofiled_entries_are_left_out(tmp_path):
    rounds = [
        {
            "round": 1,
            "outcomes": [
                _outcome("control_reference_hopper", ncu_ms=0.05402, ranked_ms=0.07319, floor_ms=0.00742, held=True),
                _outcome("untimed_dummy", ncu_ms=None, ranked_ms=0.8, floor_ms=0.01, held=False),
                _outcome("control_splitk_memset", ncu_ms=0.6333, ranked_ms=0.6563, floor_ms=0.0135, held=False),
            ],
        }
    ]
    path = tmp_path / "run-x" / "corpus.json.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(json.dumps(rounds).encode()))
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "replay_timer_hold.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "profiled verdicts replayed: 2 in 1 files; decided otherwise now: 1"
    assert len(lines) == 2 and "run-x  control_reference_hopper" in lines[1]
    assert "held -> not held  ncu/yardstick 0.738  host floor 0.00742" in lines[1]


def test_the_spread_sets_honest_kernels_against_the_entries_inside_the_margin(tmp_path):
    run = tmp_path / "integrity" / "run-y"
    (run / "pass" / "verdicts").mkdir(parents=True)
    outcomes = [
        _outcome("control_persistent_tiles", ncu_ms=1.05, ranked_ms=1.0, floor_ms=0.01, held=False),
        _outcome("branch_when_profiled", ncu_ms=1.1, ranked_ms=1.0, floor_ms=0.01, held=False),
        _outcome("env_maps", ncu_ms=1.3, ranked_ms=1.0, floor_ms=0.01, held=True),  # beyond the margin
        _outcome("faster_when_profiled", ncu_ms=0.9, ranked_ms=1.0, floor_ms=0.01, held=False),
    ]
    for cheat in outcomes[1:]:  # only an entry expected to be held for nothing is an honest control
        cheat["expected"] = "PASSED + held profile_mismatch"
    rounds = [{"round": 1, "outcomes": outcomes}]
    corpus = run / "pass" / "corpus.json.gz"
    corpus.write_bytes(gzip.compress(json.dumps(rounds).encode()))
    reference = run / "pass" / "verdicts" / "gemm-reference-h100.json"
    reference.write_text(json.dumps(_outcome("ref", ncu_ms=0.8, ranked_ms=1.0, floor_ms=0.01, held=False)["verdict"]))
    # One evaluation written twice (a part's file and the run's gathered one) counts once.
    row = {"kernel": "gemm/reference", "evaluation": "e1", "trusted_ratio": 0.97}
    holds = run / "holds.jsonl"
    holds.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "replay_timer_hold.py"),
            "--spread",
            str(corpus),
            str(reference),
            str(holds),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "honest profiled calls: 3; over their yardstick 0.800 (gemm-reference-h100, run-y) to "
        "1.050 (control_persistent_tiles, run-y); held beyond 1.25 on the slower side"
    )
    assert lines[2:] == ["  branch_when_profiled: 1, 1.100 to 1.100"]
