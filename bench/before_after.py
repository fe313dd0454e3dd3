"""The reference kernels under two evaluators on one GPU, interleaved: the integrity checks must not hurt an honest
kernel's speedup beyond the run-to-run spread. Run on an H200:

    python bench/before_after.py --old DIR_WITH_OLD_EVALUATOR --repeats 2 --out OUT

DIR_WITH_OLD_EVALUATOR holds `evaluator/` and `tasks/` of the evaluator before the change (e.g. from
`git archive <commit> evaluator tasks | tar -x -C DIR`). Each run is `python -m evaluator run` on the task's headline
workload, stages correctness and timing, a fresh process as the portal runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = [
    ("gemm_n7168_k5120", "tasks/gemm_n7168_k5120/solutions/hopper_tma_wgmma/kernel.cu"),
    ("mha_with_lse_d128", "tasks/mha_with_lse_d128/solutions/hopper_wgmma_fa/kernel.cu"),
]


def one(tree: Path, task: str, kernel: Path, out: Path) -> dict:
    cmd = [sys.executable, "-m", "evaluator", "run", str(kernel), "--task", task, "--arch", "sm_90a"]
    cmd += ["--workload", "headline", "--stages", "correctness,timing", "--json", str(out)]
    t = time.monotonic()
    proc = subprocess.run(
        cmd,
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])},
    )
    wall = time.monotonic() - t
    if not out.is_file():
        return {"error": (proc.stderr or proc.stdout)[-800:], "wall_s": wall}
    v = json.loads(out.read_text())
    perf = (v["workloads"][0].get("performance") or {}) if v.get("workloads") else {}
    integrity = v.get("integrity") or {}
    return {
        "status": v["status"],
        "speedup": perf.get("speedup_factor"),
        "latency_ms": perf.get("latency_ms"),
        "baseline_ms": perf.get("baseline_latency_ms", perf.get("reference_latency_ms")),
        "holds": [h["code"] for h in integrity.get("holds", [])],
        "checked_calls": integrity.get("checked_calls"),
        "wall_s": round(wall, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--old", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("gpu-out"))
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for task, kernel in KERNELS:
        for r in range(a.repeats):
            for label, tree in (("before", a.old.resolve()), ("after", REPO)):
                res = one(tree, task, REPO / kernel, a.out / f"ba-{task}-{label}-{r}.json")
                res.update(task=task, evaluator=label, repeat=r)
                rows.append(res)
                print(json.dumps(res), flush=True)
    print("\n== before/after (speedup vs library, headline workload) ==")
    print(f"{'task':22} {'evaluator':9} {'speedups':28} {'median':>7} {'wall s':>7}")
    for task, _ in KERNELS:
        for label in ("before", "after"):
            got = [x for x in rows if x["task"] == task and x["evaluator"] == label]
            sp = [x["speedup"] for x in got if x.get("speedup")]
            med = statistics.median(sp) if sp else float("nan")
            walls = statistics.mean(x["wall_s"] for x in got)
            print(f"{task:22} {label:9} {' '.join(f'{s:.3f}' for s in sp):28} {med:7.3f} {walls:7.1f}")
    (a.out / "before_after.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
