"""Where does the GPU see tensor work while the evaluator serves a kernel that has none? On an H100 (2026-12-05,
docs/runs/integrity/h100-2026-12-05b/) the tensor witness (evaluator/arch_check/tensor_witness.py) read 0.04-0.57%
tensor utilisation over the timing windows of SIMT-only corpus entries, enough to count as 13-174% of their task
FLOPs, so it could not tell a profiled-only wgmma path from none.

This samples NVML GPM every ~0.1 s in a thread (tensor and SM utilisation between consecutive samples) while the
evaluator runs a SIMT-only GEMM (tests/kernels/simt_gemm.cu) through correctness, timing and the profile, after an idle second,
and prints one line per sample with the last stage message before it, so the tensor activity can be placed:
baseline process, candidate start-up, trials, timed batches, teardown. It also prints the verdict's own witness.

    python3 bench/probe_gpm_timeline.py --out DIR [--kernel tests/kernels/simt_gemm.cu] [--task gemm_n4096_k4096]
        [--workloads headline]

The trusted baseline process's start and end and the witness window's two edges are marked among the events.

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.arch_check.tensor_witness import gpm_utilisation  # noqa: E402
from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.both_sides.verdict import to_json  # noqa: E402
from evaluator.pipeline import evaluate  # noqa: E402


def sampler(stop: threading.Event, rows: list[tuple[float, float, float]], t0: float) -> None:
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    previous = pynvml.nvmlGpmSampleAlloc()
    pynvml.nvmlGpmSampleGet(handle, previous)
    while not stop.wait(0.1):
        current = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(handle, current)
        try:
            tensor, sm = gpm_utilisation(pynvml, previous, current)
            rows.append((time.monotonic() - t0, -1.0 if tensor is None else tensor, -1.0 if sm is None else sm))
        except Exception as exc:  # noqa: BLE001 - a probe: record and go on
            rows.append((time.monotonic() - t0, -1.0, -1.0))
            print("GPM:", exc, file=sys.stderr)
        pynvml.nvmlGpmSampleFree(previous)
        previous = current
    pynvml.nvmlGpmSampleFree(previous)


def mark_edges(events: list[tuple[float, str]], t0: float) -> None:
    """Events for the trusted baseline process's start and end and the witness window's two edges, so the
    timeline shows which tensor work fell inside the window."""
    from evaluator.measure import candidate

    def marked(name: str, fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            events.append((time.monotonic() - t0, f"{name} begins"))
            try:
                return fn(*args, **kwargs)
            finally:
                events.append((time.monotonic() - t0, f"{name} returned"))

        return call

    candidate.measure_trusted_baseline = marked("trusted baseline", candidate.measure_trusted_baseline)

    class MarkedWindow(candidate.GpmWindow):  # type: ignore[misc,name-defined]
        def _quiet_edge(self, where: str) -> Any:
            edge = super()._quiet_edge(where)
            events.append((time.monotonic() - t0, f"window edge {where}: {'taken' if edge else self.reason}"))
            return edge

    candidate.GpmWindow = MarkedWindow  # type: ignore[misc]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernel", type=Path, default=REPO / "tests/kernels/simt_gemm.cu")
    parser.add_argument("--task", default="gemm_n4096_k4096")
    parser.add_argument("--workloads", default="headline", help="as evaluate's `workloads` (default: headline)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    events: list[tuple[float, str]] = []
    mark_edges(events, t0)
    rows: list[tuple[float, float, float]] = []
    stop = threading.Event()
    thread = threading.Thread(target=sampler, args=(stop, rows, t0), daemon=True)
    thread.start()
    time.sleep(1.0)
    events.append((time.monotonic() - t0, "idle second over; evaluate starts"))
    verdict = evaluate(
        args.kernel.read_text(),
        find_task(REPO / "tasks", args.task),
        "sm_90a",
        workloads=args.workloads,
        stages=["policy", "compile", "sass", "correctness", "timing", "arch"],
        on_stage=lambda stage, message: events.append((time.monotonic() - t0, f"[{stage}] {message}"[:90])),
    )
    events.append((time.monotonic() - t0, "evaluate returned"))
    time.sleep(0.5)
    stop.set()
    thread.join()
    doc = json.loads(to_json(verdict))
    (args.out / "verdict.json").write_text(json.dumps(doc, indent=1))
    (args.out / "timeline.json").write_text(json.dumps({"samples": rows, "events": events}))
    print(
        f"status {doc['status']}; witness: {json.dumps({k: v for k, v in doc['arch_check'].items() if 'witness' in k})}"
    )
    print(f"{'t (s)':>7} {'tensor %':>9} {'sm %':>7}  last event before the sample")
    e = 0
    for t, tensor, sm in rows:
        while e < len(events) and events[e][0] <= t:
            print(f"{events[e][0]:7.2f} {'':>9} {'':>7}  > {events[e][1]}")
            e += 1
        if tensor != 0.0 or sm > 0.5:  # idle samples are left out of the table (they are in timeline.json)
            print(f"{t:7.2f} {tensor:9.4f} {sm:7.2f}")
    for t, message in events[e:]:
        print(f"{t:7.2f} {'':>9} {'':>7}  > {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
