"""Standalone GPU harness for the reference kernels in tasks/*/solutions/.

Builds each solution's kernel.cu with the evaluator's own compile function (evaluator/build/compile.py: the same
nvcc command, ptxas resources and cubin) and counts its SASS with evaluator/binaries/sass.py, checks it
against an fp32 reference on every workload with fresh random inputs and NaN-poisoned outputs, times it
against the library baseline (triton.testing.do_bench, median), and optionally profiles one call under
Nsight Compute to capture the per-SASS-instruction source page (executed and predicated-on counts).

Each solution runs in its own child process with a time limit, so a hung or crashing kernel costs at most
that limit. This is a developer tool: compiling, SASS and Nsight Compute parsing come from evaluator/ (one home
for that knowledge); timing here is triton's do_bench for quick iteration, the evaluator's timer scores.

    python scripts/kernel_dev.py tasks/gemm_n7168_k5120/solutions/hopper_tma_wgmma --ncu --out $OUT
    python scripts/kernel_dev.py --build-only --arch sm_100a tasks/gemm_n7168_k5120/solutions/blackwell_tcgen05
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluator.arch_check.ncu import NcuParseError, find_ncu, parse_source_page  # noqa: E402
from evaluator.binaries.sass import count_families, disassemble, instruction_family  # noqa: E402
from evaluator.build.compile import compile_kernel  # noqa: E402

ATOL = 1e-2
RTOL = 1e-2

# Workloads per definition (the M / S axis values of each task's workloads.jsonl), headline last.
GEMM_M = [128, 1024, 4096, 8192]
MHA_S = [512, 1024, 2048, 4096, 8192, 16384]
MHA_HEADLINE_S = 4096
MHA_B, MHA_H, MHA_D = 4, 48, 128


@dataclasses.dataclass
class Solution:
    """One solution folder and what the harness needs to know about it."""

    path: Path  # tasks/<task>/solutions/<name>
    definition: str  # task name from solution.json
    name: str  # solution name (folder name, or name:variant when built with extra flags)
    defines: list[str]  # extra -D flags for exploratory variants (never part of the committed solution)

    @property
    def kind(self) -> str:
        return "gemm" if self.definition.startswith("gemm_") else "mha"

    @property
    def slug(self) -> str:
        """File-name-safe id, unique across tasks (solutions of different tasks may share a name)."""
        raw = f"{self.definition}__{self.name}"
        return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in raw)

    @property
    def causal(self) -> bool:
        return self.definition.endswith("_causal")


def load_solution(spec: str) -> Solution:
    """`path` or `path::-DNAME=1,-DOTHER` (a variant of the same source built with extra defines)."""
    path_s, _, defs = spec.partition("::")
    path = Path(path_s).resolve()
    meta = json.loads((path / "solution.json").read_text())
    defines = [d for d in defs.split(",") if d]
    name = meta["name"] + (":" + "+".join(d.removeprefix("-D") for d in defines) if defines else "")
    return Solution(path=path, definition=meta["definition"], name=name, defines=defines)


# ---------------------------------------------------------------------------------------------- build


def define_lines(defines: list[str]) -> str:
    """`-DNAME=VALUE` flags as `#define` lines: the evaluator's nvcc command takes no extra flags (as nvcc, a bare
    `-DNAME` defines NAME as 1)."""
    lines = []
    for flag in defines:
        name, _, value = flag.removeprefix("-D").partition("=")
        lines.append(f"#define {name} {value or '1'}\n")
    return "".join(lines)


@dataclasses.dataclass
class Build:
    """One solution compiled by the evaluator's compile function."""

    library: Path | None  # the shared object, None when the compile failed
    log: str  # nvcc's output
    resources: list  # evaluator.both_sides.verdict.KernelResources per kernel (ptxas -v)
    sass: dict  # target families and their opcodes (evaluator.binaries.sass.count_families), {} without a cubin


def build(sol: Solution, build_dir: Path, arch: str, reuse: bool = False) -> Build:
    """Compile one solution as the evaluator does; with `reuse`, through a compile cache in build_dir (the
    evaluator's: keyed by source, flags and toolchain, so a changed kernel is always rebuilt)."""
    source = define_lines(sol.defines) + (sol.path / "kernel.cu").read_text()
    workdir = build_dir / f"{sol.slug}.{arch}"
    cache = build_dir / "compile-cache" if reuse else None
    compiled = compile_kernel(source, arch, workdir, timeout_s=600, cache_dir=cache)
    result = compiled.result
    log = ("(cached)\n" if result.cached else "") + result.output
    (workdir / "build.log").write_text(log)
    sass = {}
    if compiled.cubin is not None:
        counts = count_families(disassemble(compiled.cubin), arch)
        sass = {"families": counts.families, "opcodes": counts.opcodes}
    return Build(compiled.library, log, result.resources, sass)


