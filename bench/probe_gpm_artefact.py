"""What makes GPM count tensor work where no tensor instruction runs? On an H100 (2026-12-05,
docs/runs/integrity/h200-2026-12-05c/) the corpus's profiled-only wgmma kernel (tests/adversarial/harness_profile_branch.cu),
whose timed process printed that it saw no profiler and so ran its SIMT GEMM alone, read 1.19%
`ANY_TENSOR_UTIL` over its timing process at M=8192, and 1.15% with its wgmma kernel never launched; the same SIMT
GEMM alone (tests/kernels/simt_gemm.cu) read 0.0093%. That is a witnessed share of 0.93 for a kernel with none.

This evaluates variants that take the harness apart one piece at a time (the wgmma launch, the sink allocation, the
/proc/self/maps read, the wgmma kernel in the module), with the SIMT GEMM alone, the SIMT GEMM with an unlaunched
wgmma kernel added, the SIMT negative control with a dead wgmma in its own kernel and the expert wgmma GEMM around
them, each on the headline GEMM's M=8192 workload with correctness and timing only. Over each timing process's
window (the witness's own, `GpmWindow`) it reads every per-pipe GPM metric, not only ANY_TENSOR: whether HMMA's
utilisation (the pipe bf16 wgmma runs on) shows the artefact too decides whether the witness can read that one.

On a third H100 (docs/runs/integrity/h100-2026-12-05e/) every harness variant read about 1.24%, and HMMA read the
same as ANY_TENSOR in every row. What was left was the SIMT GEMM's own code: its bounds-checked loads have four
HFMA2.MMA register zeroings (MMA pipe) in its main loop. "harness, loads unguarded" is the direct test: the same
process with that loop's HFMA2.MMA gone (one remains, in the prologue). `--only unguarded` runs it alone. On a
fourth H100 (docs/runs/integrity/h100-2026-12-06/) it read 0.0095% against the harness's 1.2172%: those moves are
the cause.

    python3 bench/probe_gpm_artefact.py --out DIR

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); about 4 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from probe_witness_background import record_runs  # noqa: E402

from evaluator import pipeline  # noqa: E402
from evaluator.arch_check import tensor_witness  # noqa: E402
from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.checks.physical_limits import limits_for  # noqa: E402

TASK = "gemm_n7168_k5120"
HARNESS = REPO / "tests/adversarial/harness_profile_branch.cu"
SIMT = REPO / "tests/kernels/simt_gemm.cu"
SOLUTIONS = REPO / "tasks" / TASK / "solutions"
METRICS = (
    "ANY_TENSOR_UTIL",
    "HMMA_TENSOR_UTIL",
    "IMMA_TENSOR_UTIL",
    "DFMA_TENSOR_UTIL",
    "SM_UTIL",
    "SM_OCCUPANCY",
    "INTEGER_UTIL",
    "FP32_UTIL",
    "FP16_UTIL",
    "FP64_UTIL",
)
LAUNCH = "  wgmma_kernel<<<132, 128, 0, stream>>>(sink, repeats);\n"
MALLOC = "    cudaMalloc(&sink, 132 * 128 * 32 * sizeof(float));\n"
SIGN = "    const char* sign = profiler_sign();\n"
# The SIMT GEMM's bounds-checked loads: ptxas zeroes their registers with HFMA2.MMA (on the MMA pipe) inside the
# main loop; unguarded, the loop has none (docs/runs/integrity/h100-2026-12-05e/hfma2-mma-sass.txt).
GUARDED = (
    (
        "      as[r][tx] = (row0 + r < m && ak < k) ? __bfloat162float(a[(size_t)(row0 + r) * k + ak]) : 0.f;\n",
        "      as[r][tx] = __bfloat162float(a[(size_t)(row0 + r) * k + ak]);\n",
    ),
    (
        "      bs[r][tx] = (col0 + r < n && ak < k) ? __bfloat162float(b[(size_t)(col0 + r) * k + ak]) : 0.f;\n",
        "      bs[r][tx] = __bfloat162float(b[(size_t)(col0 + r) * k + ak]);\n",
    ),
)
WGMMA_START = "__device__ __forceinline__ uint64_t desc_noswizzle"
WGMMA_END = "extern char** environ;"


def cut(text: str, *pieces: str) -> str:
    for piece in pieces:
        if piece not in text:
            raise SystemExit(f"the harness no longer holds {piece.strip()!r}: update this probe")
        text = text.replace(piece, "")
    return text


def unguarded(text: str) -> str:
    for guarded, plain in GUARDED:
        if guarded not in text:
            raise SystemExit("the harness's SIMT GEMM no longer has its guarded loads: update this probe")
        text = text.replace(guarded, plain)
    return text


def variants() -> dict[str, Callable[[], str]]:
    harness = HARNESS.read_text()
    no_launch = cut(harness, LAUNCH)
    start, end = harness.index(WGMMA_START), harness.index(WGMMA_END)
    wgmma_kernel = harness[start:end]
    simt = SIMT.read_text()
    return {
        "simt alone": lambda: simt,
        # outside the anonymous namespace, so that the compiler keeps the kernel nobody launches
        "simt + unlaunched wgmma kernel": lambda: (
            "#include <cstdint>\n" + simt.replace("}  // namespace\n", "}  // namespace\n" + wgmma_kernel, 1)
        ),
        "harness": lambda: harness,
        "harness, no wgmma launch": lambda: no_launch,
        "  ... and no sink allocation": lambda: cut(no_launch, MALLOC),
        "  ... and no maps read": lambda: cut(no_launch, MALLOC).replace(SIGN, '    const char* sign = "skipped";\n'),
        "harness without its wgmma kernel": lambda: harness[:start] + harness[end:].replace(LAUNCH, "", 1),
        # The direct test of the HFMA2.MMA moves: the same process with none in its SIMT loop (M=8192 is a
        # multiple of the tile, so the unguarded loads stay in bounds)
        "harness, loads unguarded": lambda: unguarded(harness),
        "simt_dead_wgmma (reference)": lambda: (SOLUTIONS / "simt_dead_wgmma" / "kernel.cu").read_text(),
        "hopper_tma_wgmma (reference)": lambda: (SOLUTIONS / "hopper_tma_wgmma" / "kernel.cu").read_text(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated parts of variant names (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = find_task(REPO / "tasks", TASK)
    workload = next(w for w in task.workloads if w.axes.get("M") == 8192)
    flops = task.flops_for(workload) or 0.0

    windows: list[dict[str, float | None]] = []
    plain = tensor_witness.gpm_utilisation

    def every_metric(nvml: Any, first: Any, second: Any) -> tuple[float | None, float | None]:
        """The witness's two figures, with every per-pipe metric of the same pair of samples kept beside them (the
        last pair of a window is the window itself: GpmWindow.stop reads it after its quiet edge)."""
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(METRICS)
        request.sample1, request.sample2 = first, second
        for i, name in enumerate(METRICS):
            request.metrics[i].metricId = getattr(nvml, f"NVML_GPM_METRIC_{name}")
        nvml.nvmlGpmMetricsGet(request)
        values = {
            name: float(m.value) if m.nvmlReturn == nvml.NVML_SUCCESS else None
            for name, m in zip(METRICS, request.metrics[: len(METRICS)], strict=True)
        }
        windows.append(values)
        return plain(nvml, first, second)

    tensor_witness.gpm_utilisation = every_metric
    runs = record_runs()
    chosen = {n.strip() for n in args.only.split(",") if n.strip()}
    rows = []
    short = ("ANY", "HMMA", "IMMA", "DFMA", "SM", "OCC", "INT", "FP32", "FP16")
    print(f"{'variant':34} {'ms':>7} {'win s':>6} {'calls':>5} " + " ".join(f"{s:>8}" for s in short) + "  share")
    for name, source in variants().items():
        if chosen and not any(c in name for c in chosen):
            continue
        runs.clear()
        windows.clear()
        v = pipeline.evaluate(source(), task, "sm_90a", workloads=workload.uuid, stages=["correctness", "timing"])
        run = runs[-1] if runs else None
        perf = v.workloads[0].performance if v.workloads else None
        row: dict[str, Any] = {
            "variant": name,
            "status": v.status.value,
            "latency_ms": perf.latency_ms if perf else None,
        }
        row["stdout"] = [ln for w in v.workloads for ln in (w.stdout_tail or "").splitlines()][-3:]
        if run is not None and run.gpm is not None and windows:
            metrics = windows[-1]
            peak = limits_for(task.definition, workload, v.environment.gpu_name).peak_tflops or 0.0
            row.update(seconds=run.gpm.seconds, calls=run.window_calls, metrics=metrics)
            any_pct = metrics.get("ANY_TENSOR_UTIL") or 0.0
            share = any_pct / 100 * peak * 1e12 * run.gpm.seconds / (flops * run.window_calls)
            row["witnessed_share"] = share
            cells = " ".join(
                f"{metrics.get(m) if metrics.get(m) is not None else float('nan'):8.4f}" for m in METRICS[:9]
            )
            print(
                f"{name:34} {row['latency_ms'] or 0:7.2f} {run.gpm.seconds:6.2f} {run.window_calls:5d} {cells}  {share:.3f}"
            )
        else:
            reason = run.gpm_reason if run is not None else "no run"
            print(f"{name:34} {v.status.value}: no reading ({reason})")
        rows.append(row)
        (args.out / "gpm-artefact.json").write_text(json.dumps({"gpu": v.environment.gpu_name, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
