"""Command line: `python -m evaluator run KERNEL.cu --task NAME --arch sm_90a ...`.

Exit status 0 whenever a verdict was produced, whatever it says; 2 for bad arguments; 3 when this host
cannot do what was asked (missing tool, no GPU of the architecture), with a message saying which.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from evaluator.both_sides import verdict as verdict_mod
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import TaskDataError, find_task
from evaluator.both_sides.verdict import STAGES, Verdict
from evaluator.errors import EnvironmentProblem
from evaluator.languages import DEFAULT_LANGUAGE, LANGUAGES, language_of_file
from evaluator.pipeline import REPO_ROOT, Options, evaluate

EXIT_OK, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluator", description="PTXBench evaluator")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate one kernel source and write a verdict")
    run.add_argument("kernel", type=Path, help="the candidate .cu file (or .py file with --language triton)")
    run.add_argument(
        "--language",
        choices=tuple(LANGUAGES),
        help="the kernel language (default: triton for a .py file, else cuda); see docs/kernel-abi.md",
    )
    run.add_argument("--task", required=True, help="task name (a folder under --tasks-root)")
    run.add_argument("--arch", required=True, choices=sorted(ARCHES))
    run.add_argument(
        "--workload",
        default="all",
        help="'all' (default), 'headline', 'hidden' (the task's hidden_workloads.jsonl), 'ranked' (hidden when the "
        "task defines them, else all), a workload uuid, or comma-separated uuids",
    )
    run.add_argument(
        "--stages",
        default=",".join(STAGES),
        help=f"comma-separated subset of {','.join(STAGES)} (needed stages are added); "
        "use policy,compile,sass on machines without a GPU",
    )
    run.add_argument("--json", "--out", dest="json", type=Path, help="write the verdict JSON here")
    run.add_argument("--timeout", type=float, default=60.0, help="wall-clock limit per workload, seconds (default 60)")
    run.add_argument("--tasks-root", type=Path, default=REPO_ROOT / "tasks")
    run.add_argument("--progress", type=Path, help="append stage progress here as JSON lines")
    run.add_argument(
        "--seed",
        help="run seed as hex (for reproducing a run); default: $EVALUATOR_SEED if set (keeps a secret seed out of "
        "the process list, where a candidate could read it), else random",
    )
    run.add_argument("--trials", type=int, default=3)
    run.add_argument("--warmup", type=int, default=10)
    run.add_argument("--iters", type=int, default=50)
    run.add_argument("--workdir", type=Path, help="keep build files, logs and the ncu report here")
    run.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run candidate code without bubblewrap when it is unavailable (also EVALUATOR_ALLOW_UNSANDBOXED=1); "
        "the verdict records the mode",
    )
    run.add_argument(
        "--redact",
        action="store_true",
        help="write and print only pass/fail per workload (for showing a hidden evaluation to its submitter)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown or not stages:
        parser.error(f"unknown stage(s) {unknown} (known: {', '.join(STAGES)})")
    if args.timeout <= 0 or args.trials < 1 or args.iters < 1 or args.warmup < 0:
        parser.error("--timeout, --trials and --iters must be positive, --warmup non-negative")
    try:
        source_bytes = args.kernel.read_bytes()
    except OSError as exc:
        parser.error(f"cannot read {args.kernel}: {exc.strerror}")
    try:
        task = find_task(args.tasks_root, args.task)
    except KeyError as exc:
        parser.error(str(exc.args[0]))
    except TaskDataError as exc:
        print(f"error: broken task data: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        seed_hex = args.seed or os.environ.get("EVALUATOR_SEED", "")
        seed = bytes.fromhex(seed_hex) if seed_hex else None
    except ValueError:
        parser.error("--seed must be hexadecimal")
    # Undecodable bytes are kept as surrogates so the policy stage can reject the file with a finding.
    source = source_bytes.decode("utf-8", errors="surrogateescape")
    options = Options(
        timeout_s=args.timeout,
        trials=args.trials,
        warmup=args.warmup,
        iters=args.iters,
        seed=seed,
        workdir=args.workdir,
        keep_workdir=args.workdir is not None,
        allow_unsandboxed=True if args.allow_unsandboxed else None,
    )

    def progress(stage: str, message: str) -> None:
        if args.redact:
            message = "(redacted)"  # progress lines name workload shapes
        print(f"[{stage}] {message}", file=sys.stderr)
        if args.progress:
            with open(args.progress, "a") as fh:
                fh.write(json.dumps({"time": time.time(), "stage": stage, "message": message}) + "\n")

    try:
        verdict = evaluate(
            source,
            task,
            args.arch,
            workloads=args.workload,
            stages=stages,
            on_stage=progress,
            options=options,
            language=args.language or language_of_file(args.kernel).name,
        )
    except ValueError as exc:
        parser.error(str(exc))
    except EnvironmentProblem as exc:
        print(f"error: broken environment: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if args.redact:
        verdict = verdict_mod.redact(verdict)
    if args.json:
        args.json.write_text(verdict_mod.to_json(verdict))
    print(summary(verdict))
    return EXIT_OK


def summary(v: Verdict) -> str:
    """A few lines for people; the JSON has everything."""
    lines = [f"{v.task} {v.arch}: {v.status.value} ({v.wall_seconds:.1f} s)"]
    if v.language != DEFAULT_LANGUAGE.name:
        lines.append(f"  language: {v.language}" + (f" (Triton {v.triton_version})" if v.triton_version else ""))
    if v.sandbox is not None:
        why = f" ({v.sandbox.reason})" if v.sandbox.reason else ""
        lines.append(f"  sandbox: {v.sandbox.mode}{why}")
    if v.policy:
        for f in v.policy[:5]:
            lines.append(f"  policy: {f.message}" + (f" at line {f.line}: {f.text}" if f.line else ""))
    if v.compile is not None:
        regs = ", ".join(f"{k.registers} regs" for k in v.compile.resources[:3] if k.registers is not None)
        lines.append(f"  compile: {'ok' if v.compile.ok else 'FAILED'} in {v.compile.seconds:.1f} s {regs}".rstrip())
        if not v.compile.ok:
            lines.extend("    " + ln for ln in v.compile.output.strip().splitlines()[-8:])
    if v.sass is not None:
        fams = ", ".join(f"{f}={v.sass.families[f]}" for f in v.sass.target_families)
        lines.append(f"  sass: {fams} (static)")
    a = v.arch_check
    share = f", tensor-core share {a.tensor_core_share:.1%}" if a.tensor_core_share is not None else ""
    lines.append(f"  arch: {a.status.value}{share}{' — ' + a.reason if a.reason else ''}")
    for w in v.workloads:
        axes = " ".join(f"{k}={val}" for k, val in w.axes.items())
        line = f"  {axes or w.uuid[:8]}: {w.status.value}"
        c = w.correctness
        if c is not None and c.max_absolute_error is not None:
            line += f"  max|err| {c.max_absolute_error:.3g}  relnorm {c.relative_norm_error or 0:.2g}"
        p = w.performance
        if p is not None and p.latency_ms is not None:
            line += f"  {p.latency_ms:.4g} ms"
            if p.baseline_latency_ms is not None and p.speedup_factor is not None:
                line += f" vs {p.baseline_latency_ms:.4g} ms {p.baseline}: {p.speedup_factor:.3g}x"
            if p.tflops is not None:
                line += f"  {p.tflops:.1f} TFLOP/s"
        if w.status.value != "PASSED" and w.message:
            line += f"\n    {w.message[:300]}"
        lines.append(line)
    for note in v.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
