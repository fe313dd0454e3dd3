"""Compile a candidate `.cu` into a TVM-FFI shared library with nvcc, and extract its cubin.

The nvcc and cuobjdump calls are thin; `parse_ptxas_resources` is a pure parser of `ptxas -v` output.
With a `Jail` (evaluator/isolation/jail.py) the compiler runs sandboxed like the candidate: no network, a clean
environment, only the build folder writable, a time limit, and its output read with a cap as it comes
(a template bomb's error flood costs neither memory nor disk). nvcc keeps the preprocessed source of each of its
passes, so that the policy can be checked again after macro expansion on the text it compiled. The compile log is
public, so nvcc writes the files it opened (`-MD -MF kernel.d`): one outside the include roots withholds the log and
rejects the kernel, and diagnostics naming files outside them are cut from the log (evaluator/build/includes.py).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.binaries.elf_names import refusal as elf_refusal
from evaluator.both_sides import hostile_files
from evaluator.both_sides.arches import get_arch
from evaluator.both_sides.verdict import CompileResult, KernelResources
from evaluator.build import compile_cache, includes
from evaluator.build.hashing import sha256_file
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.limits import describe_bytes
from evaluator.isolation.sandbox import child_env, run_group

if TYPE_CHECKING:
    from evaluator.isolation.jail import Jail

OUTPUT_CAP = 64 * 1024
DEFAULT_COMPILE_TIMEOUT_S = 120.0
BASE_FLAGS = ("-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo", "-std=c++17", "-Xptxas", "-v")
DEPENDENCY_FLAGS = ("-MD", "-MF")  # followed by the dependency file: what nvcc opened, host and device passes
# nvcc keeps each pass's preprocessed source in the build folder, and the policy after macro expansion reads those
# files: the host pass (its asm reaches the assembler) and the device pass. A second preprocessor run is not the
# text compiled: `nvcc -E` preprocesses the device pass only (`__CUDA_ARCH__` defined, so host code under
# `#ifndef __CUDA_ARCH__` is absent) and without the compile's flags (`__OPTIMIZE__`), so a source could show the
# check one text and compile another.
PASSES_DIR = "passes"
KEEP_FLAGS = ("--keep", "--keep-dir")  # followed by the build folder's PASSES_DIR (the evaluator's compile only)
PASS_FILES = ("kernel.cpp4.ii", "kernel.cpp1.ii")  # nvcc's names for kernel.cu's host and device passes
# What the trusted side reads back from the build folder (which the compiler, and so the candidate, can write) is
# capped: a library or listing beyond these is a failed compile, never a read (evaluator/both_sides/hostile_files.py).
LIBRARY_MAX_BYTES = 256 * 1024 * 1024
PREPROCESSED_MAX_BYTES = 128 * 1024 * 1024
DEPENDENCIES_MAX_BYTES = 4 * 1024 * 1024


@dataclass
class CompiledKernel:
    """A compile attempt: the record that goes into the verdict plus the files it produced."""

    result: CompileResult
    library: Path | None  # the .so to load with tvm_ffi.load_module (Triton: the .py file)
    cubin: Path | None  # the device code extracted from the library
    # The preprocessed source of every pass nvcc kept (host pass first), for the policy after macro expansion; read
    # for a failed compile too (the assembler may have run, and its errors can quote a file an `.include` read)
    preprocessed: str | None = None
    outside_files: list[str] | None = None  # files nvcc opened outside the include roots (log withheld)
    cubins: list[Path] = field(default_factory=list)  # Triton: one cubin per compiled kernel (all counted)
    cache_entry: Path | None = None  # its compile-cache entry, when the cache is on (the disassembly is kept there)
    # The folder only the trusted side writes: the verified copies above live there, and so do the SASS listing and
    # resource usage the SASS stage writes (never the build folder, which candidate code could have filled).
    trusted_dir: Path | None = None
    # The evaluator's own reason for a failed compile (a limit hit, a refused output), for the verdict's message;
    # never parsed from the compiler's output, which quotes the candidate's source.
    why: str | None = None
    # Why `preprocessed` cannot be checked: a pass file refused (a link, above the cap), or missing after a success.
    unchecked: str | None = None

    def device_images(self) -> frozenset[str] | None:
        """sha256 of each device ELF of this build (the trusted copies the static SASS counted): what a module that
        defines one of the submission's kernels must load at run time. None when there is none."""
        files = self.cubins or ([self.cubin] if self.cubin is not None else [])
        return frozenset(sha256_file(f) for f in files) or None


