"""On a Hopper GPU: every sm_90a reference kernel under tasks/*/solutions/ (CUDA and Triton) through the whole
evaluator on its task's headline workload (--workloads all: on every workload, as the portal evaluates it); each
verdict saved as JSON, judged against the solution's `expected` (status, arch status, full) and summed up in one
table. Used by scripts/gpu_pass.sh; exit 1 if any differs.

    python3 scripts/gpu_references.py --out DIR [--only NAME,...] [--prebuild N] [--workloads headline|all]

--prebuild N runs the static stages of every chosen kernel first, N at a time, which fills the compile cache
(EVALUATOR_COMPILE_CACHE) with each build and its disassembly; the GPU stages then run one kernel at a time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.both_sides.verdict import to_json  # noqa: E402
from evaluator.pipeline import evaluate  # noqa: E402
from evaluator.suite.solutions import Solution, find_solutions  # noqa: E402


def run_one(solution: Solution, stages: str | None, workloads: str = "headline") -> tuple[dict, float]:
    task = find_task(REPO / "tasks", solution.task)
    start = time.monotonic()
    kwargs = {"stages": stages.split(",")} if stages else {}
    verdict = evaluate(solution.source(), task, "sm_90a", workloads=workloads, language=solution.language, **kwargs)
    return json.loads(to_json(verdict)), time.monotonic() - start


def card_of(verdict: dict) -> str:
    """The card a verdict ran on as its file names say it ("h200", "h100"); "gpu" when the name says none."""
    found = re.search(r"\b([A-Z]\d{3})\b", (verdict.get("environment") or {}).get("gpu_name") or "")
    return found.group(1).lower() if found else "gpu"


def judge(want: dict, v: dict) -> list[str]:
    problems = []
    if v["status"] != want["status"]:
        problems.append(f"status {v['status']}, expected {want['status']}")
    if v["arch_check"]["status"] != want["arch_status"]:
        problems.append(f"arch {v['arch_check']['status']}, expected {want['arch_status']}")
    if "full" in want and v["arch_check"].get("full") != want["full"]:
        problems.append(f"full {v['arch_check'].get('full')}, expected {want['full']}")
    if (v.get("integrity") or {}).get("holds"):
        problems.append("held: " + "; ".join(h["code"] for h in v["integrity"]["holds"]))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", help="comma-separated solution names (task/solution)")
    parser.add_argument("--prebuild", type=int, default=0, help="compile all first, this many at a time")
    parser.add_argument("--workloads", choices=("headline", "all"), default="headline")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = find_solutions(REPO / "tasks", "sm_90a")
    if args.only:
        names = set(args.only.split(","))
        chosen = [s for s in chosen if s.label in names]
    if args.prebuild:  # fills EVALUATOR_COMPILE_CACHE; the GPU stages then run one at a time
        with ThreadPoolExecutor(args.prebuild) as pool:
            list(pool.map(lambda p: run_one(p, "policy,compile,sass"), chosen))
    rows, failed = [], 0
    for solution in chosen:
        name = solution.label
        v, seconds = run_one(solution, None, args.workloads)
        suffix = "" if args.workloads == "headline" else f"-{args.workloads}"
        (args.out / f"{name.replace('/', '-')}-{card_of(v)}{suffix}.json").write_text(json.dumps(v, indent=1))
        problems = judge(solution.expected, v)
        failed += bool(problems)
        perf = (v["workloads"][0].get("performance") or {}) if v["workloads"] else {}
        speedup = perf.get("speedup_factor")
        rows.append(
            f"{name:45} {v['status']:20} {v['arch_check']['status']:13} "
            f"{'-' if speedup is None else f'{speedup:.3f}':>7} {seconds:6.1f} s  "
            f"{'ok' if not problems else 'DIFFERS: ' + '; '.join(problems)}"
        )
        print(rows[-1], flush=True)
    print(f"\n== reference kernels: {len(rows) - failed}/{len(rows)} as expected ==")
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