def ptxas_summary(b: Build) -> str:
    """Registers and spill figures of each kernel entry, and nvcc's warnings."""
    lines = [
        f"{k.name}: {k.registers} registers, {k.shared_bytes or 0} bytes smem, stack {k.stack_frame_bytes}, "
        f"spill stores {k.spill_store_bytes}, spill loads {k.spill_load_bytes}"
        for k in b.resources
    ]
    lines += [line.strip() for line in b.log.splitlines() if "warning" in line.lower()]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- child


def gemm_flops(m: int) -> float:
    return 2.0 * m * 7168 * 5120


def mha_flops(s: int, causal: bool) -> float:
    f = 4.0 * MHA_B * MHA_H * s * s * MHA_D
    return f / 2 if causal else f


def compare(out, ref) -> dict:
    """Element rule of the evaluator: fails only where both |out-ref| > atol and |out-ref|/|ref| > rtol."""
    import torch

    out = out.float()
    ref = ref.float()
    diff = (out - ref).abs()
    rel = diff / ref.abs().clamp_min(1e-30)
    bad = (diff > ATOL) & (rel > RTOL)
    bad |= ~torch.isfinite(out)
    finite = torch.isfinite(diff)
    return {
        "bad": int(bad.sum().item()),
        "max_abs": float(diff[finite].max().item()) if finite.any() else math.inf,
        "max_rel": float(torch.where(diff > ATOL, rel, torch.zeros_like(rel))[finite].max().item())
        if finite.any()
        else math.inf,
    }


