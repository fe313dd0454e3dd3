"""The arch stage: one profiled call under Nsight Compute, with its fallbacks and retries, to an `ArchCheck`.

The profiled candidate process runs `evaluator.candidate_process.child` in profile mode inside the evaluation's
jail and writes its events to a result file in the one folder it may write (hostile data, read as such). Two
retries, each noted in the verdict:
- ERR_NVGPUCTRPERM inside bubblewrap (the driver restricts counters to CAP_SYS_ADMIN, which the sandbox drops):
  rerun outside bubblewrap, limits, cgroup and clean environment kept, only when explicitly allowed;
- "No kernels were profiled" (the NVTX range filter matched nothing on this host): rerun filtering on the kernel
  names found in the SASS.
Parsing the report and deciding the status are pure functions in evaluator/arch_check/ncu.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.arch_check import ncu as ncu_mod
from evaluator.binaries.binary_tools import ToolFailed
from evaluator.binaries.sass import parse_sass
from evaluator.both_sides import hostile_files, protocol, task_families
from evaluator.both_sides.launches import Launch
from evaluator.both_sides.taskdata import Task, Workload
from evaluator.both_sides.verdict import ArchCheck, ArchStatus, SassCounts, StageState, WorkloadResult
from evaluator.checks.integrity import foreign_kernels, matches_submission, same_code
from evaluator.isolation.jail import Jail
from evaluator.isolation.sandbox import GroupResult, run_group
from evaluator.measure.candidate import CandidateSetup, axes_text, candidate_env, child_command, write_job

REPORT_MAX_BYTES = 1024 * 1024 * 1024  # an Nsight Compute report of one profiled call is tens of MB
# How a kernel with no target instruction says it was profiled only to cross-check the timing (its reason's end).
CROSS_CHECK_ONLY = "profiled only to cross-check the timed figures"


@dataclass
class ArchOutcome:
    check: ArchCheck
    notes: list[str] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)  # of the profiled call
    foreign_kernels: list[str] = field(default_factory=list)  # profiled kernels not compiled from the submission
    impostors: list[str] = field(default_factory=list)  # profiled kernels named as the submission's, other code
    # Why the profiled call gave nothing to read, if it did not; `failure_by_candidate` when the candidate's side
    # of the sandbox could have caused it (its call failed or ran no kernel of its own, the report was refused,
    # the run timed out), as opposed to the host (no ncu, no counter permission).
    failure: str | None = None
    failure_by_candidate: bool = False
    cross_check_only: bool = False  # no target instruction in the SASS: profiled only to cross-check the timing


@dataclass
class ArchStageResult:
    state: StageState
    message: str
    seconds: float = 0.0
    outcome: ArchOutcome | None = None  # None: the check decided from the static SASS stands


def run_arch_stage(
    setup: CandidateSetup,
    *,
    arch: str,
    sass: SassCounts | None,
    evaluated: list[WorkloadResult],
    correctness_passed: bool,
    profile_seed: Callable[[Workload], int],
    timeout_s: float,
    allow_unsandboxed_profile: bool,
    report: Callable[[str, str], None],
    sandbox_report_import: bool = False,
    non_tensor_peak: float | None = None,
    timed: bool = False,
) -> ArchStageResult:
    """The arch stage after correctness (and timing): skipped, answered by the static SASS, or profiled.

    `non_tensor_peak`: the GPU's fastest rate without tensor cores (evaluator.checks.peaks), for `tensor_evidence`.
    `timed`: the workloads were timed on a GPU. Then a kernel with no target instruction is profiled too: the
    status stays `absent`, but the profiled call's time and kernels cross-check the timed figures (the
    kernel records of the timed calls come from the candidate's own process, and can be switched off there)."""
    absent = sass is None or sass.target_count == 0
    if sass is None or (absent and not timed):
        return ArchStageResult(StageState.PASSED, "absent: decided from static SASS")
    if not correctness_passed:
        check = ArchCheck(ArchStatus.NOT_REQUESTED, reason="correctness did not pass; not profiled")
        return ArchStageResult(StageState.SKIPPED, "correctness did not pass", outcome=ArchOutcome(check))
    t = time.monotonic()
    workload = arch_workload(setup.task, setup.workloads, evaluated)
    report("arch", f"Nsight Compute on {axes_text(workload)}")
    outcome = profile_workload(
        setup,
        workload,
        arch=arch,
        sass=sass,
        profile_seed=profile_seed(workload),
        timeout_s=timeout_s,
        allow_unsandboxed_profile=allow_unsandboxed_profile,
        sandbox_report_import=sandbox_report_import,
    )
    outcome.cross_check_only = absent
    check = outcome.check
    check.workload = workload.uuid
    if absent:
        check.reason += f"; {CROSS_CHECK_ONLY}"
    result = next(w for w in evaluated if w.uuid == workload.uuid)
    perf = result.performance
    median = perf.candidate.median_ms if perf and perf.candidate else None
    ncu_mod.compare_timers(check, median, ranked_latency_ms=perf.latency_ms if perf else None)
    ncu_mod.tensor_evidence(check, perf.tflops if perf else None, non_tensor_peak)
    outcome.notes.extend(ncu_mod.disclose(check))
    check.seconds = round(time.monotonic() - t, 3)
    state = StageState.PASSED if check.status in (ArchStatus.VERIFIED, ArchStatus.ABSENT) else StageState.FAILED
    message = f"{check.status.value}: {check.reason}"
    report("arch", message)
    return ArchStageResult(state, message, check.seconds, outcome)


