"""The evaluation pipeline: policy -> compile -> sass -> correctness -> arch -> timing, one verdict out.

`evaluate` reads top-down: the options, the stages asked for (plus what they need), the workloads, then each
stage as a function that takes what it needs and returns its typed result into the verdict. This module is the
trusted parent and never runs candidate code itself: evaluator.measure.candidate starts one candidate process per
workload, evaluator.arch_check.arch_stage the profiled one. Inputs are drawn on both sides from per-trial seeds derived
from a run seed that stays in this process; the reference outputs are computed and compared in this process
only (evaluator.measure.correctness).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evaluator.arch_check import tensor_witness
from evaluator.arch_check.arch_stage import run_arch_stage
from evaluator.both_sides.arches import get_arch
from evaluator.both_sides.inputs import derive_seed
from evaluator.both_sides.launches import Launch
from evaluator.both_sides.taskdata import Task, Workload
from evaluator.both_sides.verdict import (
    GPU_STAGES,
    STAGES,
    Integrity,
    KernelFootprint,
    OverallStatus,
    StageState,
    Status,
    Verdict,
    WorkloadResult,
)
from evaluator.build.build_stages import compile_stage, sass_stage, trusted_sass_path
from evaluator.checks import peaks
from evaluator.checks.integrity_record import absorb_profile, absorb_workload
from evaluator.checks.physical_limits import limits_for
from evaluator.checks.workload_checks import WorkloadRun
from evaluator.envflags import option_or_flag
from evaluator.host import check_gpu, prepare_device
from evaluator.isolation.jail import Jail, lendable, open_jail
from evaluator.isolation.limits import Limits
from evaluator.languages import DEFAULT_LANGUAGE, Language
from evaluator.languages import language as find_language
from evaluator.measure.candidate import REPO_ROOT, CandidateSetup, axes_text, fast_tmp, run_workload
from evaluator.measure.correctness import Checker
from evaluator.measure.lent_calls import batch_length, round_length
from evaluator.measure.timing_plan import TimingRequest, seeds_for
from evaluator.stage_book import StageBook, StageCallback, new_verdict

__all__ = ["REPO_ROOT", "Options", "evaluate", "resolve_stages", "select_workloads"]

# Stages that another stage needs: asking for "timing" runs correctness first, and so on.
_NEEDS = {
    "compile": {"policy"},
    "sass": {"compile"},
    # The submission's kernels (static SASS) are what the integrity check lets run in a candidate call.
    "correctness": {"compile", "sass"},
    "timing": {"correctness"},
    "arch": {"correctness", "sass"},
}


@dataclass
class Options:
    timeout_s: float = 60.0  # wall-clock limit per workload's candidate process
    compile_timeout_s: float = 120.0
    arch_timeout_s: float = 300.0  # the Nsight Compute run
    trials: int = 3
    warmup: int = 10
    iters: int = 50
    round_calls: int = 3  # timed calls per round, fewer where they do not fit (lent_calls.round_length)
    batches: int = 3  # back-to-back batches the parent's clock ranks (the fastest counts)
    batch_calls: int | None = (
        None  # calls per batch; None: from the workload's physical limit (lent_calls.batch_length)
    )
    device: int = 0
    # "cpu" runs correctness with CPU tensors and host-code candidates: only for tests of this machinery on
    # machines without a GPU. Timing and arch need "cuda".
    device_type: str = "cuda"
    seed: bytes | None = None  # the run seed; random when None (tests fix it)
    workdir: Path | None = None
    keep_workdir: bool = False
    fail_fast: bool = True  # stop after a workload ends in TIMEOUT or RUNTIME_ERROR
    # Candidate code (compiler included) runs under bubblewrap; without it the evaluation refuses unless this is
    # True (None: read EVALUATOR_ALLOW_UNSANDBOXED). See evaluator/isolation/jail.py.
    allow_unsandboxed: bool | None = None
    # Nsight Compute reads counters only with CAP_SYS_ADMIN where the driver restricts profiling to admins; the
    # sandbox drops every capability. When the sandboxed profile is refused for that, rerun it outside bubblewrap
    # (still limits, cgroup and a clean environment) only if this is True (None: EVALUATOR_ALLOW_UNSANDBOXED_PROFILE).
    allow_unsandboxed_profile: bool | None = None
    # Nsight Compute's import of the profile report (a file the profiled process could write) runs in the sandbox
    # the profile ran in, not in this process, when this is True (None: EVALUATOR_NCU_IMPORT_SANDBOX, on unless set
    # to something else; docs/threat-model.md says what the GPU host showed).
    sandbox_report_import: bool | None = None
    limits: Limits | None = None
    # Only the adversarial corpus sets this: it evaluates files that the source policy would refuse, to show that
    # the defences beneath it (the sandbox, the hostile-file rule, the integrity checks) hold on their own. The
    # command line and the portal never set it; the verdict says so in its notes.
    skip_source_policy: bool = False


def resolve_stages(requested: Iterable[str]) -> list[str]:
    """The requested stages plus everything they need, in pipeline order. Raises ValueError on unknown names."""
    wanted = set()
    todo = list(requested)
    for name in todo:
        if name not in STAGES:
            raise ValueError(f"unknown stage {name!r} (known: {', '.join(STAGES)})")
        if name not in wanted:
            wanted.add(name)
            todo.extend(_NEEDS.get(name, ()))
    return [s for s in STAGES if s in wanted]


def select_workloads(task: Task, spec: str | Iterable[str] = "all") -> list[Workload]:
    """`all`, `headline`, `hidden`, `ranked`, a uuid, or a list of uuids (a unique uuid prefix works too).

    `hidden` is the task's hidden workloads (an error when it has none); `ranked` is the hidden workloads when
    the task defines them, else all public ones: what the ranked re-evaluation with a secret seed runs.
    """
    if isinstance(spec, str):
        if spec == "all":
            return list(task.workloads)
        if spec == "hidden":
            if not task.hidden_workloads:
                raise ValueError(f"{task.name} defines no hidden workloads (hidden_workloads.jsonl)")
            return list(task.hidden_workloads)
        if spec == "ranked":
            return list(task.hidden_workloads or task.workloads)
        if spec == "headline":
            uuid = task.headline_workload or task.workloads[-1].uuid
            return [task.workload(uuid)]
        spec = [s for s in spec.split(",") if s]
    chosen = []
    every = (*task.workloads, *task.hidden_workloads)
    for s in spec:
        matches = [w for w in every if w.uuid == s] or [w for w in every if w.uuid.startswith(s)]
        if len(matches) != 1:
            known = ", ".join(w.uuid for w in task.workloads)  # hidden uuids are never listed
            raise ValueError(f"workload {s!r} is not one (unique) workload of {task.name} (known: {known})")
        chosen.append(matches[0])
    return chosen


def evaluate(
    source: str,
    task: Task,
    arch: str,
    *,
    workloads: str | Iterable[str] = "all",
    stages: Iterable[str] = STAGES,
    on_stage: StageCallback | None = None,
    options: Options | None = None,
    language: str = DEFAULT_LANGUAGE.name,
) -> Verdict:
    """Evaluate one candidate source on one task for one architecture.

    Returns a verdict for every outcome of the candidate; raises EnvironmentProblem only when this host cannot
    do what was asked (no nvcc, no GPU of the arch for GPU stages, ...) and ValueError for bad arguments.
    `on_stage(stage, message)` is called as stages start and finish, for progress displays.
    """
    opts = options or Options()
    get_arch(arch)
    lang = find_language(language)  # ValueError for an unknown language
    requested = list(stages)
    book = StageBook(new_verdict(source, task, arch, requested), resolve_stages(requested), on_stage)
    if "timing" in book.stages and (opts.batches < 1 or (opts.batch_calls is not None and opts.batch_calls < 1)):
        raise ValueError("timing needs at least one batch of at least one call: only the evaluator's clock ranks")
    book.verdict.language = lang.name
    if lang.version is not None and "compile" in book.stages:
        # EnvironmentProblem here when the toolchain is missing. The verdict's field is named for Triton, the one
        # language whose version is not nvcc's (recorded by the compile itself).
        book.verdict.triton_version = lang.version()
    chosen = select_workloads(task, workloads)
    hidden = {w.uuid for w in task.hidden_workloads}
    if any(w.uuid in hidden for w in chosen):
        book.verdict.workload_set = "hidden"
    run_seed = opts.seed if opts.seed is not None else secrets.token_bytes(16)
    start = time.monotonic()
    gpu_wanted = any(s in GPU_STAGES for s in book.stages)
    if gpu_wanted:  # before any work: a host without the right GPU is an environment problem
        check_gpu(arch, book.stages, device_type=opts.device_type, device=opts.device)
    own_workdir = opts.workdir is None
    workdir = Path(opts.workdir or tempfile.mkdtemp(prefix="ptxbench-eval-"))
    workdir.mkdir(parents=True, exist_ok=True)
    lendable(workdir)  # its folders are lent to the sandbox user (jail.hand_over), wherever the caller put it
    try:
        _run_stages(EvaluationRun(source, task, arch, lang, chosen, run_seed, opts, workdir, book, gpu_wanted))
    finally:
        if own_workdir and not opts.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    book.verdict.wall_seconds = round(time.monotonic() - start, 3)
    return book.verdict


@dataclass(frozen=True)
class EvaluationRun:
    """What every stage of one evaluation reads: the stage functions take this, not a bundle of arguments."""

    source: str
    task: Task
    arch: str
    language: Language
    chosen: list[Workload]  # the workloads evaluated
    run_seed: bytes  # every input seed derives from it
    opts: Options
    workdir: Path
    book: StageBook  # the verdict being written, and the stage records
    gpu_wanted: bool  # a GPU stage was asked for


def _run_stages(run: EvaluationRun) -> None:
    book = run.book
    v = book.verdict
    t = time.monotonic()
    book.report("policy", "checking the source")
    if run.opts.skip_source_policy:
        v.policy = []
        v.notes.append("the source policy was not applied (adversarial corpus: the defences beneath it are tested)")
    else:
        v.policy = run.language.check_policy(run.source, run.task)
    if v.policy:
        first = v.policy[0]
        where = f" (line {first.line}: {first.text})" if first.line else ""
        book.finish("policy", StageState.FAILED, t, f"{first.message}{where}")
        msg = f"rejected by policy before compiling: {first.message}{where}"
        book.stop("policy", OverallStatus.POLICY_REJECTED, "rejected by policy", run.chosen, msg)
        return
    book.finish("policy", StageState.PASSED, t)
    if "compile" not in book.stages:
        return

    jail = open_jail(
        allow_unsandboxed=run.opts.allow_unsandboxed,
        gpu=run.gpu_wanted and run.opts.device_type == "cuda",
        limits=run.opts.limits,
    )
    try:
        _sandboxed_stages(run, jail)
    finally:
        v.sandbox = jail.record()  # from what this evaluation's processes actually got


def _sandboxed_stages(run: EvaluationRun, jail: Jail) -> None:
    book, opts = run.book, run.opts
    v = book.verdict
    compiled = compile_stage(
        run.source, run.task, run.arch, run.chosen, run.workdir, book, jail, opts.compile_timeout_s
    )
    if compiled is None:
        return
    assert compiled.library is not None  # compile_stage stops the verdict before a build without one
    footprints: dict[str, list[KernelFootprint]] = {}
    if "sass" in book.stages:
        static = sass_stage(compiled, run.task, run.arch, run.workdir / "build", book, jail, run.chosen)
        if static is None:
            return
        v.sass, footprints = static

    if not run.gpu_wanted:
        v.status = OverallStatus.STATIC_ONLY
        v.notes.append("GPU stages (correctness, arch, timing) were not run: nothing is claimed about them")
        return
    exchange = Path(tempfile.mkdtemp(prefix="ptxbench-x-", dir=fast_tmp()))
    kernel_cache = run.language.kernel_cache
    try:
        setup = CandidateSetup(
            task=run.task,
            workloads=run.chosen,
            library=compiled.library,
            workdir=run.workdir,
            exchange=exchange,
            jail=jail,
            device=opts.device,
            device_type=opts.device_type,
            kernels=list(v.sass.kernels) if v.sass is not None else None,
            footprints=footprints,
            language=run.language,
            static_sass=trusted_sass_path(compiled, run.workdir / "build"),
            images=compiled.device_images(),
            kernel_cache=compiled.trusted_dir / kernel_cache if kernel_cache and compiled.trusted_dir else None,
        )
        _gpu_stages(run, setup)
    finally:
        shutil.rmtree(exchange, ignore_errors=True)


def _gpu_stages(ev: EvaluationRun, setup: CandidateSetup) -> None:
    arch, run_seed, opts, book = ev.arch, ev.run_seed, ev.opts, ev.book
    v = book.verdict
    task, chosen = setup.task, setup.workloads
    timing = "timing" in book.stages
    device, v.environment = prepare_device(
        device_type=opts.device_type,
        device=opts.device,
        nvcc_version=v.compile.nvcc_version if v.compile is not None else None,
        timing=timing,
    )
    checker = Checker.for_task(task, device)
    t = time.monotonic()
    book.report("correctness", f"{len(chosen)} workload(s), {opts.trials} trials each")
    timing_seconds = 0.0
    timed_launches: dict[str, list[list[Launch]]] = {}
    runs: dict[str, WorkloadRun] = {}
    v.integrity = Integrity(candidate_kernels=list(setup.kernels or []))
    for index, workload in enumerate(chosen):
        book.report("correctness", f"workload {index + 1}/{len(chosen)} ({axes_text(workload)})")
        limits = limits_for(task.definition, workload, v.environment.gpu_name)
        request = (
            TimingRequest(
                opts.warmup,
                opts.iters,
                # "of peak" is over the GPU's datasheet dense peak for the task's dtype (evaluator/checks/peaks.py: BF16 for
                # a bf16 task, FP8 for an fp8 one), never a matmul rate measured here
                limits.peak_tflops or peaks.peak_tflops(v.environment.gpu_name),
                v.environment.gpu_uuid,
                round_length(limits, opts.round_calls),
                gpu_name=v.environment.gpu_name,
            )
            if timing
            else None
        )
        run = run_workload(
            setup,
            checker,
            workload,
            seeds=seeds_for(
                run_seed,
                workload.uuid,
                opts.trials,
                request,
                opts.batches,
                batch_length(limits, task.flops_for(workload), opts.batch_calls),
            ),
            timing=request,
            timeout_s=opts.timeout_s,
            report=book.report,
        )
        v.workloads.append(run.result)
        runs[workload.uuid] = run
        timed_launches[workload.uuid] = run.timed_launches
        timing_seconds += run.timing_seconds
        _absorb_run(v, run)
        if opts.fail_fast and run.result.status in (Status.TIMEOUT, Status.RUNTIME_ERROR):
            rest = len(chosen) - index - 1
            if rest:
                v.notes.append(f"{rest} later workload(s) not run after {run.result.status.value} (fail fast)")
            break
    passed = bool(v.workloads) and all(w.status == Status.PASSED for w in v.workloads)
    correctness = book.record("correctness")
    correctness.state = StageState.PASSED if passed else StageState.FAILED
    correctness.seconds = round(time.monotonic() - t - timing_seconds, 3)
    book.report("correctness", "passed" if passed else "failed")
    if timing:
        rec = book.record("timing")
        rec.state = StageState.PASSED if passed else StageState.SKIPPED
        rec.seconds = round(timing_seconds, 3)
        v.environment.timing_method = next(
            (w.performance.candidate.method for w in v.workloads if w.performance and w.performance.candidate), None
        )
    v.status = overall_status(v.workloads)
    if "arch" in book.stages:
        arch_result = run_arch_stage(
            setup,
            arch=arch,
            sass=v.sass,
            evaluated=v.workloads,
            correctness_passed=passed,
            profile_seed=lambda w: derive_seed(run_seed, w.uuid, "profile"),
            timeout_s=opts.arch_timeout_s,
            allow_unsandboxed_profile=option_or_flag(
                opts.allow_unsandboxed_profile, "EVALUATOR_ALLOW_UNSANDBOXED_PROFILE"
            ),
            sandbox_report_import=report_import_sandboxed(opts),
            report=book.report,
            non_tensor_peak=peaks.non_tensor_peak_tflops(v.environment.gpu_name),
            timed=timing and opts.device_type == "cuda",
        )
        rec = book.record("arch")
        rec.state, rec.message, rec.seconds = arch_result.state, arch_result.message, arch_result.seconds
        if arch_result.outcome is not None:
            v.arch_check = arch_result.outcome.check
            absorb_profile(v, arch_result.outcome, timed_launches)
            if v.arch_check.workload in runs and timing:
                witnessed, found = _witness_of(task, runs, v.environment.gpu_name)
                tensor_witness.judge(v.arch_check, found, witnessed)
            v.status = overall_status(v.workloads)
            v.notes.extend(arch_result.outcome.notes)


def report_import_sandboxed(opts: Options) -> bool:
    """Whether Nsight Compute imports the profile report in the profile's sandbox: the option, else
    EVALUATOR_NCU_IMPORT_SANDBOX, on unless set to something else."""
    return option_or_flag(opts.sandbox_report_import, "EVALUATOR_NCU_IMPORT_SANDBOX", default=True)


def _witness_of(
    task: Task, runs: dict[str, WorkloadRun], gpu_name: str | None
) -> tuple[str, tensor_witness.Witness | str]:
    """The tensor work the GPU witnessed over the timing process of the workload whose calls do the most FLOPs
    (among those with a reading): the one it can best tell from the evaluator's own background. A submission is
    never profiled while timed, so a profiled-only tensor path shows in any timed workload."""

    def strength(uuid: str) -> tuple[bool, float]:
        return runs[uuid].gpm is not None, task.flops_for(task.workload(uuid)) or 0.0

    uuid = max(runs, key=strength)
    run = runs[uuid]
    if run.gpm is None:
        return uuid, run.gpm_reason or "no GPM reading"
    workload = task.workload(uuid)
    peak = limits_for(task.definition, workload, gpu_name).peak_tflops
    return uuid, tensor_witness.witness(run.gpm, peak or 0.0, task.flops_for(workload) or 0.0, run.window_calls)


def _absorb_run(v: Verdict, run: WorkloadRun) -> None:
    """A workload run's notes, SM clock readings and integrity observations into the verdict."""
    v.integrity = v.integrity or Integrity()
    absorb_workload(v.integrity, run)
    for note in run.notes:
        if note not in v.notes:
            v.notes.append(note)
    if run.sm_clock_mhz is not None and v.environment is not None:
        before, after = run.sm_clock_mhz
        if v.environment.sm_clock_mhz_before is None:
            v.environment.sm_clock_mhz_before = before
        v.environment.sm_clock_mhz_after = after


def overall_status(workloads: list[WorkloadResult]) -> OverallStatus:
    """The verdict's status after the GPU stages: the first workload that did not pass, else PASSED."""
    for w in workloads:
        if w.status != Status.PASSED:
            return OverallStatus(w.status.value)
    return OverallStatus.PASSED