def mha_reference(q, k, v, causal: bool):
    """fp32 attention with natural-log LSE, chunked over heads to bound memory."""
    import torch

    b, h, s, d = q.shape
    scale = 1.0 / math.sqrt(d)
    o = torch.empty(b, h, s, d, dtype=torch.float32, device=q.device)
    lse = torch.empty(b, h, s, dtype=torch.float32, device=q.device)
    chunk = max(1, min(h, (2 << 30) // (s * s * 4)))
    mask = None
    if causal:
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    for bi in range(b):
        for h0 in range(0, h, chunk):
            qs = q[bi, h0 : h0 + chunk].float()
            ks = k[bi, h0 : h0 + chunk].float()
            vs = v[bi, h0 : h0 + chunk].float()
            sc = torch.matmul(qs, ks.transpose(-1, -2)) * scale
            if mask is not None:
                sc.masked_fill_(mask, -math.inf)
            ls = torch.logsumexp(sc, dim=-1)
            p = torch.exp(sc - ls.unsqueeze(-1))
            o[bi, h0 : h0 + chunk] = torch.matmul(p, vs)
            lse[bi, h0 : h0 + chunk] = ls
            del sc, p
    return o, lse


def child_main(args: argparse.Namespace) -> None:
    """Runs in its own process: correctness on each workload, then timing (or one profiled call)."""
    import torch
    import tvm_ffi

    torch.backends.cuda.matmul.allow_tf32 = False
    mod = tvm_ffi.load_module(args.so)
    dev = torch.device("cuda")
    causal = args.definition.endswith("_causal")
    kind = "gemm" if args.definition.startswith("gemm_") else "mha"
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = []

    def make_gemm(m):
        a = torch.randn(m, 5120, dtype=torch.bfloat16, device=dev)
        b = torch.randn(7168, 5120, dtype=torch.bfloat16, device=dev)
        c = torch.full((m, 7168), float("nan"), dtype=torch.bfloat16, device=dev)
        return a, b, c

    def make_mha(s):
        q, k, v = (torch.randn(MHA_B, MHA_H, s, MHA_D, dtype=torch.bfloat16, device=dev) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((MHA_B, MHA_H, s), float("nan"), dtype=torch.float32, device=dev)
        return q, k, v, o, lse

    if args.profile_once:
        # Exactly one candidate call; ncu filters on the candidate's kernel name.
        size = sizes[-1]
        tensors = make_gemm(size) if kind == "gemm" else make_mha(size)
        mod.run(*tensors)
        torch.cuda.synchronize()
        print(json.dumps({"profiled": size}), flush=True)
        return

    from triton.testing import do_bench

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=args.rep, return_mode="median")

    for size in sizes:
        row: dict = {"size": size}
        torch.manual_seed(1000 + size)
        if kind == "gemm":
            a, b, c = make_gemm(size)
            mod.run(a, b, c)
            torch.cuda.synchronize()
            ref = torch.matmul(a.float(), b.float().t())
            row.update(compare(c, ref))
            del ref
            flops = gemm_flops(size)
            if not args.no_timing:
                bt = b.t()
                row["ms"] = bench(functools.partial(mod.run, a, b, c))
                row["base_ms"] = bench(functools.partial(torch.matmul, a, bt))
        else:
            q, k, v, o, lse = make_mha(size)
            mod.run(q, k, v, o, lse)
            torch.cuda.synchronize()
            ro, rl = mha_reference(q, k, v, causal)
            co = compare(o, ro)
            cl = compare(lse, rl)
            row.update({"bad": co["bad"] + cl["bad"], "max_abs": co["max_abs"], "max_rel": co["max_rel"]})
            row.update({"lse_max_abs": cl["max_abs"]})
            del ro, rl
            flops = mha_flops(size, causal)
            if not args.no_timing:
                import torch.nn.functional as F
                from torch.nn.attention import SDPBackend, sdpa_kernel

                row["ms"] = bench(functools.partial(mod.run, q, k, v, o, lse))
                sdpa = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal)
                backends = (("base_ms", SDPBackend.CUDNN_ATTENTION), ("flash_ms", SDPBackend.FLASH_ATTENTION))
                for label, backend in backends:
                    try:
                        with sdpa_kernel(backend):
                            row[label] = bench(sdpa)
                    except RuntimeError as exc:  # backend unavailable for this shape
                        row[label + "_error"] = str(exc)[:200]
        if "ms" in row:
            row["tflops"] = flops / row["ms"] / 1e9
            if "base_ms" in row:
                row["base_tflops"] = flops / row["base_ms"] / 1e9
                row["ratio"] = row["base_ms"] / row["ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)


# ---------------------------------------------------------------------------------------------- parent


def run_child(
    sol: Solution, so: Path, sizes: list[int], timeout: float, extra: list[str], sanitizer: str = ""
) -> tuple[list[dict], str]:
    wrap = []
    if sanitizer:
        tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
        wrap = [tool, "--tool", sanitizer, "--target-processes", "all", "--print-limit", "20"]
    cmd = [
        *wrap,
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--so",
        str(so),
        "--definition",
        sol.definition,
        "--sizes",
        ",".join(map(str, sizes)),
        *extra,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = f"TIMEOUT after {timeout}s", -9
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    log = f"rc={rc}\n{out}\n{err}"
    return rows, log


def run_ncu(sol: Solution, so: Path, kernel_regex: str, size: int, out_dir: Path, timeout: float) -> str:
    ncu = find_ncu() or "/usr/local/cuda/bin/ncu"
    csv_path = out_dir / f"ncu_source_{sol.slug}.csv"
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--section",
        "SourceCounters",
        "--page",
        "source",
        "--print-source",
        "sass",
        "--csv",
        "-k",
        f"regex:{kernel_regex}",
        "-c",
        "1",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--profile-once",
        "--so",
        str(so),
        "--definition",
        sol.definition,
        "--sizes",
        str(size),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"ncu TIMEOUT after {timeout}s"
    csv_path.write_text(proc.stdout)
    return f"rc={proc.returncode} -> {csv_path.name}; " + summarize_ncu(proc.stdout) + "\n" + proc.stderr[-2000:]


def summarize_ncu(text: str) -> str:
    """Static, executed and predicated-on counts per target opcode (families of evaluator/both_sides/arches.py), read with
    the evaluator's source-page parser."""
    try:
        kernels = parse_source_page(text)
    except NcuParseError as exc:
        return f"no source page: {exc}"
    per_opcode: dict[str, list[int]] = {}
    for kernel in kernels:
        for row in kernel.rows:
            if instruction_family(row.opcode) is None:
                continue
            agg = per_opcode.setdefault(row.opcode, [0, 0, 0])
            agg[0] += 1
            agg[1] += row.executed
            agg[2] += row.predicated_on
    return "; ".join(f"{k}: static={v[0]} exec={v[1]} pred_on={v[2]}" for k, v in sorted(per_opcode.items()))


def gpu_banner() -> str:
    """GPU name, driver and tool versions for the log (dates and GPUs go with every number we keep)."""
    smi = shutil.which("nvidia-smi")
    gpu = "no nvidia-smi"
    if smi:
        q = "--query-gpu=name,driver_version,clocks.max.sm,memory.total"
        gpu = subprocess.run([smi, q, "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return f"{time.strftime('%Y-%m-%d %H:%M:%S')} | {gpu} | python {sys.version.split()[0]}"


def fmt_row(sol: Solution, r: dict) -> str:
    status = "PASS" if r.get("bad", 1) == 0 else f"FAIL({r.get('bad')})"
    ms = r.get("ms")
    base = r.get("base_ms")
    return (
        f"{sol.name:<42} {r['size']:>6} {status:<10} {r.get('max_abs', float('nan')):>9.3g} "
        + (f"{ms:>9.3f} {r['tflops']:>7.1f}" if ms else f"{'-':>9} {'-':>7}")
        + (f" {base:>9.3f} {r['base_tflops']:>7.1f} {r['ratio']:>6.3f}" if base else "")
        + (f"  flash {r['flash_ms']:.3f}ms" if r.get("flash_ms") else "")
        + (f"  lse_abs {r['lse_max_abs']:.3g}" if "lse_max_abs" in r else "")
    )


KERNEL_REGEX = {
    "hopper_tma_wgmma": "gemm_tma_wgmma",
    "simt_dead_wgmma": "simt_gemm",
    "simt_token_wgmma": "simt_gemm",
    "hopper_wgmma_fa": "attn_fwd",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("solutions", nargs="*", help="solution folders, optionally path::-DFLAG=1,-DOTHER")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--reuse-build", action="store_true", help="reuse an identical earlier build (compile cache)")
    ap.add_argument("--build-dir", default=str(REPO / "build" / "kernel_dev"))
    ap.add_argument("--out", default=os.environ.get("OUT", str(REPO / "build" / "kernel_dev" / "out")))
    ap.add_argument("--ncu", action="store_true", help="profile one headline call per solution under ncu")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--sizes", default="", help="override the M or S values (comma separated)")
    ap.add_argument("--rep", type=int, default=200, help="do_bench rep (ms)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per solution child")
    ap.add_argument("--ncu-timeout", type=float, default=120.0)
    ap.add_argument("--sanitizer", default="", help="run each child under compute-sanitizer with this tool")
    # child-only
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--profile-once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--so", help=argparse.SUPPRESS)
    ap.add_argument("--definition", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args)
        return

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not args.build_only:
        print("# " + gpu_banner(), flush=True)
    sols = [load_solution(s) for s in args.solutions]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        builds = list(pool.map(lambda s: build(s, Path(args.build_dir), args.arch, args.reuse_build), sols))
    print(f"# built {len(sols)} in {time.time() - t0:.1f}s", flush=True)
    log_lines = []
    for sol, b in zip(sols, builds, strict=True):
        head = f"== {sol.name} ({sol.definition}) build {'ok' if b.library else 'FAILED'}"
        summary = ptxas_summary(b) if b.library else b.log[-1500:]
        print(head + "\n" + summary + "\nSASS: " + json.dumps(b.sass), flush=True)
        log_lines.append(head + "\n" + b.log + "\nSASS: " + json.dumps(b.sass))
    (out_dir / "build.log").write_text("\n".join(log_lines))
    if args.build_only:
        return

    table = []
    detail = []
    for sol, b in zip(sols, builds, strict=True):
        so = b.library
        if so is None:
            table.append(f"{sol.name:<42} BUILD FAILED")
            continue
        sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else (GEMM_M if sol.kind == "gemm" else MHA_S)
        t1 = time.time()
        extra = ["--rep", str(args.rep)] + (["--no-timing"] if args.no_timing else [])
        rows, log = run_child(sol, so, sizes, args.timeout, extra, args.sanitizer)
        if args.sanitizer:
            summary = [ln for ln in log.splitlines() if "ERROR SUMMARY" in ln or "LEAK SUMMARY" in ln]
            table.append(f"   {args.sanitizer} {sol.name}: " + ("; ".join(summary) or "no summary line"))
        detail.append(f"== {sol.name} ({time.time() - t1:.1f}s)\n{log}")
        print(f"== {sol.name} child done in {time.time() - t1:.1f}s", flush=True)
        if not rows:
            table.append(f"{sol.name:<42} NO RESULT: {log[-600:]}")
        table.extend(fmt_row(sol, r) for r in rows)
        if args.ncu and not sol.defines:  # variants are for exploration; profile committed sources only
            base_name = sol.path.name
            regex = KERNEL_REGEX.get(base_name, ".*")
            size = 8192 if sol.kind == "gemm" else MHA_HEADLINE_S
            t2 = time.time()
            res = run_ncu(sol, so, regex, size, out_dir, args.ncu_timeout)
            table.append(f"   ncu {sol.name} ({time.time() - t2:.1f}s): {res.splitlines()[0] if res else ''}")
            detail.append(f"== ncu {sol.name}\n{res}")
    (out_dir / "run.log").write_text("\n".join(detail))
    print(f"\n# {'solution':<40} {'size':>6} {'status':<10} {'max_abs':>9} {'ms':>9} {'TFLOP/s':>7}", end="")
    print(f" {'base_ms':>9} {'base_TF':>7} {'ratio':>6}")
    print("\n".join(table))
    print(f"# total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
