"""What the verdict records about the machine: GPU, driver, versions, SM clock, measured bf16 peak."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from collections.abc import Mapping
from typing import Any

from evaluator.both_sides.verdict import Environment


def pinned_gpu(environ: Mapping[str, str] = os.environ) -> str | None:
    """The UUID of the one GPU this process is pinned to (a worker sets CUDA_VISIBLE_DEVICES=<uuid>), if it is."""
    devices = [d.strip() for d in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return devices[0] if len(devices) == 1 and devices[0].startswith(("GPU-", "MIG-")) else None


def only_row(stdout: str) -> str | None:
    """The row of an nvidia-smi query that named no GPU, when the host has exactly one: on a host of several,
    another worker's GPU must never stand in for this one's (its clock is not this GPU's clock)."""
    rows = [line.strip() for line in stdout.splitlines() if line.strip()]
    return rows[0] if len(rows) == 1 else None


def _smi(query: str, gpu: str | None) -> str | None:
    """One nvidia-smi query for the GPU with this UUID (default: the GPU this process is pinned to). Naming no GPU,
    the answer is taken only from a host of one GPU; a UUID nvidia-smi does not know gives no answer."""
    gpu = gpu or pinned_gpu()
    cmd = ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", *(["-i", gpu] if gpu else [])]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return only_row(proc.stdout)


@functools.lru_cache(maxsize=16)
def _driver_version(gpu_uuid: str | None) -> str | None:
    """The driver does not change under a running process: asked once per GPU."""
    return _smi("driver_version", gpu_uuid)


def nvml_handle(pynvml: Any, gpu_uuid: str | None) -> Any:
    """NVML's handle of the GPU with `gpu_uuid`, or of the only GPU; None when there are several and no UUID. NVML
    ignores CUDA_VISIBLE_DEVICES: index 0 is this process's GPU only on a host of one. NVML must be initialised."""
    if gpu_uuid:
        return pynvml.nvmlDeviceGetHandleByUUID(gpu_uuid)
    if pynvml.nvmlDeviceGetCount() == 1:
        return pynvml.nvmlDeviceGetHandleByIndex(0)
    return None


def sm_clock_mhz(gpu_uuid: str | None) -> int | None:
    """Current SM clock of the GPU, through NVML if the package is there, else nvidia-smi."""
    try:
        import pynvml

        gpu_uuid = gpu_uuid or pinned_gpu()
        pynvml.nvmlInit()
        try:
            handle = nvml_handle(pynvml, gpu_uuid)
            if handle is None:
                return None
            return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML is optional; fall back to the command line tool
        value = _smi("clocks.sm", gpu_uuid)
        try:
            return int(float(value)) if value else None
        except ValueError:
            return None


def collect(device: Any | None) -> Environment:
    """Versions always; GPU facts when `device` (a torch.device) is given."""
    env = Environment(hostname=socket.gethostname(), python_version=platform.python_version())
    try:
        import torch

        env.torch_version = torch.__version__
        env.cuda_runtime = torch.version.cuda
    except ImportError:
        torch = None
    try:
        import tvm_ffi

        env.tvm_ffi_version = getattr(tvm_ffi, "__version__", None)
    except ImportError:
        pass
    if device is not None and torch is not None:
        props = torch.cuda.get_device_properties(device)
        env.gpu_name = props.name
        uuid = getattr(props, "uuid", None)
        env.gpu_uuid = f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else uuid
        env.compute_capability = f"{props.major}.{props.minor}"
        env.l2_bytes = int(getattr(props, "L2_cache_size", 0)) or None
        env.driver_version = _driver_version(env.gpu_uuid)
    return env


_PEAK_CACHE: dict[str, float] = {}


def measure_bf16_peak(device: Any, size: int = 8192, iters: int = 10) -> float:
    """Dense bf16 TFLOP/s of torch.matmul on random size^3 operands, measured once per process.

    Random data, not zeros: zeros run faster and would overstate the peak.
    """
    import torch

    key = str(device)
    if key not in _PEAK_CACHE:
        gen = torch.Generator(device=device)
        gen.manual_seed(1234)
        a = torch.randn(size, size, device=device, dtype=torch.float32, generator=gen).to(torch.bfloat16)
        b = torch.randn(size, size, device=device, dtype=torch.float32, generator=gen).to(torch.bfloat16)
        for _ in range(3):
            torch.matmul(a, b)
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize(device)
        seconds = start.elapsed_time(end) / 1e3
        _PEAK_CACHE[key] = 2.0 * size**3 * iters / seconds / 1e12
        del a, b
        torch.cuda.empty_cache()
    return _PEAK_CACHE[key]
