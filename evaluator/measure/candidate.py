"""The parent side of one candidate process: start it for one workload, feed it commands, read and check its answers.

Every workload gets a fresh candidate process (evaluator.candidate_process.child, started by name: the parent never
imports the candidate side) in its own process group (evaluator.isolation.sandbox), inside the evaluation's jail, killed
whole at the wall-clock limit. It sees a copy of the task folder without the hidden workloads that are not
evaluated here, and writes outputs only to the exchange folder. Messages follow evaluator.both_sides.protocol; outputs are
compared here (evaluator.measure.correctness), timings summarised by evaluator.measure.performance.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import evaluator
from evaluator import envinfo
from evaluator.arch_check.tensor_witness import GpmWindow
from evaluator.both_sides import hostile_files, protocol
from evaluator.both_sides.gpu_share import DriverError
from evaluator.both_sides.inputs import scalar_input
from evaluator.both_sides.protocol import CandidateError, ChannelViolation
from evaluator.both_sides.shared_outputs import SharedOutputs, layout_of
from evaluator.both_sides.taskdata import HIDDEN_WORKLOADS_FILE, Task, Workload, parse_workloads
from evaluator.both_sides.verdict import (
    Correctness,
    KernelFootprint,
    Status,
    WorkloadResult,
)
from evaluator.checks.integrity import (
    CHECK_MEMORY_BYTES,
)
from evaluator.checks.physical_limits import limits_for
from evaluator.checks.workload_checks import WorkloadRun, check_kernels, judge_timing
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.jail import Jail, hand_over
from evaluator.isolation.sandbox import CandidateProcess, ChildDied, ProcessLimitHit, child_env
from evaluator.languages import DEFAULT_LANGUAGE, Language
from evaluator.measure import trusted_baseline
from evaluator.measure.batch_samples import output_numels, sampled_references
from evaluator.measure.compare import Comparison, worst
from evaluator.measure.correctness import Checker, fill_correctness
from evaluator.measure.lent_calls import InputDrawer, Lent, LentRound, lent_input_shapes, ranked_ms
from evaluator.measure.performance import performance_from_timing, rank_by_trusted_clock
from evaluator.measure.timing_plan import Seeds, TimingPlan, TimingRequest, slots_needed
from evaluator.measure.trusted_baseline import TrustedBaseline, host_slack_ms

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
    kernels: list[str] | None = None  # the submission's kernels (static SASS); None: identity not checked
    footprints: dict[str, list[KernelFootprint]] = field(default_factory=dict)  # per kernel, as compiled
    language: Language = DEFAULT_LANGUAGE  # its `loader` loads `library` in the candidate process
    kernel_cache: Path | None = None  # the language's compiled kernels (a trusted copy); each process gets its own
    static_sass: Path | None = None  # the SASS listing the trusted side wrote (the profiled code is held against it)
    # sha256 of each device ELF the trusted side took from the build: a launched kernel of the submission's must
    # come from a module with one of these images. None: not known, the images are not checked.
    images: frozenset[str] | None = None

    @property
    def sandboxed(self) -> bool:
        return self.jail is not None and self.jail.mode == "bubblewrap"


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


def write_job(setup: CandidateSetup, workload: Workload, *, scratch: Path | None = None, **extra: Any) -> Path:
    """The job file the candidate process reads first (evaluator.candidate_process.child.Session). `scratch` is a
    folder that process may write (default: the exchange folder); the private copy of the language's kernel cache
    goes there."""
    job = {
        "library": str(setup.library),
        "task_dir": str(stage_task(setup.task, setup.workloads, setup.workdir)),
        "workload": workload.uuid,
        "exchange_dir": str(setup.exchange),
        "device": setup.device,
        "device_type": setup.device_type,
        "loader": setup.language.loader,
        **extra,
    }
    if job["loader"] and setup.kernel_cache is not None:
        # A fresh copy per process: no kernel cache is shared between candidate processes or candidates (the
        # Triton runtime reads and writes its cache). The folder that receives it is one the candidate may write, so
        # it gets a new random name (nothing planted there beforehand can be in the way) and every file is created
        # without following links.
        private = Path(tempfile.mkdtemp(prefix=f"kernel-cache-{workload.uuid[:8]}-", dir=scratch or setup.exchange))
        hostile_files.copy_tree(setup.kernel_cache, private / "cache")
        if setup.jail is not None and setup.jail.user is not None:
            # The folder it lands in belongs to the sandbox user already, so the jail's hand-over at the process's
            # start does not enter it: this copy is handed over here.
            hand_over(setup.jail.user, writable=[private], readable=[])
        job["kernel_cache"] = str(private / "cache")
    path = setup.workdir / f"job-{workload.uuid[:8]}-{extra.get('mode', 'serve')}.json"
    hostile_files.write_private(path, json.dumps(job))
    return path


# The candidate process's module, run by name (`python -m`); the parent never imports it (docs/architecture.md).
CHILD_MODULE = "evaluator.candidate_process.child"


def child_command(job: Path) -> list[str]:
    return [sys.executable, "-m", CHILD_MODULE, str(job)]


def candidate_env(workdir: Path) -> dict[str, str]:
    return child_env(workdir, [str(REPO_ROOT)])


def shared_outputs(setup: CandidateSetup, workload: Workload, slots: int) -> SharedOutputs:
    """Memory this process owns for `slots` calls' tensor inputs and outputs, lent to one candidate process."""
    import torch

    from evaluator.both_sides.inputs import alloc_outputs

    shapes = alloc_outputs(setup.task.definition, workload, device="meta")
    inputs = lent_input_shapes(torch, setup.task.definition, workload)
    calls = max(slots, 1)
    if setup.device_type == "cuda":
        # The region comes from the driver, which cannot use what PyTorch's cache holds of this process's freed
        # tensors (references, inputs drawn for them, earlier workloads' captures): that goes back to the driver first.
        torch.cuda.empty_cache()
    try:
        return SharedOutputs.create(torch, shapes, calls, setup.device_type, setup.device, inputs=inputs)
    except DriverError as exc:
        wanted = layout_of(torch, inputs + shapes)[1] * calls
        free, total = torch.cuda.mem_get_info(setup.device)
        raise EnvironmentProblem(
            f"this host could not lend {wanted / 2**30:.1f} GiB of GPU memory for {calls} call(s) of the "
            f"workload ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free on the device): {exc}"
        ) from None


