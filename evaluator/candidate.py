"""The parent side of one candidate process: start it for one workload, feed it commands, read and check its answers.

Every workload gets a fresh candidate process (evaluator.child) in its own process group (evaluator.sandbox),
inside the evaluation's jail, killed whole at the wall-clock limit. It sees a copy of the task folder without
the hidden workloads that are not evaluated here, and writes outputs only to the exchange folder. Messages
follow evaluator.protocol; outputs are compared here (evaluator.correctness), timings summarised by
evaluator.performance.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import evaluator
from evaluator import envinfo, protocol
from evaluator.compare import Comparison, worst
from evaluator.correctness import Checker, fill_correctness
from evaluator.errors import EnvironmentProblem
from evaluator.jail import Jail
from evaluator.performance import performance_from_timing
from evaluator.protocol import CandidateError, ChannelViolation
from evaluator.sandbox import CandidateProcess, ChildDied, child_env
from evaluator.taskdata import HIDDEN_WORKLOADS_FILE, Task, Workload, parse_workloads
from evaluator.verdict import Correctness, Status, WorkloadResult

REPO_ROOT = Path(evaluator.__file__).resolve().parent.parent
Report = Callable[[str, str], None]


@dataclass
class CandidateSetup:
    """What every candidate process of one evaluation shares."""

    task: Task
    workloads: list[Workload]  # the workloads of this evaluation (their hidden ones are staged, no others)
    library: Path  # the compiled candidate
    workdir: Path  # the evaluation's folder: jobs, logs, the staged task
    exchange: Path  # the one folder candidate processes write outputs to
    jail: Jail | None
    device: int = 0
    device_type: str = "cuda"

    @property
    def sandboxed(self) -> bool:
        return self.jail is not None and self.jail.mode == "bubblewrap"


@dataclass
class Seeds:
    """The per-trial seeds of one workload (derived from the run seed, which stays in the pipeline)."""

    trials: list[int]  # one correctness trial each
    timing: list[int]  # final input values of each rotating timing set (their outputs are checked)
    timing_pre: list[int]  # the values the timing sets start with (see evaluator.child.Session.timing)


@dataclass
class TimingRequest:
    """How to time a workload, and what turning the timings into performance needs from this host."""

    warmup: int
    iters: int
    peak_tflops: float | None = None  # measured bf16 dense peak
    gpu_uuid: str | None = None  # for the SM clock before and after


@dataclass
class WorkloadRun:
    """One workload's candidate process, as the verdict needs it."""

    result: WorkloadResult
    timing_seconds: float = 0.0
    limit_events: dict[str, int] = field(default_factory=dict)  # cgroup events of this process
    notes: list[str] = field(default_factory=list)
    sm_clock_mhz: tuple[int | None, int | None] | None = None  # (before, after) timing, when timed


def stage_task(task: Task, workloads: list[Workload], workdir: Path) -> Path:
    """The task folder as the candidate process may see it: hidden workloads other than those evaluated here
    left out, so candidate code cannot read the shapes of the ranked run."""
    staged = workdir / "task" / task.name
    if staged.is_dir():
        return staged
    source = Path(task.directory).resolve()
    shutil.copytree(source, staged, ignore=shutil.ignore_patterns(HIDDEN_WORKLOADS_FILE, "solutions", "__pycache__"))
    chosen = {w.uuid for w in workloads}
    hidden_file = source / HIDDEN_WORKLOADS_FILE
    if hidden_file.is_file() and chosen & {w.uuid for w in task.hidden_workloads}:
        keep = [
            line
            for line in hidden_file.read_text(encoding="utf-8").splitlines()
            if line.strip() and parse_workloads(line, task.definition, hidden_file)[0].uuid in chosen
        ]
        (staged / HIDDEN_WORKLOADS_FILE).write_text("\n".join(keep) + "\n", encoding="utf-8")
    return staged


def write_job(setup: CandidateSetup, workload: Workload, **extra: Any) -> Path:
    """The job file the candidate process reads first (evaluator.child.Session)."""
    job = {
        "library": str(setup.library),
        "task_dir": str(stage_task(setup.task, setup.workloads, setup.workdir)),
        "workload": workload.uuid,
        "exchange_dir": str(setup.exchange),
        "device": setup.device,
        "device_type": setup.device_type,
        **extra,
    }
    path = setup.workdir / f"job-{workload.uuid[:8]}-{extra.get('mode', 'serve')}.json"
    path.write_text(json.dumps(job))
    return path


