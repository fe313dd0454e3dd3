"""What the evaluator's GPU test modules need from the machine, said in one line when it is missing."""

from __future__ import annotations


def hopper_problem() -> str | None:
    """None on a Hopper GPU (sm_90a) with torch and tvm_ffi; otherwise why these GPU tests cannot run here."""
    try:
        import torch
    except ImportError:
        return "torch is not importable"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    cc = torch.cuda.get_device_capability(0)
    if tuple(cc) != (9, 0):
        return f"needs a Hopper GPU (sm_90a); this one is compute capability {cc[0]}.{cc[1]}"
    try:
        import tvm_ffi  # noqa: F401
    except ImportError:
        return "tvm_ffi (apache-tvm-ffi) is not installed"
    return None
