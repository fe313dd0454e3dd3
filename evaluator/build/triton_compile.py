"""Compile a Triton submission ahead of time for the target, in the sandbox (the parent side).

`compile_triton` writes the file, runs `python -m evaluator.candidate_process.triton_aot` (a process that runs the
submission's Python: the untrusted side) under the evaluation's jail with a fresh cache folder, and returns the
same `CompiledKernel` record nvcc gives: the compiler's output kept (capped), per-kernel shared memory, and every
cubin the cache folder holds for the static SASS count. The cache folder is what the candidate process later
loads (evaluator/candidate_process/triton_runtime.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import evaluator
from evaluator.binaries.elf_names import refusal as elf_refusal
from evaluator.both_sides import hostile_files
from evaluator.both_sides.arches import get_arch
from evaluator.both_sides.triton_settings import triton_env
from evaluator.both_sides.verdict import CompileResult, KernelResources
from evaluator.build import compile_cache, triton_cache
from evaluator.build.compile import OUTPUT_CAP, CompiledKernel, cap_text
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.limits import describe_bytes
from evaluator.isolation.sandbox import child_env, run_group

if TYPE_CHECKING:
    from evaluator.both_sides.taskdata import Task, Workload
    from evaluator.isolation.jail import Jail

SOURCE_NAME = "kernel.py"
# Where `python -m evaluator...` resolves from in the compile process (the evaluator package's parent folder).
REPO_ROOT = Path(evaluator.__file__).resolve().parent.parent
# The compile process's module, run by name (`python -m`): it runs candidate code, so the parent never imports it.
TRITON_AOT_MODULE = "evaluator.candidate_process.triton_aot"
# The build folder is written by the compile process, which runs the submission's module-level Python: what the
# trusted side takes from it (the manifest, the cache of cubins) is read under the hostile-file rule, within these
# caps, and copied into the trusted folder before anything else reads it (evaluator/both_sides/hostile_files.py).
CACHE_CAPS = hostile_files.TreeCaps(
    max_files=512, max_bytes=256 * 1024 * 1024, max_file_bytes=64 * 1024 * 1024, max_entries=1024
)
# The whole build folder, cache included, is held to the cache's byte cap once the compile is done: what the compile
# process wrote beside the cache (anything, and as much as the disk takes until the compile's time limit) is never
# read, but a build that leaves more than the cap is refused, and its size is measured within the same limits on
# entries and time. Links and special files there are measured, not followed, and not refused.
BUILD_CAPS = hostile_files.TreeCaps(
    max_bytes=CACHE_CAPS.max_bytes, max_depth=CACHE_CAPS.max_depth + 1, max_entries=CACHE_CAPS.max_entries + 64
)
MANIFEST_MAX_BYTES = 1024 * 1024


def triton_version() -> str:
    """The installed Triton's version; EnvironmentProblem when it is missing (this host cannot compile Triton)."""
    try:
        from importlib.metadata import version

        return version("triton")
    except Exception:  # noqa: BLE001 - PackageNotFoundError or a broken install: either way no Triton here
        raise EnvironmentProblem("Triton is not installed on this host (pip install '.[triton]')") from None


@functools.cache
def install_key() -> str:
    """Triton's hash of its own install (its compiler sources and the 500 MB libtriton.so: about 0.3 s), the start of
    every Triton cache key. Computed once per evaluator process and handed to each compile process, which would
    otherwise hash the install again; that process runs this same install, so the keys it writes are the ones the
    candidate process, which computes the hash itself, looks the kernels up by. "" when it cannot be computed here:
    the compile process then hashes the install itself."""
    try:
        from triton.runtime.cache import triton_key

        return str(triton_key())
    except Exception:  # noqa: BLE001 - any failure only costs the compile process the hash it would make anyway
        return ""


def workload_calls(task: Task, workloads: list[Workload]) -> list[list[dict[str, Any]]]:
    """One `run` argument list per workload: shapes and dtypes of inputs then outputs (no data)."""
    d = task.definition
    calls = []
    for w in workloads:
        call: list[dict[str, Any]] = []
        for spec in (*d.inputs, *d.outputs):
            if spec.is_scalar:
                call.append({"scalar": 1 if spec.dtype.startswith(("int", "uint")) else 1.0})
            else:
                call.append({"shape": list(d.shape_of(spec, w.axes)), "dtype": spec.dtype})
        calls.append(call)
    return calls


