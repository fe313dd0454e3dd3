"""Does the corpus's profiled-only wgmma path (tests/adversarial/harness_profile_branch.cu) arm its trick only
under the profiler? The entry prints which sign of a profiler it saw on its first call. This evaluates it on the
headline GEMM's M=8192 workload twice, once with correctness and timing only (no profiler anywhere) and once with
the arch stage too, and prints each process's line, the status, the arch result and the tensor witness's share.

    python3 bench/probe_profile_branch.py [--out DIR]

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator import pipeline  # noqa: E402
from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.both_sides.verdict import to_dict  # noqa: E402

TASK = "gemm_n7168_k5120"
KERNEL = REPO / "tests/adversarial/harness_profile_branch.cu"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    task = find_task(REPO / "tasks", TASK)
    workload = next(w for w in task.workloads if w.axes.get("M") == 8192)
    rows = []
    for stages in (["correctness", "timing"], ["correctness", "timing", "arch"]):
        v = pipeline.evaluate(KERNEL.read_text(), task, "sm_90a", workloads=workload.uuid, stages=stages)
        check = v.arch_check
        lines = [ln for w in v.workloads for ln in (w.stdout_tail or "").splitlines() if "profiler seen" in ln]
        row = {
            "stages": ",".join(stages),
            "status": v.status.value,
            "latency_ms": v.workloads[0].performance.latency_ms if v.workloads and v.workloads[0].performance else None,
            "arch": check.status.value if check else None,
            "witness_share": check.witness_tensor_share if check else None,
            "timer_ratio": check.timer_ratio if check else None,
            "timed_process_says": lines,
        }
        rows.append(row)
        print(json.dumps(row))
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"profile-branch-{len(rows)}.json").write_text(json.dumps(to_dict(v), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