def find_nvcc() -> str:
    nvcc = shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)),
        None,
    )
    if nvcc is None:
        raise EnvironmentProblem("nvcc not found on PATH or in /usr/local/cuda/bin")
    return nvcc


def tvm_ffi_paths() -> tuple[list[str], str]:
    """Include directories and the libtvm_ffi.so path of the installed tvm_ffi package."""
    includes, library = _tvm_ffi_paths()
    return list(includes), library


@functools.lru_cache(maxsize=1)
def _tvm_ffi_paths() -> tuple[tuple[str, ...], str]:
    # tvm_ffi's libinfo module is read on its own: importing the package imports PyTorch (~3.5 s of CPU), which a
    # process that only compiles (the CPU worker, the static CLI) never needs.
    spec = importlib.util.find_spec("tvm_ffi")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(folders[0]) / "libinfo.py" if folders else None
    if path is None or not path.is_file():
        raise EnvironmentProblem("the tvm_ffi package (apache-tvm-ffi) is not installed")
    loader_spec = importlib.util.spec_from_file_location("_ptxbench_tvm_ffi_libinfo", path)
    assert loader_spec is not None and loader_spec.loader is not None
    libinfo = importlib.util.module_from_spec(loader_spec)
    try:
        loader_spec.loader.exec_module(libinfo)
        return tuple(libinfo.include_paths()), str(libinfo.find_libtvm_ffi())
    except (ImportError, RuntimeError) as exc:
        raise EnvironmentProblem(f"the tvm_ffi package (apache-tvm-ffi) is not usable: {exc}") from None


def nvcc_command(
    source: Path, library: Path, arch: str, nvcc: str | None = None, *, keep_dir: Path | None = None
) -> list[str]:
    """The exact nvcc argument vector for one candidate (see docs/kernel-abi.md); the evaluator's own compile also
    keeps each pass's preprocessed source in `keep_dir`, an existing folder."""
    include_dirs, libtvm = tvm_ffi_paths()
    lib_dir = str(Path(libtvm).parent)
    cmd = [nvcc or find_nvcc(), *BASE_FLAGS]
    cmd += [*KEEP_FLAGS, str(keep_dir)] if keep_dir is not None else []
    cmd += ["-gencode", get_arch(arch).gencode]
    cmd += [f"-I{p}" for p in include_dirs]
    cmd += [str(source), "-o", str(library), f"-L{lib_dir}", "-ltvm_ffi", f"-Xlinker=-rpath,{lib_dir}"]
    cmd += [*DEPENDENCY_FLAGS, str(library.with_suffix(".d"))]
    return cmd


def cache_flags(arch: str) -> list[str]:
    """The flags of `nvcc_command` that decide what it produces, for the compile cache's key."""
    return [*BASE_FLAGS, *KEEP_FLAGS, PASSES_DIR, *DEPENDENCY_FLAGS, "-gencode", get_arch(arch).gencode]


