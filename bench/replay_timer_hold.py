"""The profiled-call timer check (evaluator.checks.integrity.ncu_hold) as the evaluator decides it now, replayed over
every committed corpus verdict that has a profile, beside what the verdict recorded when it ran.

    python bench/replay_timer_hold.py [CORPUS_JSON_GZ ...]

Default: docs/runs/integrity/*/corpus.json.gz. Prints how many verdicts were replayed and one line for each whose
`timer_disagreement` decision differs now (run, entry, what the corpus expected, the profiled time over the ranked
latency, the host floor). A change to the check's margin or yardstick shows here what it would have done to every
run on record before any GPU runs it again. The recorded decision is the rule of its day: runs before the trusted
clock ranked (h200-2026-12-01*, 12-03) held the profile against the in-process median within 50%, so what differs
there is that change's doing.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.arch_check.arch_stage import CROSS_CHECK_ONLY  # noqa: E402
from evaluator.both_sides.verdict import from_dict  # noqa: E402
from evaluator.checks.integrity import TIMER_DISAGREEMENT, ncu_hold  # noqa: E402
from evaluator.checks.integrity_record import timer_yardstick  # noqa: E402


def _outcomes(path: Path) -> Iterator[dict[str, Any]]:
    """Every outcome of every round in a corpus file (tests/adversarial/corpus.py writes a list of rounds)."""
    for round_ in json.loads(gzip.decompress(path.read_bytes())):
        yield from (o for o in round_.get("outcomes", []) if isinstance(o.get("verdict"), dict))


def replay(entry: dict[str, Any]) -> tuple[bool, bool, float, float | None] | None:
    """(held when it ran, held now, profiled over its yardstick, host floor allowed), or None without a profiled,
    timed workload."""
    verdict = from_dict(entry["verdict"])
    check = verdict.arch_check
    reported_ms, host_floor_ms = timer_yardstick(check, verdict)
    if not check.ncu_gpu_time_ms or not reported_ms:
        return None
    holds = verdict.integrity.holds if verdict.integrity is not None else []
    was = any(h.code == TIMER_DISAGREEMENT for h in holds)
    now = ncu_hold(
        reported_ms=reported_ms,
        ncu_ms=check.ncu_gpu_time_ms,
        # The verdict keeps no flag for a profile taken only to cross-check the timer; its reason says so.
        slower_only=check.reason.endswith(CROSS_CHECK_ONLY),
        host_floor_ms=host_floor_ms,
    )
    return was, now is not None, check.ncu_gpu_time_ms / reported_ms, host_floor_ms


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted((REPO / "docs" / "runs" / "integrity").glob("*/corpus.json.gz"))
    replayed, changed = 0, []
    for path in files:
        for entry in _outcomes(path):
            result = replay(entry)
            if result is None:
                continue
            replayed += 1
            was, now, ratio, floor = result
            if was != now:
                changed.append(
                    f"{path.parent.name}  {entry['name']}  expected {entry.get('expected', '?')}  "
                    f"{'held' if was else 'not held'} -> {'held' if now else 'not held'}  "
                    f"ncu/yardstick {ratio:.3f}  host floor {floor if floor is None else round(floor, 5)}"
                )
    print(f"profiled verdicts replayed: {replayed} in {len(files)} files; decided otherwise now: {len(changed)}")
    for line in changed:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