def input_drawer(checker: Checker, workload: Workload) -> InputDrawer:
    """Draws call inputs on the device the references are computed on (the candidate's GPU)."""
    import torch

    return InputDrawer(torch, checker.task.definition, workload, checker.device, checker.derive)


def start(
    setup: CandidateSetup,
    workload: Workload,
    shared: SharedOutputs,
    *,
    trusted_baseline: bool = False,
) -> CandidateProcess:
    """A fresh candidate process serving `workload` on the slots of `shared`; with `trusted_baseline`, a process of
    the same shape that loads no submission code and serves the library baseline in its place
    (measure_trusted_baseline)."""
    extra: dict[str, Any] = {"shared_outputs": shared.job_entry()}
    if trusted_baseline:
        job = write_job(setup, workload, library=None, loader="", mode=protocol.BASELINE_MODE, **extra)
    else:
        job = write_job(setup, workload, **extra)
    return CandidateProcess(
        child_command(job),
        env=candidate_env(setup.workdir),
        cwd=setup.workdir,
        log_dir=setup.workdir / "logs",
        name=f"{'baseline' if trusted_baseline else 'candidate'}-{workload.uuid[:8]}",
        jail=setup.jail,
        writable=[setup.exchange],
        readable=[setup.workdir],
        gpu=setup.device_type == "cuda",
        extra_fds=(shared.fd,),
    )


def measure_trusted_baseline(
    setup: CandidateSetup,
    workload: Workload,
    seeds: Seeds,
    timing: TimingRequest,
    deadline: float,
    drawer: InputDrawer,
    beside: CandidateProcess,
) -> TrustedBaseline:
    """The library baseline of `workload`, timed in a process that loads no submission code, through the same
    rounds as the candidate (evaluator/measure/trusted_baseline.py). It is trusted code: any failure of it is this host's
    problem, not the candidate's. `beside`, the candidate's process, set itself up meanwhile: the timing starts
    once it is on standby (its setup's GPU and CPU work done), and it loads nothing until this process is gone."""
    shared = shared_outputs(setup, workload, slots_needed(seeds))
    child = start(setup, workload, shared, trusted_baseline=True)
    try:
        expect(child, deadline, protocol.READY)
        await_standby(beside, deadline)
        return trusted_baseline.measure(
            child, expect, shared=shared, drawer=drawer, seeds=seeds, warm_rounds=timing.warm_rounds, deadline=deadline
        )
    except (TimeoutError, ChannelViolation, CandidateError, ProcessLimitHit, ChildDied) as exc:
        code = child.close(grace_s=10.0)
        why = str(exc) or type(exc).__name__
        raise EnvironmentProblem(
            f"the trusted library-baseline process failed: {why} ({death_text(child, code, setup.sandboxed)})"
        ) from None
    finally:
        child.close(grace_s=10.0)
        shared.close()


