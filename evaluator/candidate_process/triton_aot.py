"""The ahead-of-time Triton compile: `python -m evaluator.candidate_process.triton_aot JOB.json`, sandboxed like nvcc.

Triton decides a kernel's compiled form (its specialization: pointer dtypes and alignment, integer divisibility,
constexpr values, num_warps, ...) only when `run` launches it. So this process imports the candidate file and
calls its `run` once per workload with tensors on PyTorch's `meta` device (shapes, strides and dtypes, no data)
while every `@triton.jit` launch is turned into a compile-only warm-up for the target (a GPUTarget given here;
no GPU or CUDA driver is needed). Triton writes each compiled kernel (cubin, PTX, metadata) into the job's
cache folder under the key it computes again at run time; the candidate process later gets a private copy of
that folder with compilation disabled (evaluator.candidate_process.triton_runtime), so it runs exactly these
kernels.

Candidate code runs here (module body and `run`), inside the compile sandbox: this is a process of the untrusted
side (evaluator/candidate_process/__init__.py). What goes back is the manifest file, hostile data to the parent
(evaluator/build/triton_compile.py), which counts SASS over every cubin in the cache folder, whatever wrote it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from evaluator.both_sides.triton_settings import triton_env

CANDIDATE_MODULE = "ptxbench_candidate"  # the same module name here and in the candidate process (cache keys)


def load_candidate(path: Path) -> Any:
    """Import the candidate file as module CANDIDATE_MODULE (Triton reads kernel sources from the file)."""
    spec = importlib.util.spec_from_file_location(CANDIDATE_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[CANDIDATE_MODULE] = module
    spec.loader.exec_module(module)
    return module


def _install_target(capability: int) -> list[tuple[str, str]]:
    """Point Triton at the target without a GPU and make every launch compile only; returns the (name, hash)
    list that fills as kernels compile."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.driver import CudaDriver
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    class AheadOfTimeDriver(CudaDriver):  # type: ignore[misc]  # Triton's driver classes are untyped
        def __init__(self) -> None:  # no CUDA utilities: nothing here loads or launches
            self.target = GPUTarget("cuda", capability, 32)

        def get_current_target(self) -> Any:
            return self.target

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: int | None = None) -> int:
            return 0

        def get_active_torch_device(self) -> Any:
            return torch.device("meta")

    driver.set_active(AheadOfTimeDriver())
    compiled: list[tuple[str, str]] = []
    launch = JITFunction.run

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = launch(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None:
            compiled.append((kernel.name, kernel.hash))
        return kernel

    JITFunction.run = compile_only
    return compiled


def use_install_key(key: str | None) -> None:
    """Triton's install hash as the parent computed it (evaluator/build/triton_compile.py), instead of hashing the
    install again here. Candidate code that changes it only files its own kernels where the candidate process will
    not find them."""
    if not key:
        return
    import triton.runtime.autotuner as autotuner
    import triton.runtime.cache as cache

    cache.triton_key = lambda: key
    autotuner.triton_key = lambda: key


def _build_launcher_helper() -> None:
    """Build Triton's C launcher helper (cuda_utils) into the cache before any candidate code runs, so that
    each candidate process need not run a C compiler; it links libcuda, so hosts without a driver skip it."""
    try:
        from triton.backends.nvidia.driver import CudaUtils

        CudaUtils()
    except Exception as exc:  # noqa: BLE001 - the candidate process builds it itself then
        print(f"[evaluator] launcher helper not prebuilt here ({type(exc).__name__})", file=sys.stderr)


def _meta_args(call: list[dict[str, Any]]) -> list[Any]:
    import torch

    args = []
    for spec in call:
        if "scalar" in spec:
            args.append(spec["scalar"])
        else:
            args.append(torch.empty(spec["shape"], dtype=getattr(torch, spec["dtype"]), device="meta"))
    return args


def trace(job: dict[str, Any]) -> dict[str, Any]:
    """Compile what `run` launches for each call of the job; the manifest."""
    compiled = _install_target(int(job["capability"]))
    import triton

    _build_launcher_helper()

    manifest: dict[str, Any] = {"triton_version": triton.__version__, "kernels": [], "calls": 0}
    stage = "import"
    try:
        module = load_candidate(Path(job["source"]))
        run = getattr(module, "run", None)
        if not callable(run):
            raise TypeError("the file defines no callable run")
        for index, call in enumerate(job["calls"]):
            stage = f"run (workload {index + 1}: {call_label(call)})"
            before = len(compiled)
            run(*_meta_args(call))
            if len(compiled) == before:
                raise RuntimeError("run launched no @triton.jit kernel")
            manifest["calls"] += 1
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is the compile stage's result
        manifest["error"] = {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:2000]}
        sys.stderr.write(traceback.format_exc())
    seen = set()
    for name, digest in compiled:
        if (name, digest) not in seen:
            seen.add((name, digest))
            manifest["kernels"].append({"name": name, "hash": digest})
    return manifest


def call_label(call: list[dict[str, Any]]) -> str:
    return ", ".join("x".join(map(str, s["shape"])) if "shape" in s else str(s["scalar"]) for s in call)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.candidate_process.triton_aot")
    parser.add_argument("job")
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    os.environ.update(triton_env(Path(job["cache_dir"])))
    use_install_key(job.get("triton_key"))
    manifest = trace(job)
    Path(job["manifest"]).write_text(json.dumps(manifest))
    for kernel in manifest["kernels"]:
        print(f"compiled {kernel['name']} ({kernel['hash'][:12]})")
    return 1 if "error" in manifest else 0


if __name__ == "__main__":
    sys.exit(main())
