"""Can the trusted parent see, from outside the candidate process, whether the tensor cores ran?

NVML's GPU performance monitoring (GPM, Hopper and later) reads device-wide counters from the driver: no library
is loaded into the process that runs the kernels, so a candidate cannot read, rewrite or detect it. This probe
asks, on one GPU:
- is GPM supported here, and what does one sample cost;
- over windows of 0.05 ms to 100 ms of one kind of work (fp16 cuBLAS GEMM: wgmma on Hopper; fp32 GEMM with TF32
  off: FFMA; an elementwise kernel; idle), what do GRAPHICS_UTIL, SM_UTIL, ANY_TENSOR, HMMA, FP32 and DRAM read;
- is "tensor-active time" (HMMA % x window) per GEMM the same for short and long windows (can it be summed over
  the evaluator's batches of a few calls);
- does the sampler see work done by another process (the evaluator's case: the candidate runs in a jail).
Then `ncu --query-metrics` lines about the tensor pipes, for the profiled side of the comparison.

    python3 bench/probe_gpm.py        (on a GPU host; prints a table)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pynvml

METRICS = {
    "graphics": pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL,
    "sm": pynvml.NVML_GPM_METRIC_SM_UTIL,
    "tensor": pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    "hmma": pynvml.NVML_GPM_METRIC_HMMA_TENSOR_UTIL,
    "fp32": pynvml.NVML_GPM_METRIC_FP32_UTIL,
    "fp16": pynvml.NVML_GPM_METRIC_FP16_UTIL,
    "int": pynvml.NVML_GPM_METRIC_INTEGER_UTIL,
    "dram": pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL,
}


def metrics(s1: object, s2: object) -> dict[str, float]:
    get = pynvml.c_nvmlGpmMetricsGet_t()
    get.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    get.numMetrics = len(METRICS)
    get.sample1, get.sample2 = s1, s2
    for i, m in enumerate(METRICS.values()):
        get.metrics[i].metricId = m
    pynvml.nvmlGpmMetricsGet(get)
    out = {}
    for i, name in enumerate(METRICS):
        m = get.metrics[i]
        out[name] = round(m.value, 3) if m.nvmlReturn == 0 else float("nan")
    return out


CHILD = r"""
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
for _ in range(3): a @ b
torch.cuda.synchronize(); print("ready", flush=True); sys.stdin.readline()
t = time.perf_counter()
for _ in range(int(sys.argv[1])): a @ b
torch.cuda.synchronize(); print("done", (time.perf_counter() - t) * 1e3, flush=True)
"""


def main() -> int:
    import torch

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    print(
        "gpu", pynvml.nvmlDeviceGetName(h), pynvml.nvmlDeviceGetUUID(h), "driver", pynvml.nvmlSystemGetDriverVersion()
    )
    try:
        support = pynvml.nvmlGpmQueryDeviceSupport(h)
        print("gpm supported", bool(support.isSupportedDevice))
    except pynvml.NVMLError as exc:
        print("gpm query failed", exc)
        return 1
    s1, s2 = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
    t = time.perf_counter()
    for _ in range(20):
        pynvml.nvmlGpmSampleGet(h, s1)
    print(f"sample cost {(time.perf_counter() - t) / 20 * 1e3:.3f} ms")

    big = [torch.randn(8192, 8192, device="cuda", dtype=torch.float16) for _ in range(2)]
    small = [torch.randn(512, 512, device="cuda", dtype=torch.float16) for _ in range(2)]
    mid = [torch.randn(2048, 2048, device="cuda", dtype=torch.float16) for _ in range(2)]
    f32 = [torch.randn(4096, 4096, device="cuda", dtype=torch.float32) for _ in range(2)]
    vec = torch.randn(64 * 1024 * 1024, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    works = {
        "gemm16-8k": lambda: big[0] @ big[1],
        "gemm16-2k": lambda: mid[0] @ mid[1],
        "gemm16-512": lambda: small[0] @ small[1],
        "gemm32-simt-4k": lambda: f32[0] @ f32[1],
        "elementwise": lambda: vec.mul_(1.0001),
        "idle": lambda: time.sleep(0.001),
    }
    rows = []
    for name, fn in works.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        for calls in (1, 4, 32, 256):
            if name == "gemm16-8k" and calls > 32:
                continue
            for rep in range(2):
                torch.cuda.synchronize()
                pynvml.nvmlGpmSampleGet(h, s1)
                t = time.perf_counter()
                for _ in range(calls):
                    fn()
                torch.cuda.synchronize()
                window = (time.perf_counter() - t) * 1e3
                pynvml.nvmlGpmSampleGet(h, s2)
                m = metrics(s1, s2)
                per_call_tensor = m["hmma"] / 100 * window / calls
                rows.append(
                    {
                        "work": name,
                        "calls": calls,
                        "rep": rep,
                        "window_ms": round(window, 4),
                        **m,
                        "hmma_ms_per_call": round(per_call_tensor, 5),
                    }
                )
    print(
        f"{'work':16} {'calls':>5} {'win ms':>9} {'gfx':>6} {'sm':>6} {'tens':>6} {'hmma':>6} {'fp32':>6} "
        f"{'dram':>6} {'hmma ms/call':>12}"
    )
    for r in rows:
        print(
            f"{r['work']:16} {r['calls']:5} {r['window_ms']:9.3f} {r['graphics']:6.1f} {r['sm']:6.1f} "
            f"{r['tensor']:6.1f} {r['hmma']:6.1f} {r['fp32']:6.1f} {r['dram']:6.1f} {r['hmma_ms_per_call']:12.5f}"
        )

    # Another process does the work; this one samples (no CUDA in the sampler's critical path).
    for calls in (4, 32):
        p = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(calls)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert p.stdout is not None and p.stdin is not None
        p.stdout.readline()
        pynvml.nvmlGpmSampleGet(h, s1)
        t = time.perf_counter()
        p.stdin.write("go\n")
        p.stdin.flush()
        done = p.stdout.readline().split()
        window = (time.perf_counter() - t) * 1e3
        pynvml.nvmlGpmSampleGet(h, s2)
        p.wait()
        m = metrics(s1, s2)
        print(
            "cross-process",
            calls,
            "calls",
            f"window {window:.2f} ms (child {float(done[1]):.2f})",
            json.dumps(m),
            f"hmma ms/call {m['hmma'] / 100 * window / calls:.4f}",
        )
    ncu = shutil.which("ncu")
    if ncu:
        out = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True).stdout
        lines = [ln for ln in out.splitlines() if "tensor" in ln.lower() or "gmma" in ln.lower()]
        print("ncu tensor metrics:")
        print("\n".join(lines[:60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