def child_command(job: Path) -> list[str]:
    return [sys.executable, "-m", "evaluator.child", str(job)]


def candidate_env(workdir: Path) -> dict[str, str]:
    return child_env(workdir, [str(REPO_ROOT)])


def start(setup: CandidateSetup, workload: Workload, *, baseline: bool) -> CandidateProcess:
    """A fresh candidate process serving `workload` (with the library baseline loaded when `baseline`)."""
    job = write_job(setup, workload, baseline=baseline)
    return CandidateProcess(
        child_command(job),
        env=candidate_env(setup.workdir),
        cwd=setup.workdir,
        log_dir=setup.workdir / "logs",
        name=f"candidate-{workload.uuid[:8]}",
        jail=setup.jail,
        writable=[setup.exchange],
        readable=[setup.workdir],
        gpu=setup.device_type == "cuda",
    )


def expect(child: CandidateProcess, deadline: float, event: str) -> dict[str, Any]:
    """The next message, which must be `event`. A setup error in the child is this host's problem."""
    msg = child.receive(deadline)
    if protocol.is_setup_error(msg):
        raise EnvironmentProblem(f"the candidate process could not start: {protocol.setup_error_text(msg)}")
    return protocol.expect_event(msg, event)


def run_workload(
    setup: CandidateSetup,
    checker: Checker,
    workload: Workload,
    *,
    seeds: Seeds,
    timing: TimingRequest | None,
    timeout_s: float,
    report: Report,
) -> WorkloadRun:
    """Correctness trials, then (when `timing`) the timed calls, in one candidate process; never raises for the
    candidate's failures (only EnvironmentProblem for this host's)."""
    result = WorkloadResult(uuid=workload.uuid, axes=dict(workload.axes), status=Status.PASSED)
    result.correctness = Correctness(relative_norm_bound=checker.rel_norm_bound)
    run = WorkloadRun(result)
    started = time.monotonic()
    # References first, before the candidate exists: a candidate that grabs all GPU memory cannot starve them.
    refs = [checker.reference_outputs(workload, s) for s in seeds.trials]
    timing_refs = [checker.reference_outputs(workload, s) for s in seeds.timing] if timing is not None else []
    deadline = time.monotonic() + timeout_s
    child = start(setup, workload, baseline=timing is not None)
    try:
        expect(child, deadline, protocol.READY)
        if _trials(child, checker, workload, seeds.trials, refs, result, deadline):
            refs.clear()
            if timing is not None:
                t = time.monotonic()
                report("timing", f"{axes_text(workload)}: {timing.warmup} warm-up + {timing.iters} timed calls")
                _time(child, checker, workload, seeds, timing_refs, timing, run, deadline)
                run.timing_seconds = time.monotonic() - t
            child.send(protocol.exit_command())
            if result.status == Status.PASSED:
                bye = expect(child, deadline, protocol.BYE)
                protocol.check_bye(bye, child.received)
    except TimeoutError:
        child.kill()
        result.status = Status.TIMEOUT
        result.message = (
            f"the candidate process exceeded the {timeout_s:g} s wall-clock limit; its process group was killed"
        )
    except ChannelViolation as exc:
        child.kill()
        result.status = Status.RUNTIME_ERROR
        result.message = f"forged or out-of-order message on the result channel: {exc}"
    except CandidateError as exc:
        result.status = Status.RUNTIME_ERROR
        result.message = str(exc)
    except ChildDied as exc:
        code = child.wait(5)
        result.status = Status.RUNTIME_ERROR
        if child.flooded:
            result.message = (
                f"the candidate process was killed: it wrote more than {child.stdout.limit} bytes to {child.flooded}"
            )
        else:
            result.message = f"the candidate process died ({exit_text(code, setup.sandboxed)}): {exc}"
    finally:
        child.close(grace_s=10.0)
        run.limit_events = dict(child.limit_events)
        if child.limit_events.get("pids_max_hit"):
            _add_message(result, "the candidate hit the sandbox's process limit")
        if child.limit_events.get("oom_kill"):
            _add_message(result, "the sandbox's host-memory limit killed a candidate process")
        result.stdout_tail, result.stderr_tail = child.tails()
        result.seconds = round(time.monotonic() - started, 3)
        for f in setup.exchange.glob("*.bin"):
            f.unlink(missing_ok=True)
        refs.clear()
        timing_refs.clear()
    return run