def death_text(child: CandidateProcess, code: int | None, sandboxed: bool) -> str:
    """How a trusted process ended, for the operator who retries the evaluation: its exit status, what its cgroup
    saw (a host-memory kill leaves no other trace) and the last line it wrote to stderr. Only for processes that
    run no submission code: a candidate's own stderr is never quoted as the host's evidence."""
    parts = [exit_text(code, sandboxed)]
    if child.limit_events.get("oom_kill"):
        parts.append("the sandbox's host-memory limit killed it")
    if child.limit_events.get("pids_max_hit"):
        parts.append("it hit the sandbox's process limit")
    lines = [line.strip() for line in child.tails()[1].splitlines() if line.strip()]
    if lines:
        parts.append(f"last stderr line: {lines[-1][:300]}")
    return "; ".join(parts)


def await_standby(child: CandidateProcess, deadline: float) -> None:
    """The candidate process's `standby`: its trusted setup is done and no submission code has run in it yet, so
    any failure until here is this host's."""
    try:
        expect(child, deadline, protocol.STANDBY)
    except (TimeoutError, ChannelViolation, CandidateError, ProcessLimitHit, ChildDied) as exc:
        raise EnvironmentProblem(f"the candidate process could not start: {exc}") from None


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
    timing_refs: dict[tuple[str, int, int], tuple[Any, ...]] = {}
    plan = None
    if timing is not None:
        out_bytes = sum(t.numel() * t.element_size() for t in refs[0]) if refs else 0
        cap = min(timing.max_checked, max(4, CHECK_MEMORY_BYTES // max(out_bytes, 1)))
        numels = output_numels(checker.task.definition, workload)
        plan = TimingPlan.draw(seeds, timing.warm_rounds, timing.check_fraction, cap, numels)
        timing_refs = _timing_references(checker, workload, seeds, plan)
    drawer = input_drawer(checker, workload)
    trusted_base = None
    shared = shared_outputs(setup, workload, slots_needed(seeds))
    # The candidate's process sets itself up (PyTorch, CUDA context, lent slots, timer) while the baseline process
    # starts, and waits on standby; its submission is loaded only once the baseline was timed and that process is
    # gone, so nothing the candidate does can reach the baseline (the two start-ups overlap: ~3.5 s a workload).
    child = start(setup, workload, shared)
    restore_threads = _one_parent_thread(setup.device_type)
    window = None
    try:
        if timing is not None:
            trusted_base = measure_trusted_baseline(
                setup, workload, seeds, timing, time.monotonic() + timeout_s, drawer, beside=child
            )
        else:
            await_standby(child, time.monotonic() + timeout_s)
        deadline = time.monotonic() + timeout_s
        if timing is not None and setup.device_type == "cuda":
            window = GpmWindow(timing.gpu_uuid)
            window.start()
        child.send(protocol.load_command())
        expect(child, deadline, protocol.READY)
        lent = Lent(child, expect, deadline, shared, drawer)
        if _trials(lent, checker, workload, seeds.trials, refs, result):
            refs.clear()
            if timing is not None:
                t = time.monotonic()
                report("timing", f"{axes_text(workload)}: {timing.warmup} warm-up + {timing.iters} timed calls")
                assert plan is not None
                _time(lent, checker, workload, seeds, plan, timing_refs, timing, run, setup, trusted_base)
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
    except ProcessLimitHit as exc:
        result.status = Status.RUNTIME_ERROR
        result.message = f"the candidate process was killed: {exc}"
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
        restore_threads()
        child.close(grace_s=10.0)
        if window is not None:
            run.gpm, run.gpm_reason = window.stop(), window.reason
            run.window_calls = len(seeds.trials) + sum(map(len, seeds.timed)) + sum(map(len, seeds.batches))
        run.limit_events = dict(child.limit_events)
        if child.limit_events.get("pids_max_hit") and "process limit" not in result.message:
            _add_message(result, "the candidate hit the sandbox's process limit")
        if child.limit_events.get("oom_kill"):
            _add_message(result, "the sandbox's host-memory limit killed a candidate process")
        result.stdout_tail, result.stderr_tail = child.tails()
        result.seconds = round(time.monotonic() - started, 3)
        for f in setup.exchange.glob("*.bin"):
            f.unlink(missing_ok=True)
        shared.close()
        refs.clear()
        timing_refs.clear()
    return run


def _trials(
    lent: Lent,
    checker: Checker,
    workload: Workload,
    seeds: list[int],
    refs: list[tuple[Any, ...]],
    result: WorkloadResult,
) -> bool:
    """Run the correctness trials, one round each; False when one failed (`result` says how)."""
    import torch

    correctness = result.correctness
    assert correctness is not None
    names = [spec.name for spec in checker.task.definition.inputs if scalar_input(spec, workload) is None]
    comparisons: list[Comparison] = []
    for k, seed in enumerate(seeds):
        trial = lent.round(protocol.TRIAL_ROUND, [seed], [0], keep_inputs=True)
        modified = [
            name
            for name, before, after in zip(names, trial.drawn[0], trial.left[0], strict=True)
            if not torch.equal(before, after)
        ]
        if modified:
            correctness.inputs_modified = modified
            result.status = Status.INCORRECT_NUMERICAL
            result.message = f"run modified its input(s) {', '.join(modified)} (trial {k + 1})"
            return False
        comparison = checker.compare_tensors(workload, trial.captured[0], refs[k])
        comparisons.append(comparison)
        correctness.trials = k + 1
        if not comparison.ok:
            fill_correctness(correctness, comparison)
            result.status, result.message = comparison.status, f"trial {k + 1}: {comparison.message}"
            return False
    fill_correctness(correctness, worst(comparisons))
    return True


def _timing_references(
    checker: Checker, workload: Workload, seeds: Seeds, plan: TimingPlan
) -> dict[tuple[str, int, int], tuple[Any, ...]]:
    """References of every call the parent will compare, computed before the candidate process exists."""
    refs = {("timed", r, j): checker.reference_outputs(workload, seeds.timed[r][j]) for r, j in sorted(plan.checked)}
    for r, (batch, j) in enumerate(zip(seeds.batches, plan.batch_checked, strict=True)):
        refs[("batch", r, j)] = checker.reference_outputs(workload, batch[j])
    if plan.batch_indices:
        sampled = sampled_references(
            lambda seed: checker.reference_outputs(workload, seed),
            seeds.batches,
            plan.batch_indices,
            plan.batch_checked,
        )
        refs.update({("sampled", b, k): tuple(values) for (b, k), values in sampled.items()})
    return refs


def _time(
    lent: Lent,
    checker: Checker,
    workload: Workload,
    seeds: Seeds,
    plan: TimingPlan,
    refs: dict[tuple[str, int, int], tuple[Any, ...]],
    request: TimingRequest,
    run: WorkloadRun,
    setup: CandidateSetup,
    trusted_base: TrustedBaseline | None = None,
) -> None:
    """The rounds of timed calls, then the back-to-back batches, every output the plan names compared; then the
    ranked performance (the parent's clock over the batches) and this workload's integrity observations."""
    result = run.result
    assert result.correctness is not None
    before = envinfo.sm_clock_mhz(request.gpu_uuid)
    for r, round_seeds in enumerate(seeds.timed):
        sampled = r >= request.warm_rounds
        chosen = sorted(j for rr, j in plan.checked if rr == r)
        timed = lent.round(protocol.TIMED_ROUND, round_seeds, chosen, sampled=sampled)
        for j in chosen:
            comparison = checker.compare_tensors(workload, timed.captured[j], refs[("timed", r, j)])
            run.checked_calls += 1
            result.correctness.timed_outputs_checked = run.checked_calls
            if not comparison.ok:
                number = sum(len(x) for x in seeds.timed[request.warm_rounds : r]) + j + 1
                result.status = comparison.status
                result.message = (
                    f"output of timed call {number} differs from the reference: {comparison.message}; every call "
                    "gets new inputs and its output may be checked, so results may not be reused between calls"
                )
                return
        timed.captured.clear()
    run.timed_calls = sum(len(r) for r in seeds.timed[request.warm_rounds :])
    batches: list[LentRound] = []
    for b, batch_seeds in enumerate(seeds.batches):
        j = plan.batch_checked[b]
        indices = plan.batch_indices[b] if plan.batch_indices else ()
        batches.append(lent.round(protocol.BATCH_ROUND, batch_seeds, [j], sample_at=indices))
        comparison = checker.compare_tensors(workload, batches[-1].captured.pop(j), refs[("batch", b, j)])
        run.checked_calls += 1
        if not comparison.ok:
            _batch_failed(result, j, comparison)
            return
        compared, failed = _sampled_batch_failure(checker, batches[-1], b, refs)
        run.sampled_calls += compared
        if failed is not None:
            _batch_failed(result, *failed)
            return
    lent.child.send(protocol.finish_command())
    msg = protocol.check_timing(expect(lent.child, lent.deadline, protocol.TIMED))
    run.sm_clock_mhz = (before, envinfo.sm_clock_mhz(request.gpu_uuid))
    if msg.get("fallback_reason"):
        run.notes.append(str(msg["fallback_reason"]))
    if check_kernels(msg, run, setup.kernels, setup.footprints, setup.images):
        return
    if trusted_base is not None:  # the library's figures come from the trusted baseline process, never this one
        msg = {**msg, "series": {**msg["series"], "baseline": trusted_base.series}}
    flops = checker.task.flops_for(workload)
    perf = performance_from_timing(
        msg,
        baseline=checker.task.baselines[0].id,
        warmup=request.warmup,
        flops=flops,
        peak_tflops=request.peak_tflops,
        workload=workload.uuid,
    )
    run.notes.extend(perf.notes)
    result.performance = p = perf.performance
    floor = trusted_base.host_floor_ms if trusted_base is not None else None
    if trusted_base is not None:
        p.baseline_measured_by = "trusted process"
        p.host_floor_ms = floor
    # The parent's clock ranks both sides; the candidate process's own timer stays as a labelled hint.
    run.trusted_ms = ranked_ms(batches, trusted_base.drawing_ms if trusted_base is not None else 0.0)
    in_process = p.latency_ms
    rank_by_trusted_clock(
        p, run.trusted_ms, trusted_base.ranked_ms if trusted_base else None, flops, request.peak_tflops
    )
    gpu = request.gpu_name or device_name(setup)
    judge_timing(
        run, in_process, limits_for(checker.task.definition, workload, gpu), flops, host_slack_ms(floor), msg["l2"]
    )


def device_name(setup: CandidateSetup) -> str | None:
    """The GPU's name as the driver gives it (the verdict's `environment.gpu_name` is the same property)."""
    if setup.device_type != "cuda":
        return None
    import torch

    return str(torch.cuda.get_device_properties(setup.device).name)


def _one_parent_thread(device_type: str) -> Callable[[], None]:
    """On a CPU device, this process's PyTorch work while the baseline's and the candidate's processes run (drawing,
    gathering samples, comparing) on one thread, as theirs is (evaluator/candidate_process/child.py): threads of its
    own left spinning or waiting at an OpenMP barrier on a loaded 2-core host take the time its clock measures (a
    batch of microsecond calls then read 15x slower). Returns what restores the thread count."""
    if device_type != "cpu":
        return lambda: None
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(before)


def _sampled_batch_failure(
    checker: Checker, batch: LentRound, b: int, refs: dict[tuple[str, int, int], tuple[Any, ...]]
) -> tuple[int, tuple[int, Comparison] | None]:
    """How many calls of batch `b` were compared on their sampled elements, and the first that differs from the
    reference's (with that comparison), if any."""
    compared = 0
    for k in sorted(k for kind, bb, k in refs if kind == "sampled" and bb == b):
        compared += 1
        comparison = checker.compare_samples([values[k] for values in batch.samples], refs[("sampled", b, k)])
        if not comparison.ok:
            return compared, (k, comparison)
    batch.samples.clear()
    return compared, None


def _batch_failed(result: WorkloadResult, call: int, comparison: Comparison) -> None:
    result.status = comparison.status
    result.message = (
        f"output of call {call + 1} of a back-to-back batch differs from the reference: {comparison.message}; "
        "results may not be reused between calls"
    )


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