def compile_kernel(
    source: str,
    arch: str,
    workdir: Path,
    *,
    timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
    nvcc: str | None = None,
    jail: Jail | None = None,
    cache_dir: Path | None = None,
) -> CompiledKernel:
    """Compile `source` for `arch` in `workdir` (created if needed). A compiler failure is a result, not an error.
    With `cache_dir` (default: $EVALUATOR_COMPILE_CACHE) a successful compile of the same source and flags is
    reused (evaluator/build/compile_cache.py)."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    trusted = hostile_files.fresh_private_dir(hostile_files.trusted_beside(workdir))
    src = workdir / "kernel.cu"
    hostile_files.write_private(src, source)  # never through a link an earlier compile left in the folder
    library = workdir / "kernel.so"
    library.unlink(missing_ok=True)
    deps_file = library.with_suffix(".d")
    deps_file.unlink(missing_ok=True)
    passes = hostile_files.fresh_private_dir(workdir / PASSES_DIR)  # never a pass file an earlier compile left
    nvcc = nvcc or find_nvcc()
    cmd = nvcc_command(src, library, arch, nvcc, keep_dir=passes)
    cache_dir = compile_cache.usable_dir(
        cache_dir if cache_dir is not None else compile_cache.cache_dir_from_env(), jail
    )
    if cache_dir is None:
        return _nvcc(cmd, nvcc, workdir, timeout_s=timeout_s, jail=jail, cache=None)
    key = compile_cache.cache_key(source, cache_flags(arch), nvcc_version(nvcc), tvm_ffi_paths())
    # A hit is copied from the entry (written by trusted processes only) into the trusted folder.
    if (hit := compile_cache.load(cache_dir, key, trusted)) is not None:
        return _from_cache(hit, trusted)
    with compile_cache.compiling(cache_dir, key, wait_s=timeout_s):
        # Another process may have compiled the same source while this one waited for the key's lock.
        if (hit := compile_cache.load(cache_dir, key, trusted)) is not None:
            return _from_cache(hit, trusted)
        return _nvcc(cmd, nvcc, workdir, timeout_s=timeout_s, jail=jail, cache=(cache_dir, key))


def _from_cache(hit: compile_cache.CachedCompile, trusted: Path) -> CompiledKernel:
    compiled = CompiledKernel(hit.result, hit.library, hit.cubin, hit.preprocessed, cache_entry=hit.entry)
    compiled.trusted_dir = trusted
    return compiled


def _nvcc(
    cmd: list[str],
    nvcc: str,
    workdir: Path,
    *,
    timeout_s: float,
    jail: Jail | None,
    cache: tuple[Path, str] | None,
) -> CompiledKernel:
    """Run the compile in the sandbox; keep a success under `cache`."""
    library = workdir / "kernel.so"
    deps_file = library.with_suffix(".d")
    toolkit = Path(nvcc).resolve().parent.parent
    env = child_env(workdir)
    roots = includes.include_roots(nvcc, tvm_ffi_paths()[0], env)
    # The compile sandbox shows the toolchain alone: the toolkit (nvcc's parent's parent) wherever it is
    # installed, the include roots, tvm-ffi's library.
    readable = [toolkit, *roots, Path(tvm_ffi_paths()[1]).parent, *host_compiler_dirs(env)]
    start = time.monotonic()
    run = run_group(
        cmd,
        timeout_s=timeout_s,
        env=env,
        cwd=workdir,
        jail=jail,
        writable=[workdir],
        readable=readable,
        toolchain=True,
    )
    seconds = time.monotonic() - start
    output, truncated = cap_text(run.output, OUTPUT_CAP)
    truncated = truncated or run.output_bytes > len(run.output.encode("utf-8", errors="replace"))
    trusted = hostile_files.trusted_beside(workdir)
    ok = not run.timed_out and run.returncode == 0
    preprocessed, unchecked = kept_passes(workdir, compiled=ok)
    refusal = None
    if ok:
        # The library as the trusted side will use it from now on: a checked copy in its own folder (loaded by the
        # candidate process, hashed, disassembled), never the build folder's file by name.
        try:
            library = hostile_files.copy_file(
                workdir, library.name, trusted / library.name, max_bytes=LIBRARY_MAX_BYTES
            )
        except hostile_files.Refused as exc:
            ok, refusal = False, f"[evaluator] the compiled library was refused: {exc}"
    deps_text = _build_text(workdir, deps_file.name, DEPENDENCIES_MAX_BYTES)
    deps = includes.parse_dependencies(deps_text) if deps_text is not None else []
    outside = includes.outside_roots(deps, [*roots, workdir], workdir)
    if outside:
        output, truncated, ok = includes.WITHHELD, False, False
    else:
        output, _ = includes.redact_output(output, includes.quotable_roots(roots, toolkit), workdir)
    if run.timed_out:
        output += f"\n[evaluator] nvcc killed after {timeout_s:.0f} s"
    elif run.returncode is not None and run.returncode < 0:
        output += f"\n[evaluator] nvcc killed by signal {-run.returncode}"
    why = None
    if not ok and not run.timed_out and _hit_file_size_limit(run.returncode, run.output) and jail is not None:
        why = (
            f"the compiler tried to write a file larger than the compile sandbox's limit of "
            f"{describe_bytes(jail.limits.compiler_file_bytes)} (RLIMIT_FSIZE); a library may be at most "
            f"{describe_bytes(LIBRARY_MAX_BYTES)}"
        )
    if run.limit_events and run.limit_events.get("oom_kill"):
        limit = describe_bytes(jail.limits.memory_bytes) if jail is not None else "its"
        why = f"the compiler hit the sandbox's memory limit of {limit} (EVALUATOR_MEMORY_LIMIT)"
    if refusal:
        why = why or refusal.removeprefix("[evaluator] ")
        output += f"\n{refusal}"
    if why and not refusal:
        output += f"\n[evaluator] {why}"
    result = CompileResult(
        ok=ok,
        command=cmd,
        returncode=None if run.timed_out else run.returncode,
        seconds=round(seconds, 3),
        output=output,
        output_truncated=truncated,
        timed_out=run.timed_out,
        nvcc_version=nvcc_version(nvcc),
        resources=parse_ptxas_resources(output),
    )
    cubin = entry = None
    if ok:
        result.library_sha256 = hostile_files.sha256(trusted, library.name, max_bytes=LIBRARY_MAX_BYTES)
        cubin = extract_cubin(library, workdir, jail=jail)
        refused = _device_code_refusal(cubin)
        if refused:
            ok = result.ok = False
            why = refused
            result.output += f"\n[evaluator] {why}"
        else:
            result.cubin_sha256 = (
                hostile_files.sha256(cubin.parent, cubin.name, max_bytes=LIBRARY_MAX_BYTES) if cubin else None
            )
            if cache is not None and preprocessed is not None and unchecked is None:
                entry = compile_cache.store(*cache, result, library, cubin, preprocessed)
    compiled = CompiledKernel(
        result,
        library if ok else None,
        cubin if ok else None,
        preprocessed,
        outside or None,
        cache_entry=entry,
        unchecked=unchecked,
    )
    compiled.trusted_dir = trusted
    compiled.why = why if not ok else None
    return compiled


def _hit_file_size_limit(returncode: int | None, output: str) -> bool:
    """Whether a compiler process was stopped by RLIMIT_FSIZE: nvcc itself killed by SIGXFSZ, or the driver's
    report of a tool it ran (`gcc: internal compiler error: File size limit exceeded signal terminated program
    as`). The text can be forged by the source (diagnostics quote it), but only to explain a failure it has."""
    return returncode == -signal.SIGXFSZ or "File size limit exceeded" in output


def _build_text(folder: Path, name: str, cap: int) -> str | None:
    """A text file the compiler wrote in the build folder, read under the hostile-file rule; None when absent or
    refused (a link, a special file, too large)."""
    try:
        return hostile_files.read_text(folder, name, max_bytes=cap)
    except hostile_files.Refused:
        return None


def _device_code_refusal(cubin: Path | None) -> str | None:
    """Why the device code is refused before a trusted tool prints it (evaluator/binaries/elf_names.py: a form not read in
    full, or a name that is not an identifier), or None."""
    if cubin is None:
        return None
    try:
        data = hostile_files.read_bytes(cubin.parent, cubin.name, max_bytes=LIBRARY_MAX_BYTES)
    except hostile_files.Refused as exc:
        return f"the compiled device code could not be read: {exc}"
    return elf_refusal(data)


def host_compiler_dirs(env: dict[str, str]) -> list[Path]:
    """The installation folders of the host compiler nvcc calls (`gcc`/`g++` on the child's PATH), for toolchains
    outside /usr (a devtoolset under /opt, say): its binaries and cc1plus must be visible in the sandbox."""
    found = []
    for name in ("gcc", "g++"):
        path = shutil.which(name, path=env.get("PATH"))
        if path:
            found.append(Path(path).resolve().parent.parent)
    return found


def kept_passes(workdir: Path, *, compiled: bool) -> tuple[str | None, str | None]:
    """The preprocessed source of each pass nvcc kept in `workdir` (host pass first), joined, or None when there is
    none; and why it cannot be checked, if so: a pass file refused under the hostile-file rule, or one missing after
    a successful compile (`compiled`). A failed compile may lack a pass: nvcc stops at its first failing step, and
    the assembler runs only after both passes were preprocessed."""
    texts: list[str] = []
    for name in PASS_FILES:
        rel = f"{PASSES_DIR}/{name}"
        if not compiled and not os.path.lexists(workdir / rel):
            continue
        try:
            texts.append(hostile_files.read_text(workdir, rel, max_bytes=PREPROCESSED_MAX_BYTES))
        except hostile_files.Refused as exc:
            return None, f"the preprocessed source of the compile could not be read: {exc}"
    return "\n".join(texts) if texts else None, None


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """`text` cut to at most `cap` UTF-8 bytes (keeping head and tail), and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, False
    head = data[: cap // 2].decode("utf-8", errors="ignore")
    tail = data[-(cap // 2 - 64) :].decode("utf-8", errors="ignore")
    return f"{head}\n[... {len(data) - cap} bytes cut ...]\n{tail}", True


_NVCC_VERSION_CACHE: dict[str, str] = {}


def nvcc_version(nvcc: str) -> str:
    if nvcc not in _NVCC_VERSION_CACHE:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        m = re.search(r"release [\d.]+, V[\d.]+", out)
        _NVCC_VERSION_CACHE[nvcc] = m.group(0) if m else out.strip().splitlines()[-1] if out.strip() else ""
    return _NVCC_VERSION_CACHE[nvcc]


def find_cuobjdump() -> str:
    """cuobjdump from PATH, the CUDA toolkit, or the nvidia-cuda-cuobjdump wheel."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/cuobjdump"]
    try:
        import nvidia

        for base in nvidia.__path__:
            candidates += [str(p) for p in Path(base).glob("cu*/bin/cuobjdump")]
            candidates += [str(p) for p in Path(base).glob("cuda_cuobjdump/bin/cuobjdump")]
    except ImportError:
        pass
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise EnvironmentProblem("cuobjdump not found (install the CUDA toolkit or the nvidia-cuda-cuobjdump wheel)")


def extract_cubin(library: Path, workdir: Path, *, jail: Jail | None = None) -> Path | None:
    """Write the library's device ELF (cubin) into workdir/cubin/ and return its path (sandboxed with `jail`:
    cuobjdump parses a file the candidate made). nvcc's library holds two ELF files of one name, the device-link
    stub and then the kernels; cuobjdump writes them in turn, so the kernels' remains. This file is the verdict's
    `compile.cubin_sha256`; the SASS stage reads the library itself, every ELF in it."""
    out_dir = Path(workdir).resolve() / "cubin"
    shutil.rmtree(out_dir, ignore_errors=True)  # rmtree never follows links
    out_dir.mkdir()
    trusted_cubins = hostile_files.fresh_private_dir(hostile_files.trusted_beside(Path(workdir).resolve()) / "cubin")
    tool = find_cuobjdump()
    run = run_group(
        [tool, "-xelf", "all", str(Path(library).resolve())],
        timeout_s=120,
        env=child_env(out_dir),
        cwd=out_dir,
        jail=jail,
        writable=[out_dir],
        readable=[Path(workdir).resolve(), Path(library).resolve().parent, Path(tool).resolve().parent],
        toolchain=True,
        chdir=out_dir,  # cuobjdump writes the ELF files into its working folder
    )
    if run.returncode != 0:
        return None
    # cuobjdump parsed a file the candidate made: what it wrote is read back under the hostile-file rule.
    try:
        cubins = hostile_files.list_files(out_dir, suffixes=(".cubin",), caps=_CUBIN_CAPS)
        if not cubins:
            return None
        return hostile_files.copy_file(out_dir, cubins[0], trusted_cubins / cubins[0], max_bytes=LIBRARY_MAX_BYTES)
    except hostile_files.Refused:
        return None


_CUBIN_CAPS = hostile_files.TreeCaps(
    max_files=64, max_bytes=LIBRARY_MAX_BYTES, max_file_bytes=LIBRARY_MAX_BYTES, max_depth=0
)


# --------------------------------------------------------------------------- ptxas -v parsing

_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)'")
_PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(.*)$")


def parse_ptxas_resources(text: str) -> list[KernelResources]:
    """Per-kernel registers, shared memory, stack frame and spills from `nvcc -Xptxas -v` output.

    ptxas prints, per entry function: "Compiling entry function 'NAME'", then "Function properties for NAME"
    followed by the stack/spill line, then "Used N registers, used B barriers, S bytes smem, ...".
    Device (non-entry) functions also get a properties block; they are ignored.
    """
    kernels: dict[str, KernelResources] = {}
    current: str | None = None  # the entry function the next "Used" line belongs to
    props_for: str | None = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            kernels.setdefault(current, KernelResources(name=current))
            continue
        if m := _PROPS.search(line):
            props_for = m.group(1)
            continue
        if (m := _FRAME.search(line)) and props_for is not None:
            if props_for in kernels:
                k = kernels[props_for]
                k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes = map(int, m.groups())
            props_for = None
            continue
        if (m := _USED.search(line)) and current is not None:
            k = kernels[current]
            k.registers = int(m.group(1))
            rest = m.group(2)
            if s := re.search(r"(\d+) bytes smem", rest):
                k.shared_bytes = int(s.group(1))
            if b := re.search(r"used (\d+) barriers", rest):
                k.barriers = int(b.group(1))
            current = None
    return list(kernels.values())