def compile_triton(
    source: str,
    task: Task,
    workloads: list[Workload],
    arch: str,
    workdir: Path,
    *,
    timeout_s: float,
    jail: Jail | None = None,
) -> CompiledKernel:
    """Compile what `run` launches for each workload, for `arch`. A failure of the file is a result.

    With the compile cache on ($EVALUATOR_COMPILE_CACHE) a checked, successful compile of the same file for the
    same workloads and target is reused (evaluator/build/triton_cache.py)."""
    version = triton_version()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    trusted = hostile_files.fresh_private_dir(hostile_files.trusted_beside(workdir))
    src = workdir / SOURCE_NAME
    hostile_files.write_private(src, source)
    # The file the candidate process loads is the trusted copy, written from the source itself, not read back.
    trusted_src = hostile_files.write_private(trusted / SOURCE_NAME, source)
    major, minor = get_arch(arch).compute_capability
    capability, calls = major * 10 + minor, workload_calls(task, workloads)
    cache_dir = compile_cache.usable_dir(compile_cache.cache_dir_from_env(), jail)
    if cache_dir is None:
        return _compile(source, version, capability, calls, workdir, trusted, timeout_s=timeout_s, jail=jail)
    key = triton_cache.cache_key(source, version, capability, calls)
    with compile_cache.compiling(cache_dir, key, wait_s=timeout_s):
        # A hit is unpacked from the entry (written by trusted processes only) into the trusted folder.
        if (hit := triton_cache.load(cache_dir, key, trusted / "triton-cache")) is not None:
            result, cubins = hit
            compiled = CompiledKernel(result, trusted_src, cubins[0], cubins=cubins)
            compiled.trusted_dir = trusted
            return compiled
        compiled = _compile(source, version, capability, calls, workdir, trusted, timeout_s=timeout_s, jail=jail)
        if compiled.result.ok:
            triton_cache.store(cache_dir, key, compiled.result, trusted / "triton-cache")
        return compiled