def share_operands(task: Task) -> str | None:
    """The operand type whose tensor-core work alone counts toward the task's share (its family's), or None."""
    family = task_families.family_of(task.definition.op_type)
    return family.tensor_operands if family else None


def arch_workload(task: Task, workloads: list[Workload], evaluated: list[WorkloadResult]) -> Workload:
    """The headline workload if it was evaluated, else the evaluated one with the most FLOPs."""
    done = {w.uuid for w in evaluated}
    if task.headline_workload in done:
        return task.workload(task.headline_workload)
    return max((w for w in workloads if w.uuid in done), key=task.flops_for)


def profile_workload(
    setup: CandidateSetup,
    workload: Workload,
    *,
    arch: str,
    sass: SassCounts,
    profile_seed: int,
    timeout_s: float,
    allow_unsandboxed_profile: bool,
    sandbox_report_import: bool = False,
) -> ArchOutcome:
    """Profile one call of the candidate on `workload` and decide the architecture check; with
    `sandbox_report_import`, Nsight Compute reads the report inside the profile's sandbox."""
    flops = setup.task.flops_for(workload)
    outcome = ArchOutcome(ArchCheck(ArchStatus.NOT_REQUESTED))
    ncu = ncu_mod.find_ncu()

    def error(reason: str, cmd: list[str] | None = None, *, by_candidate: bool = True) -> ArchOutcome:
        outcome.check = ncu_mod.decide_arch(arch=arch, sass=sass, kernels=None, task_flops=flops, error=reason)
        outcome.failure, outcome.failure_by_candidate = reason, by_candidate
        if cmd is not None:
            outcome.check.command = cmd
        return outcome

    if ncu is None:
        return error("Nsight Compute (ncu) is not installed on this host", by_candidate=False)
    workdir = setup.workdir
    profile_dir = workdir / "profile"  # the one folder the profiled process may write (report, events)
    profile_dir.mkdir(exist_ok=True)
    report = profile_dir / "arch-profile.ncu-rep"
    result_path = profile_dir / "arch-profile-result.jsonl"
    result_path.unlink(missing_ok=True)
    job = write_job(
        setup,
        workload,
        scratch=profile_dir,
        mode="profile",
        profile_seed=profile_seed,
        result_path=str(result_path),
        output_path=str(profile_dir / "profiled-process-output.log"),
    )
    target = child_command(job)
    env = candidate_env(workdir)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    ncu_root = Path(ncu).resolve().parent

    def profile(jail: Jail | None, log: str, kernel_names: list[str] | None = None) -> tuple[list[str], GroupResult]:
        result_path.unlink(missing_ok=True)
        cmd = ncu_mod.ncu_profile_command(ncu, report, target, kernel_names=kernel_names, arch=arch)
        run = run_group(
            cmd,
            timeout_s=timeout_s,
            env=env,
            cwd=workdir,
            jail=jail,
            writable=[profile_dir],
            readable=[workdir, ncu_root],
            gpu=True,
        )
        (logs / log).write_text(run.output)
        return cmd, run

    jail = setup.jail
    cmd, run = profile(jail, "ncu.log")
    if (
        jail is not None
        and jail.mode == "bubblewrap"
        and not run.timed_out
        and "ERR_NVGPUCTRPERM" in run.output
        and allow_unsandboxed_profile
    ):
        jail = Jail("unsandboxed", "profiling counters need CAP_SYS_ADMIN", jail.limits, ledger=jail.ledger)
        outcome.notes.append(
            "arch: Nsight Compute was refused counter access inside the sandbox (ERR_NVGPUCTRPERM); the profiled "
            "run was repeated outside bubblewrap (limits, cgroup and clean environment kept), as allowed"
        )
        jail.ledger.overrides["profile"] = "outside bubblewrap: counters need CAP_SYS_ADMIN"
        cmd, run = profile(jail, "ncu-unsandboxed.log")
    if not run.timed_out and "No kernels were profiled" in run.output and sass.kernels:
        outcome.notes.append("ncu: NVTX range filter profiled nothing; used a kernel-name filter instead")
        cmd, run = profile(jail, "ncu-fallback.log", sass.kernels)
    if run.timed_out:
        return error(f"the Nsight Compute run exceeded {timeout_s:g} s and was killed", cmd)
    reason = _failure_reason(run, result_path, report)
    if reason is not None:
        # The run's output carries the candidate's own prints, so it cannot say the host is at fault: only the
        # driver's setting, which no candidate reaches, can.
        host_refused = "ERR_NVGPUCTRPERM" in run.output and counters_restricted()
        return error(reason, cmd, by_candidate=not host_refused)
    # The report lies in a folder the profiled candidate could write: Nsight Compute reads a checked copy in a
    # folder of the trusted side's own (evaluator/both_sides/hostile_files.py).
    try:
        own_copy = hostile_files.fresh_private_dir(workdir / "profile-trusted") / report.name
        hostile_files.copy_file(profile_dir, report.name, own_copy, max_bytes=REPORT_MAX_BYTES)
    except hostile_files.Refused as exc:
        return error(f"the Nsight Compute report was refused: {exc}", cmd)
    # The kernel time, launch sizes and counters come from the profiler's own output when it printed them there;
    # only the source page (the SASS and its executed counts) is read from the report file.
    printed = ncu_mod.printed_raw_page(run.output)
    try:
        source_csv, report_raw = ncu_mod.read_report(
            ncu, own_copy, arch=arch, raw=printed is None, jail=jail if sandbox_report_import else None
        )
    except ToolFailed as exc:
        return error(f"the Nsight Compute report could not be read: {exc}", cmd)
    raw_csv = printed if printed is not None else report_raw
    if printed is None:
        outcome.notes.append(
            "ncu: the profiler printed no raw page on its output, so the kernel time, launch sizes and counters "
            "were read from the report file, which the profiled process could write"
        )
    elif not profiler_output_private(jail):
        outcome.notes.append(
            "ncu: the profiled process ran as this evaluator's own user, so it could reopen the profiler's output "
            "through /proc: the kernel time, launch sizes and counters printed there are no surer than the report file"
        )
    (logs / "ncu-source.csv").write_text(source_csv)
    try:
        kernels = ncu_mod.parse_source_page(source_csv)
    except ncu_mod.NcuParseError as exc:
        return error(f"unreadable source page: {exc}", cmd)
    with contextlib.suppress(ncu_mod.NcuParseError):  # an unreadable raw page is noted where it is read below
        kernels = ncu_mod.one_block_per_launch(kernels, ncu_mod.parse_launches(raw_csv))
    mismatch = ncu_mod.report_not_of_run(kernels, printed) if printed is not None else None
    if mismatch is not None:
        return error(f"the Nsight Compute report was refused: {mismatch}", cmd)
    # Only the submission's kernels count: another library's kernel in the profiled call is reported, never summed.
    outcome.foreign_kernels = foreign_kernels([k.name for k in kernels], sass.kernels)
    own = [k for k in kernels if k.name not in outcome.foreign_kernels]
    outcome.impostors = impostor_kernels(own, setup.static_sass or workdir / "build-trusted" / "kernel.sass")
    if not own:
        return error("no kernel of the submission ran in the profiled call", cmd)
    check = ncu_mod.decide_arch(
        arch=arch, sass=sass, kernels=own, task_flops=flops, raw_page=raw_csv, operands=share_operands(setup.task)
    )
    (logs / "ncu-raw.csv").write_text(raw_csv)
    try:
        outcome.launches = ncu_mod.parse_launches(raw_csv)
    except ncu_mod.NcuParseError as exc:
        outcome.notes.append(f"ncu launch sizes unreadable (profiled-vs-timed check not made): {exc}")
    try:
        times = ncu_mod.parse_raw_metrics(raw_csv)
        check.ncu_gpu_time_ms = sum(t for _, t in times) if times else None
    except ncu_mod.NcuParseError as exc:
        outcome.notes.append(f"ncu gpu__time_duration unreadable: {exc}")
    check.command = cmd
    outcome.check = check
    return outcome