def _trials(
    child: CandidateProcess,
    checker: Checker,
    workload: Workload,
    seeds: list[int],
    refs: list[tuple[Any, ...]],
    result: WorkloadResult,
    deadline: float,
) -> bool:
    """Run the correctness trials; False when one failed (`result` says how)."""
    correctness = result.correctness
    assert correctness is not None
    child.send(protocol.trials_command(seeds))
    comparisons: list[Comparison] = []
    for k in range(len(seeds)):
        files, modified = protocol.check_trial(expect(child, deadline, protocol.TRIAL), k)
        if modified:
            correctness.inputs_modified = modified
            result.status = Status.INCORRECT_NUMERICAL
            result.message = f"run modified its input(s) {', '.join(modified)} (trial {k + 1})"
            return False
        comparison = checker.compare(workload, files, refs[k])
        comparisons.append(comparison)
        correctness.trials = k + 1
        if not comparison.ok:
            fill_correctness(correctness, comparison)
            result.status, result.message = comparison.status, f"trial {k + 1}: {comparison.message}"
            return False
    fill_correctness(correctness, worst(comparisons))
    return True


def _time(
    child: CandidateProcess,
    checker: Checker,
    workload: Workload,
    seeds: Seeds,
    refs: list[tuple[Any, ...]],
    plan: TimingRequest,
    run: WorkloadRun,
    deadline: float,
) -> None:
    """The timed calls; their outputs are checked too, then summarised into `run.result.performance`."""
    result = run.result
    before = envinfo.sm_clock_mhz(plan.gpu_uuid)
    child.send(protocol.timing_command(seeds.timing, seeds.timing_pre, plan.warmup, plan.iters))
    msg = protocol.check_timing(expect(child, deadline, protocol.TIMED))
    run.sm_clock_mhz = (before, envinfo.sm_clock_mhz(plan.gpu_uuid))
    if msg.get("fallback_reason"):
        run.notes.append(str(msg["fallback_reason"]))
    for k, (ref, files) in enumerate(zip(refs, msg["outputs"], strict=True)):
        comparison = checker.compare(workload, files, ref)
        assert result.correctness is not None
        result.correctness.timed_outputs_checked = k + 1
        if not comparison.ok:
            result.status = comparison.status
            result.message = f"output of a timed call (input set {k + 1}) is wrong: {comparison.message}"
            return
    perf = performance_from_timing(
        msg,
        baseline=checker.task.baselines[0].id,
        warmup=plan.warmup,
        flops=checker.task.flops_for(workload),
        peak_tflops=plan.peak_tflops,
        workload=workload.uuid,
    )
    run.notes.extend(perf.notes)
    result.performance = perf.performance


def exit_text(code: int | None, sandboxed: bool = False) -> str:
    """A process's exit status in words."""
    if code is None:
        return "still running, killed"
    # bubblewrap's init reports a child killed by signal N as exit status 128 + N.
    signum = -code if code < 0 else code - 128 if sandboxed and 128 < code < 160 else 0
    if signum:
        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            return f"killed by signal {signum}"
    return f"exit status {code}"


def _add_message(result: WorkloadResult, note: str) -> None:
    result.message = f"{result.message}; {note}" if result.message else note


def axes_text(workload: Workload) -> str:
    return ", ".join(f"{k}={v}" for k, v in workload.axes.items()) or workload.uuid[:8]


def fast_tmp() -> str | None:
    """The shared-memory tmpfs when it has room: outputs pass through it, hundreds of MB for large workloads.

    Containers often mount a 64 MiB /dev/shm; then the default temporary folder (disk) is used instead, since a
    full exchange folder would look like a candidate failure.
    """
    shm = Path("/dev/shm")  # noqa: S108 - mkdtemp makes a private 0700 folder inside it
    try:
        return str(shm) if shm.is_dir() and shutil.disk_usage(shm).free > 8 * 1024**3 else None
    except OSError:
        return None