def _compile(
    source: str,
    version: str,
    capability: int,
    calls: Any,
    workdir: Path,
    trusted: Path,
    *,
    timeout_s: float,
    jail: Jail | None,
) -> CompiledKernel:
    """Run the compile process in the sandbox and take what it made under the hostile-file rule."""
    src, trusted_src = workdir / SOURCE_NAME, trusted / SOURCE_NAME
    cache = workdir / "triton-cache"
    if cache.is_symlink():
        cache.unlink()
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    manifest_path = workdir / "triton-manifest.json"
    manifest_path.unlink(missing_ok=True)
    job = {
        "source": str(src),
        "cache_dir": str(cache),
        "capability": capability,
        "calls": calls,
        "manifest": str(manifest_path),
        "triton_key": install_key(),
    }
    job_path = workdir / "triton-job.json"
    hostile_files.write_private(job_path, json.dumps(job))
    env = {**child_env(workdir, [str(REPO_ROOT)]), **triton_env(cache)}
    cmd = [sys.executable, "-m", TRITON_AOT_MODULE, str(job_path)]
    start = time.monotonic()
    run = run_group(cmd, timeout_s=timeout_s, env=env, cwd=workdir, jail=jail, writable=[workdir])
    seconds = time.monotonic() - start
    output, truncated = cap_text(run.output, OUTPUT_CAP)
    manifest = _read_manifest(workdir, manifest_path.name)
    error = manifest.get("error") if manifest else {"message": "the compile process wrote no manifest"}
    cubins: list[Path] = []
    trusted_cache = trusted / "triton-cache"
    refusal = None
    if not run.timed_out and not error:
        try:
            copied = hostile_files.copy_tree(cache, trusted_cache, caps=CACHE_CAPS)
            cubins = sorted(trusted_cache / rel for rel in copied if rel.endswith(".cubin"))
            refusal = next((r for c in cubins if (r := _device_code_refusal(c))), None)
            if refusal:
                error, cubins = {"message": refusal}, []
        except hostile_files.Refused as exc:
            refusal = f"the Triton cache folder was refused: {exc} ({cache_caps_text()})"
            error = {"message": refusal}
    if not run.timed_out and not error:
        try:
            hostile_files.measure_tree(workdir, caps=BUILD_CAPS)
        except hostile_files.Refused as exc:
            refusal = f"the Triton build folder was refused: {exc} ({build_caps_text()})"
            error, cubins = {"message": refusal}, []
    oom = bool(run.limit_events and run.limit_events.get("oom_kill"))
    if oom and jail is not None and not run.timed_out and (error or run.returncode != 0):
        limit = describe_bytes(jail.limits.memory_bytes)
        refusal = f"the Triton compile hit the sandbox's memory limit of {limit} (EVALUATOR_MEMORY_LIMIT)"
        error = {"message": refusal}
    if run.timed_out:
        output += f"\n[evaluator] the Triton compile was killed after {timeout_s:.0f} s"
    elif error:
        where = f" in {error['stage']}" if error.get("stage") else ""
        output += f"\n[evaluator] {error.get('type', 'error')}{where}: {error.get('message', '')}"
    ok = not run.timed_out and run.returncode == 0 and not error and bool(cubins)
    if ok is False and not error and not run.timed_out and not cubins:
        output += "\n[evaluator] no cubin was produced"
    result = CompileResult(
        ok=ok,
        command=cmd,
        returncode=None if run.timed_out else run.returncode,
        seconds=round(seconds, 3),
        output=output,
        output_truncated=truncated,
        timed_out=run.timed_out,
        nvcc_version=f"triton {version}",
        resources=_resources(cubins),
    )
    if ok:
        result.library_sha256 = hashlib.sha256(source.encode("utf-8")).hexdigest()
        result.cubin_sha256 = triton_cache.cubins_digest(cubins)
    compiled = CompiledKernel(
        result, trusted_src if ok else None, cubins[0] if ok else None, cubins=cubins if ok else []
    )
    compiled.trusted_dir = trusted
    compiled.why = refusal  # the evaluator's own words (never the compile process's manifest)
    return compiled


def cache_caps_text(caps: hostile_files.TreeCaps = CACHE_CAPS) -> str:
    """The Triton build's cache caps in words, for a refusal's message."""
    return (
        f"the caps on a Triton build's cache: {caps.max_files} files, {describe_bytes(caps.max_bytes)} in all, "
        f"{describe_bytes(caps.max_file_bytes)} a file, {caps.max_depth} folders deep, {caps.max_entries} files "
        f"and folders, {caps.max_seconds:g} s to list"
    )


def build_caps_text(caps: hostile_files.TreeCaps = BUILD_CAPS) -> str:
    """The Triton build folder's caps in words, for a refusal's message."""
    return (
        f"the caps on a Triton build folder, its cache included: {describe_bytes(caps.max_bytes)} in all, "
        f"{caps.max_entries} files and folders, {caps.max_depth} folders deep, {caps.max_seconds:g} s to measure"
    )


def _device_code_refusal(cubin: Path) -> str | None:
    """Why a cubin is refused before a trusted tool reads it (evaluator/binaries/elf_names.py), naming it; or None."""
    why = elf_refusal(cubin.read_bytes())  # a trusted copy: a regular file the parent wrote
    return f"{cubin.name}: {why}" if why else None


def _read_manifest(folder: Path, name: str) -> dict[str, Any] | None:
    try:
        value = json.loads(hostile_files.read_text(folder, name, max_bytes=MANIFEST_MAX_BYTES))
    except (hostile_files.Refused, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _resources(cubins: list[Path]) -> list[KernelResources]:
    """Per kernel, the shared memory Triton's metadata states (registers are known only once loaded)."""
    out = []
    for cubin in cubins:
        meta = _read_manifest(cubin.parent, cubin.with_suffix(".json").name) or {}
        shared = meta.get("shared")
        out.append(KernelResources(name=cubin.stem, shared_bytes=shared if isinstance(shared, int) else None))
    return out
