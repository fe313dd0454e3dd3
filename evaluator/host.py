"""What this host must offer before GPU stages run, and the device the trusted parent computes references on."""

from __future__ import annotations

from typing import Any

from evaluator import envinfo
from evaluator.both_sides.arches import get_arch
from evaluator.both_sides.verdict import Environment
from evaluator.errors import EnvironmentProblem


def check_gpu(arch: str, stages: list[str], *, device_type: str, device: int) -> None:
    """Raise EnvironmentProblem unless this host can run the GPU stages in `stages` for `arch`."""
    if device_type == "cpu":
        # Timing on CPU tensors uses the host clock: only for tests of the timing and integrity machinery.
        if "arch" in stages:
            raise EnvironmentProblem("the arch stage needs a CUDA device")
        return
    try:
        import torch
    except ImportError:
        raise EnvironmentProblem("GPU stages need PyTorch with CUDA; torch is not importable") from None
    if not torch.cuda.is_available():
        raise EnvironmentProblem(
            "GPU stages were requested but no CUDA GPU is visible; run with --stages policy,compile,sass "
            "on machines without a GPU"
        )
    cc = torch.cuda.get_device_capability(device)
    want = get_arch(arch).compute_capability
    if tuple(cc) != want:
        raise EnvironmentProblem(
            f"this GPU is compute capability {cc[0]}.{cc[1]}, but {arch} needs {want[0]}.{want[1]}"
        )
    try:
        import tvm_ffi  # noqa: F401
    except ImportError as exc:
        raise EnvironmentProblem(f"the candidate process needs tvm_ffi: {exc}") from None


def prepare_device(*, device_type: str, device: int, nvcc_version: str | None, timing: bool) -> tuple[Any, Environment]:
    """The torch device for references (true fp32, no TF32) and the environment record of this host."""
    import torch

    from evaluator.arch_check.ncu import find_ncu, ncu_version

    cuda = device_type == "cuda"
    dev = torch.device("cuda", device) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    # References in true fp32: TF32 would add error of the same size as the tolerance.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    environment = envinfo.collect(dev if cuda else None)
    if cuda:
        check_pinned_gpu(envinfo.pinned_gpu(), environment.gpu_uuid)
    ncu = find_ncu()
    environment.ncu_version = ncu_version(ncu) if ncu else None
    if nvcc_version is not None:
        environment.nvcc_version = nvcc_version
    if timing and cuda:
        environment.peak_bf16_tflops = round(envinfo.measure_bf16_peak(dev), 1)
    return dev, environment


def check_pinned_gpu(pinned: str | None, recorded: str | None) -> None:
    """A worker pins its evaluator to one GPU by UUID; the GPU the verdict records must be that one, or the timing
    ran somewhere the worker does not own (another worker's GPU on a host of several). A torch that reports no UUID
    leaves nothing to compare."""
    if pinned and pinned.startswith("GPU-") and recorded is not None and recorded != pinned:
        raise EnvironmentProblem(
            f"this evaluation is pinned to GPU {pinned} (CUDA_VISIBLE_DEVICES) but its CUDA device is {recorded}"
        )