DRIVER_PARAMS = Path("/proc/driver/nvidia/params")


def counters_restricted(params: Path = DRIVER_PARAMS) -> bool:
    """Whether the driver gives GPU performance counters only to administrators (`RmProfilingAdminOnly: 1`), which
    the sandbox never is: then a refused profile is the host's doing, not the candidate's."""
    try:
        text = params.read_text()
    except OSError:
        return False
    return any(line.replace(" ", "") == "RmProfilingAdminOnly:1" for line in text.splitlines())


def impostor_kernels(profiled: list[ncu_mod.SourceKernel], static_sass: Path) -> list[str]:
    """Profiled kernels whose instructions are not those of the submission's function of that name."""
    if not static_sass.is_file():
        return []
    by_kernel: dict[str, list[str]] = {}
    for ins in parse_sass(static_sass.read_text()):
        by_kernel.setdefault(ins.kernel, []).append(ins.opcode)
    out = []
    for kernel in profiled:
        name = next((k for k in by_kernel if matches_submission(kernel.name, [k])), None)
        if name is not None and not same_code([r.opcode for r in kernel.rows], by_kernel[name]):
            out.append(kernel.name)
    return out


def _failure_reason(run: GroupResult, result_path: Path, report: Path) -> str | None:
    """Why the profiled run gave nothing to read, or None."""
    reason = ncu_mod.ncu_error_reason(run.output)
    failed, done = protocol.profile_outcome(protocol.read_result_file(result_path))
    if failed is not None:
        reason = f"the profiled call failed: {protocol.describe_error(failed)}"
    elif not done and reason is None:
        reason = f"the profiled process did not finish (ncu exit status {run.returncode})"
    if reason is None and not (report.exists() and report_announced(run.output, report)):
        reason = f"ncu wrote no report of its own (exit status {run.returncode})"
    return reason


def profiler_output_private(jail: Jail | None) -> bool:
    """Whether the profiled process cannot write to the profiler's output. That output is a pipe the parent made,
    owned by the parent's user with mode 0600: a sandbox that runs as another user (a root evaluator's sandbox
    user) cannot reopen it through /proc/<profiler pid>/fd; one that keeps the evaluator's own uid can."""
    return jail is not None and jail.user is not None


def report_announced(output: str, report: Path) -> bool:
    """Whether Nsight Compute itself said it wrote `report` ("==PROF== Report: PATH", its last line). Its output
    is its own: the profiled process moved its stdout and stderr off that channel before loading the candidate
    (child.leave_profiler_channel), and cannot reopen it while its sandbox runs as another user
    (profiler_output_private). A report file in the profile folder without that line was put there by someone
    else, as when the profiler was killed before it wrote one."""
    prefix = "==PROF== Report:"
    return any(
        line.startswith(prefix) and Path(line.removeprefix(prefix).strip()).name == report.name
        for line in output.splitlines()
    )
