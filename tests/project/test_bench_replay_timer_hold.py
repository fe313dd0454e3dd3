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
