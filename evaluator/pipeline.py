"""The evaluation pipeline: policy -> compile -> sass -> correctness -> arch -> timing, one verdict out.

This module is the trusted parent. It never runs candidate code itself: every workload gets a fresh
candidate process (evaluator.child) in its own process group, killed whole at the wall-clock limit.
Inputs are drawn on both sides from per-trial seeds derived from a run seed that stays here; the
reference outputs are computed and compared here only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evaluator
from evaluator import ncu as ncu_mod
from evaluator.arches import get_arch
from evaluator.compare import DEFAULT_REL_NORM_BOUND, Comparison, compare_output, worst
from evaluator.compile import compile_kernel
from evaluator.errors import EnvironmentProblem
from evaluator.inputs import as_output_tuple, derive_seed, input_deriver, load_reference, make_inputs, torch_dtype
from evaluator.jail import Jail, Limits, allow_unsandboxed_from_env, open_jail
from evaluator.policy import check_preprocessed, check_source
from evaluator.sandbox import CandidateProcess, ChildDied, child_env, run_group
from evaluator.sass import count_families, disassemble
from evaluator.stats import bootstrap_speedup, summarize
from evaluator.taskdata import HIDDEN_WORKLOADS_FILE, Task, Workload, parse_workloads
from evaluator.verdict import (
    GPU_STAGES,
    STAGES,
    ArchCheck,
    ArchStatus,
    Correctness,
    OverallStatus,
    Performance,
    PolicyFinding,
    StageRecord,
    StageState,
    Status,
    Verdict,
    WorkloadResult,
)

StageCallback = Callable[[str, str], None]
REPO_ROOT = Path(evaluator.__file__).resolve().parent.parent

# Stages that another stage needs: asking for "timing" runs correctness first, and so on.
_NEEDS = {
    "compile": {"policy"},
    "sass": {"compile"},
    "correctness": {"compile"},
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
    timing_sets: int = 3  # rotating input sets during timing; each set's last timed output is checked
    device: int = 0
    # "cpu" runs correctness with CPU tensors and host-code candidates: only for tests of this machinery on
    # machines without a GPU. Timing and arch need "cuda".
    device_type: str = "cuda"
    seed: bytes | None = None  # the run seed; random when None (tests fix it)
    workdir: Path | None = None
    keep_workdir: bool = False
    fail_fast: bool = True  # stop after a workload ends in TIMEOUT or RUNTIME_ERROR
    # Candidate code (compiler included) runs under bubblewrap; without it the evaluation refuses unless this is
    # True (None: read EVALUATOR_ALLOW_UNSANDBOXED). See evaluator/jail.py.
    allow_unsandboxed: bool | None = None
    # Nsight Compute reads counters only with CAP_SYS_ADMIN where the driver restricts profiling to admins; the
    # sandbox drops every capability. When the sandboxed profile is refused for that, rerun it outside bubblewrap
    # (still limits, cgroup and a clean environment) only if this is True (None: EVALUATOR_ALLOW_UNSANDBOXED_PROFILE).
    allow_unsandboxed_profile: bool | None = None
    limits: Limits | None = None


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
) -> Verdict:
    """Evaluate one candidate source on one task for one architecture.

    Returns a verdict for every outcome of the candidate; raises EnvironmentProblem only when this host cannot
    do what was asked (no nvcc, no GPU of the arch for GPU stages, ...) and ValueError for bad arguments.
    `on_stage(stage, message)` is called as stages start and finish, for progress displays.
    """
    return _Evaluation(source, task, arch, workloads, stages, on_stage, options or Options()).run()


class _Evaluation:
    def __init__(
        self,
        source: str,
        task: Task,
        arch: str,
        workloads: str | Iterable[str],
        stages: Iterable[str],
        on_stage: StageCallback | None,
        options: Options,
    ) -> None:
        get_arch(arch)
        self.source, self.task, self.arch, self.opts = source, task, arch, options
        self.requested = list(stages)
        self.stages = resolve_stages(self.requested)
        self.workloads = select_workloads(task, workloads)
        self.on_stage = on_stage
        self.run_seed = options.seed if options.seed is not None else secrets.token_bytes(16)
        raw = source.encode("utf-8", errors="surrogateescape")
        self.verdict = Verdict(
            evaluator_version=evaluator.__version__,
            task=task.name,
            arch=arch,
            status=OverallStatus.STATIC_ONLY,
            created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            source_sha256=hashlib.sha256(raw).hexdigest(),
            source_bytes=len(raw),
            stages_requested=self.requested,
            stages=[StageRecord(s, StageState.NOT_RUN) for s in STAGES],
        )
        hidden = {w.uuid for w in task.hidden_workloads}
        if any(w.uuid in hidden for w in self.workloads):
            self.verdict.workload_set = "hidden"
        self.jail: Jail | None = None
        self.limit_events: dict[str, int] = {}
        self.library: Path | None = None
        self.cubin: Path | None = None
        self.device: Any = None
        self.torch: Any = None
        self.timing_seconds: dict[str, float] = {}

    # ------------------------------------------------------------------ helpers

    def _report(self, stage: str, message: str) -> None:
        if self.on_stage is not None:
            self.on_stage(stage, message)

    def _stage(self, name: str) -> StageRecord:
        record = self.verdict.stage(name)
        assert record is not None
        return record

    def _finish(self, name: str, state: StageState, started: float, message: str = "") -> None:
        record = self._stage(name)
        record.state, record.seconds, record.message = state, round(time.monotonic() - started, 3), message
        self._report(name, f"{state.value}{': ' + message if message else ''}")

    def _skip_rest(self, after: str, why: str) -> None:
        for name in STAGES[STAGES.index(after) + 1 :]:
            if name in self.stages:
                self._stage(name).state = StageState.SKIPPED
                self._stage(name).message = why

    # ------------------------------------------------------------------ main flow

    def run(self) -> Verdict:
        start = time.monotonic()
        try:
            return self._run(start)
        finally:
            if self.verdict.sandbox is not None:
                self.verdict.sandbox.limit_events = dict(self.limit_events)

    def _run(self, start: float) -> Verdict:
        gpu_wanted = any(s in GPU_STAGES for s in self.stages)
        if gpu_wanted:
            self._check_gpu()  # before any work: a host without the right GPU is an environment problem
        own_workdir = self.opts.workdir is None
        workdir = Path(self.opts.workdir or tempfile.mkdtemp(prefix="ptxbench-eval-"))
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        try:
            self._run_stages(gpu_wanted)
        finally:
            if own_workdir and not self.opts.keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        self.verdict.wall_seconds = round(time.monotonic() - start, 3)
        return self.verdict

    def _run_stages(self, gpu_wanted: bool) -> None:
        v = self.verdict
        t = time.monotonic()
        self._report("policy", "checking the source")
        v.policy = check_source(self.source)
        if v.policy:
            first = v.policy[0]
            where = f" (line {first.line}: {first.text})" if first.line else ""
            self._finish("policy", StageState.FAILED, t, f"{first.message}{where}")
            v.status = OverallStatus.POLICY_REJECTED
            self._skip_rest("policy", "rejected by policy")
            msg = f"rejected by policy before compiling: {first.message}{where}"
            v.workloads = [self._workload_result(w, Status.COMPILE_ERROR, msg) for w in self.workloads]
            return
        self._finish("policy", StageState.PASSED, t)

        if "compile" not in self.stages:
            return
        allow = self.opts.allow_unsandboxed
        self.jail = open_jail(
            allow_unsandboxed=allow_unsandboxed_from_env() if allow is None else allow,
            gpu=gpu_wanted and self.opts.device_type == "cuda",
            limits=self.opts.limits,
        )
        v.sandbox = self.jail.record()
        t = time.monotonic()
        self._report("compile", f"nvcc for {self.arch}")
        compiled = compile_kernel(
            self.source, self.arch, self.workdir / "build", timeout_s=self.opts.compile_timeout_s, jail=self.jail
        )
        v.compile = compiled.result
        if compiled.outside_files:
            # nvcc opened a file outside the include roots: its log (already withheld) could quote it.
            v.policy = [_outside_finding(compiled.outside_files)]
            self._finish("compile", StageState.FAILED, t, v.policy[0].message)
            v.status = OverallStatus.POLICY_REJECTED
            self._skip_rest("compile", "rejected by policy")
            msg = f"rejected by policy while compiling: {v.policy[0].message}"
            v.workloads = [self._workload_result(w, Status.COMPILE_ERROR, msg) for w in self.workloads]
            return
        if compiled.result.ok and compiled.preprocessed is not None:
            # Policy again on the macro-expanded source: token pasting cannot hide dlopen or cuBLAS.
            v.policy = check_preprocessed(compiled.preprocessed)
            if v.policy:
                first = v.policy[0]
                self._finish("compile", StageState.FAILED, t, f"policy after macro expansion: {first.message}")
                v.status = OverallStatus.POLICY_REJECTED
                self._skip_rest("compile", "rejected by policy")
                msg = f"rejected by policy after macro expansion: {first.message}"
                v.workloads = [self._workload_result(w, Status.COMPILE_ERROR, msg) for w in self.workloads]
                return
        if not compiled.result.ok:
            why = "nvcc timed out" if compiled.result.timed_out else f"nvcc exited with {compiled.result.returncode}"
            self._finish("compile", StageState.FAILED, t, why)
            v.status = OverallStatus.COMPILE_ERROR
            self._skip_rest("compile", "compilation failed")
            v.workloads = [self._workload_result(w, Status.COMPILE_ERROR, why) for w in self.workloads]
            return
        self.library, self.cubin = compiled.library, compiled.cubin
        self._finish("compile", StageState.PASSED, t, f"{compiled.result.seconds:.1f} s")

        if "sass" in self.stages:
            t = time.monotonic()
            self._report("sass", "disassembling")
            text = disassemble(self.cubin or self.library)
            (self.workdir / "build" / "kernel.sass").write_text(text)  # kept for audits with --workdir
            target = self.task.targets.get(self.arch)
            v.sass = count_families(text, self.arch, target.families if target else None)
            if v.sass.target_count == 0:
                # Answered statically: no GPU needed to say the target instructions are absent.
                v.arch_check = ncu_mod.decide_arch(arch=self.arch, sass=v.sass, kernels=None, task_flops=None)
            summary = ", ".join(f"{f}={v.sass.families[f]}" for f in v.sass.target_families)
            self._finish("sass", StageState.PASSED, t, summary)

        if not gpu_wanted:
            v.status = OverallStatus.STATIC_ONLY
            v.notes.append("GPU stages (correctness, arch, timing) were not run: nothing is claimed about them")
            return
        self._run_gpu_stages()

    # ------------------------------------------------------------------ GPU side

    def _check_gpu(self) -> None:
        if self.opts.device_type == "cpu":
            if {"timing", "arch"} & set(self.stages):
                raise EnvironmentProblem("timing and arch stages need a CUDA device")
            return
        try:
            import torch
        except ImportError:
            raise EnvironmentProblem("GPU stages need PyTorch with CUDA; torch is not importable") from None
        if not torch.cuda.is_available():
            raise EnvironmentProblem(
                "GPU stages were requested but no CUDA GPU is visible; run with --stages policy,compile,sass "
                "on machines without a GPU"
            )
        cc = torch.cuda.get_device_capability(self.opts.device)
        want = get_arch(self.arch).compute_capability
        if tuple(cc) != want:
            raise EnvironmentProblem(
                f"this GPU is compute capability {cc[0]}.{cc[1]}, but {self.arch} needs {want[0]}.{want[1]}"
            )
        try:
            import tvm_ffi  # noqa: F401
        except ImportError as exc:
            raise EnvironmentProblem(f"the candidate process needs tvm_ffi: {exc}") from None

    def _run_gpu_stages(self) -> None:
        import torch

        from evaluator import envinfo

        v = self.verdict
        self.torch = torch
        cuda = self.opts.device_type == "cuda"
        self.device = torch.device("cuda", self.opts.device) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(self.device)
        # References in true fp32: TF32 would add error of the same size as the tolerance.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        v.environment = envinfo.collect(self.device if cuda else None)
        from evaluator.ncu import find_ncu, ncu_version

        ncu = find_ncu()
        v.environment.ncu_version = ncu_version(ncu) if ncu else None
        if v.compile is not None:
            v.environment.nvcc_version = v.compile.nvcc_version
        timing = "timing" in self.stages
        if timing:
            v.environment.peak_bf16_tflops = round(envinfo.measure_bf16_peak(self.device), 1)
        self.reference = load_reference(self.task.definition)
        self.derive = input_deriver(self.task)
        self.exchange = Path(tempfile.mkdtemp(prefix="ptxbench-x-", dir=_fast_tmp()))
        try:
            t = time.monotonic()
            self._report("correctness", f"{len(self.workloads)} workload(s), {self.opts.trials} trials each")
            timing_seconds = 0.0
            for index, workload in enumerate(self.workloads):
                self._report("correctness", f"workload {index + 1}/{len(self.workloads)} ({_axes(workload)})")
                result = self._run_workload(workload, timing)
                v.workloads.append(result)
                timing_seconds += self.timing_seconds.pop(workload.uuid, 0.0)
                if self.opts.fail_fast and result.status in (Status.TIMEOUT, Status.RUNTIME_ERROR):
                    rest = len(self.workloads) - index - 1
                    if rest:
                        v.notes.append(f"{rest} later workload(s) not run after {result.status.value} (fail fast)")
                    break
            passed = bool(v.workloads) and all(w.status == Status.PASSED for w in v.workloads)
            correctness_seconds = time.monotonic() - t - timing_seconds
            self._stage("correctness").state = StageState.PASSED if passed else StageState.FAILED
            self._stage("correctness").seconds = round(correctness_seconds, 3)
            self._report("correctness", "passed" if passed else "failed")
            if timing:
                rec = self._stage("timing")
                rec.state = StageState.PASSED if passed else StageState.SKIPPED
                rec.seconds = round(timing_seconds, 3)
                v.environment.timing_method = next(
                    (w.performance.candidate.method for w in v.workloads if w.performance and w.performance.candidate),
                    None,
                )
            v.status = OverallStatus.PASSED
            for w in v.workloads:
                if w.status != Status.PASSED:
                    v.status = OverallStatus(w.status.value)
                    break
            if "arch" in self.stages:
                self._run_arch(passed)
        finally:
            shutil.rmtree(self.exchange, ignore_errors=True)

    def _workload_result(self, w: Workload, status: Status, message: str = "") -> WorkloadResult:
        return WorkloadResult(uuid=w.uuid, axes=dict(w.axes), status=status, message=message)

    def _task_copy(self) -> Path:
        """The task folder as the candidate process may see it: hidden workloads other than those evaluated here
        left out, so candidate code cannot read the shapes of the ranked run."""
        staged = self.workdir / "task" / self.task.name
        if staged.is_dir():
            return staged
        source = Path(self.task.directory).resolve()
        shutil.copytree(
            source, staged, ignore=shutil.ignore_patterns(HIDDEN_WORKLOADS_FILE, "solutions", "__pycache__")
        )
        chosen = {w.uuid for w in self.workloads}
        hidden_file = source / HIDDEN_WORKLOADS_FILE
        if hidden_file.is_file() and chosen & {w.uuid for w in self.task.hidden_workloads}:
            keep = [
                line
                for line in hidden_file.read_text(encoding="utf-8").splitlines()
                if line.strip() and parse_workloads(line, self.task.definition, hidden_file)[0].uuid in chosen
            ]
            (staged / HIDDEN_WORKLOADS_FILE).write_text("\n".join(keep) + "\n", encoding="utf-8")
        return staged

    def _job(self, workload: Workload, **extra: Any) -> Path:
        job = {
            "library": str(self.library),
            "task_dir": str(self._task_copy()),
            "workload": workload.uuid,
            "exchange_dir": str(self.exchange),
            "device": self.opts.device,
            "device_type": self.opts.device_type,
            **extra,
        }
        path = self.workdir / f"job-{workload.uuid[:8]}-{extra.get('mode', 'serve')}.json"
        path.write_text(json.dumps(job))
        return path

    def _spawn(self, workload: Workload, baseline: bool) -> CandidateProcess:
        job = self._job(workload, baseline=baseline)
        return CandidateProcess(
            [sys.executable, "-m", "evaluator.child", str(job)],
            env=child_env(self.workdir, [str(REPO_ROOT)]),
            cwd=self.workdir,
            log_dir=self.workdir / "logs",
            name=f"candidate-{workload.uuid[:8]}",
            jail=self.jail,
            writable=[self.exchange],
            readable=[self.workdir],
            gpu=self.opts.device_type == "cuda",
        )

    def _absorb_limits(self, events: dict[str, int] | None) -> None:
        for key, value in (events or {}).items():
            self.limit_events[key] = self.limit_events.get(key, 0) + value

    def _run_workload(self, workload: Workload, timing: bool) -> WorkloadResult:
        result = self._workload_result(workload, Status.PASSED)
        result.correctness = Correctness(relative_norm_bound=self._rel_norm_bound())
        started = time.monotonic()
        seeds = [derive_seed(self.run_seed, workload.uuid, "trial", k) for k in range(self.opts.trials)]
        timing_seeds = [derive_seed(self.run_seed, workload.uuid, "timing", k) for k in range(self.opts.timing_sets)]
        # References first, before the candidate exists: a candidate that grabs all GPU memory cannot starve them.
        refs = [self._reference_outputs(workload, s) for s in seeds]
        timing_refs = [self._reference_outputs(workload, s) for s in timing_seeds] if timing else []
        deadline = time.monotonic() + self.opts.timeout_s
        child = self._spawn(workload, baseline=timing)
        try:
            self._expect(child, deadline, "ready")
            child.send({"cmd": "trials", "seeds": seeds})
            comparisons: list[Comparison] = []
            for k in range(len(seeds)):
                msg = self._expect(child, deadline, "trial")
                if msg.get("index") != k:
                    raise _ChannelViolation(f"expected trial {k + 1}, got a message for trial {msg.get('index')!r}")
                if not isinstance(msg.get("inputs_modified"), list):
                    raise _ChannelViolation("a trial message without its list of modified inputs")
                if msg["inputs_modified"]:
                    result.correctness.inputs_modified = list(msg["inputs_modified"])
                    result.status = Status.INCORRECT_NUMERICAL
                    result.message = f"run modified its input(s) {', '.join(msg['inputs_modified'])} (trial {k + 1})"
                    return result
                comparison = self._compare(workload, msg["outputs"], refs[k])
                comparisons.append(comparison)
                result.correctness.trials = k + 1
                if not comparison.ok:
                    _fill_correctness(result.correctness, comparison)
                    result.status, result.message = comparison.status, f"trial {k + 1}: {comparison.message}"
                    return result
            _fill_correctness(result.correctness, worst(comparisons))
            refs.clear()
            if timing:
                t = time.monotonic()
                self._report("timing", f"{_axes(workload)}: {self.opts.warmup} warm-up + {self.opts.iters} timed calls")
                self._time(child, workload, result, deadline, timing_seeds, timing_refs)
                self.timing_seconds[workload.uuid] = time.monotonic() - t
            child.send({"cmd": "exit"})
            if result.status == Status.PASSED:
                bye = self._expect(child, deadline, "bye")
                if bye.get("sent") != child.received - 1:
                    raise _ChannelViolation(
                        f"{child.received - 1} messages arrived but the evaluator's side sent {bye.get('sent')}"
                    )
        except TimeoutError:
            child.kill()
            result.status = Status.TIMEOUT
            result.message = (
                f"the candidate process exceeded the {self.opts.timeout_s:g} s wall-clock limit; its process group "
                "was killed"
            )
        except _ChannelViolation as exc:
            child.kill()
            result.status = Status.RUNTIME_ERROR
            result.message = f"forged or out-of-order message on the result channel: {exc}"
        except _CandidateError as exc:
            result.status = Status.RUNTIME_ERROR
            result.message = str(exc)
        except ChildDied as exc:
            code = child.wait(5)
            result.status = Status.RUNTIME_ERROR
            if child.flooded:
                result.message = (
                    f"the candidate process was killed: it wrote more than {child.stdout.limit} bytes to "
                    f"{child.flooded}"
                )
            else:
                sandboxed = self.jail is not None and self.jail.mode == "bubblewrap"
                result.message = f"the candidate process died ({_exit_text(code, sandboxed)}): {exc}"
        finally:
            child.close(grace_s=10.0)
            self._absorb_limits(child.limit_events)
            if child.limit_events.get("pids_max_hit"):
                note = "the candidate hit the sandbox's process limit"
                result.message = f"{result.message}; {note}" if result.message else note
            if child.limit_events.get("oom_kill"):
                note = "the sandbox's host-memory limit killed a candidate process"
                result.message = f"{result.message}; {note}" if result.message else note
            result.stdout_tail, result.stderr_tail = child.tails()
            result.seconds = round(time.monotonic() - started, 3)
            for f in self.exchange.glob("*.bin"):
                f.unlink(missing_ok=True)
            refs.clear()
            timing_refs.clear()
        return result

    def _expect(self, child: CandidateProcess, deadline: float, event: str) -> dict[str, Any]:
        msg = child.receive(deadline)
        if msg.get("event") == "error":
            if msg.get("stage") == "setup":  # the evaluator's own code failed before the candidate was loaded
                raise EnvironmentProblem(
                    f"the candidate process could not start: {msg.get('type')}: {msg.get('message')}"
                )
            raise _CandidateError(_describe_error(msg))
        if msg.get("event") != event:
            raise _ChannelViolation(f"expected '{event}' from the candidate process, got {str(msg)[:200]}")
        return msg

    def _rel_norm_bound(self) -> float:
        return float(self.task.rel_norm_bound or DEFAULT_REL_NORM_BOUND)

    def _reference_outputs(self, workload: Workload, seed: int) -> tuple[Any, ...]:
        torch = self.torch
        with torch.no_grad():
            inputs = make_inputs(self.task.definition, workload, seed, device=str(self.device), derive=self.derive)
            out = as_output_tuple(self.reference(*inputs))
        if len(out) != len(self.task.definition.outputs):
            raise EnvironmentProblem(
                f"the reference of {self.task.name} returned {len(out)} outputs, the definition declares "
                f"{len(self.task.definition.outputs)}"
            )
        return out

    def _compare(self, workload: Workload, files: list[dict[str, Any]], refs: tuple[Any, ...]) -> Comparison:
        import numpy as np

        torch = self.torch
        definition = self.task.definition
        comparisons = []
        if (
            not isinstance(files, list)
            or len(files) != len(definition.outputs)
            or not all(isinstance(f, dict) for f in files)
        ):
            raise _ChannelViolation("a result message with a malformed list of outputs")
        for spec, ref, info in zip(definition.outputs, refs, files, strict=True):
            expected_shape = tuple(definition.shape_of(spec, workload.axes))
            expected_dtype = torch_dtype(spec.dtype)
            if info.get("dtype") != str(expected_dtype).removeprefix("torch."):
                return Comparison(
                    Status.INCORRECT_DTYPE, f"{spec.name}: dtype {info.get('dtype')}, expected {spec.dtype}"
                )
            path = Path(str(info.get("path", "")))
            if path.parent != self.exchange or not path.name.endswith(f"_{spec.name}.bin"):
                raise _ChannelViolation(f"output file {str(path)[:200]} is not one the evaluator asked for")
            raw = np.fromfile(path, dtype=np.uint8)
            itemsize = torch.empty(0, dtype=expected_dtype).element_size()
            if raw.size != math.prod(expected_shape) * itemsize or list(info.get("shape", [])) != list(expected_shape):
                return Comparison(
                    Status.INCORRECT_SHAPE, f"{spec.name}: shape {info.get('shape')}, expected {list(expected_shape)}"
                )
            out = torch.from_numpy(raw).view(expected_dtype).reshape(expected_shape)
            kwargs = {
                "name": spec.name,
                "expected_shape": expected_shape,
                "expected_dtype": expected_dtype,
                "atol": self.task.atol,
                "rtol": self.task.rtol,
                "rel_norm_bound": self._rel_norm_bound(),
            }
            try:
                comparisons.append(compare_output(out, ref, device=self.device, **kwargs))
            except torch.cuda.OutOfMemoryError:
                # The candidate process may still hold most of the GPU's memory: compare on the host instead.
                comparisons.append(compare_output(out, ref.cpu(), device=torch.device("cpu"), **kwargs))
        return worst(comparisons)

    def _time(
        self,
        child: CandidateProcess,
        workload: Workload,
        result: WorkloadResult,
        deadline: float,
        seeds: list[int],
        refs: list[tuple[Any, ...]],
    ) -> None:
        from evaluator import envinfo

        v = self.verdict
        uuid = v.environment.gpu_uuid if v.environment else None
        before = envinfo.sm_clock_mhz(uuid)
        pre_seeds = [derive_seed(self.run_seed, workload.uuid, "timing-pre", k) for k in range(len(seeds))]
        child.send(
            {
                "cmd": "timing",
                "seeds": seeds,
                "pre_seeds": pre_seeds,
                "warmup": self.opts.warmup,
                "iters": self.opts.iters,
            }
        )
        msg = self._expect(child, deadline, "timing")
        after = envinfo.sm_clock_mhz(uuid)
        if v.environment is not None:
            if v.environment.sm_clock_mhz_before is None:
                v.environment.sm_clock_mhz_before = before
            v.environment.sm_clock_mhz_after = after
        if msg.get("fallback_reason") and msg["fallback_reason"] not in v.notes:
            v.notes.append(msg["fallback_reason"])
        # The outputs of the timed calls must be right too.
        for k, (ref, files) in enumerate(zip(refs, msg["outputs"], strict=True)):
            comparison = self._compare(workload, files, ref)
            assert result.correctness is not None
            result.correctness.timed_outputs_checked = k + 1
            if not comparison.ok:
                result.status = comparison.status
                result.message = f"output of a timed call (input set {k + 1}) is wrong: {comparison.message}"
                return
        series = msg["series"]
        cand = series["candidate"]
        perf = Performance(baseline=self.task.baselines[0].id)
        perf.candidate = summarize(
            cand["samples_ms"],
            method=msg["method"],
            warmup=self.opts.warmup,
            kernels_per_call=_mean(cand["activities"]),
        )
        if min(cand["activities"], default=0) == 0 and msg["method"] == "cupti":
            v.notes.append(f"workload {workload.uuid}: some timed calls recorded no GPU activity")
        perf.latency_ms = perf.candidate.median_ms
        if "baseline" in series:
            base = series["baseline"]
            perf.reference = summarize(
                base["samples_ms"],
                method=msg["method"],
                warmup=self.opts.warmup,
                kernels_per_call=_mean(base["activities"]),
            )
            perf.reference_latency_ms = perf.reference.median_ms
            if perf.candidate.median_ms > 0:
                perf.speedup_factor = perf.reference.median_ms / perf.candidate.median_ms
                lo, hi = bootstrap_speedup(base["samples_ms"], cand["samples_ms"])
                if math.isfinite(lo) and math.isfinite(hi):
                    perf.speedup_ci95 = [lo, hi]
        flops = self.task.flops_for(workload)
        if perf.candidate.median_ms > 0 and flops:
            perf.tflops = flops / (perf.candidate.median_ms * 1e-3) / 1e12
            peak = v.environment.peak_bf16_tflops if v.environment else None
            if peak:
                perf.fraction_of_peak = perf.tflops / peak
        result.performance = perf

    # ------------------------------------------------------------------ arch stage

    def _run_arch(self, correctness_passed: bool) -> None:
        v = self.verdict
        rec = self._stage("arch")
        t = time.monotonic()
        if v.sass is None or v.sass.target_count == 0:
            rec.state, rec.message = StageState.PASSED, "absent: decided from static SASS"
            return
        if not correctness_passed:
            v.arch_check = ArchCheck(ArchStatus.NOT_REQUESTED, reason="correctness did not pass; not profiled")
            rec.state, rec.message = StageState.SKIPPED, "correctness did not pass"
            return
        workload = self._arch_workload()
        self._report("arch", f"Nsight Compute on {_axes(workload)}")
        check = self._profile(workload)
        check.workload = workload.uuid
        result = next(w for w in v.workloads if w.uuid == workload.uuid)
        median = result.performance.candidate.median_ms if result.performance and result.performance.candidate else None
        ncu_mod.compare_timers(check, median)
        check.seconds = round(time.monotonic() - t, 3)
        v.arch_check = check
        rec.seconds = check.seconds
        rec.state = StageState.PASSED if check.status == ArchStatus.VERIFIED else StageState.FAILED
        rec.message = f"{check.status.value}: {check.reason}"
        self._report("arch", rec.message)

    def _unsandboxed_profile_allowed(self) -> bool:
        import os

        if self.opts.allow_unsandboxed_profile is not None:
            return self.opts.allow_unsandboxed_profile
        return os.environ.get("EVALUATOR_ALLOW_UNSANDBOXED_PROFILE", "").strip().lower() in ("1", "true", "yes")

    def _arch_workload(self) -> Workload:
        """The headline workload if it was evaluated, else the evaluated one with the most FLOPs."""
        evaluated = {w.uuid for w in self.verdict.workloads}
        if self.task.headline_workload in evaluated:
            return self.task.workload(self.task.headline_workload)
        return max((w for w in self.workloads if w.uuid in evaluated), key=self.task.flops_for)

    def _profile(self, workload: Workload) -> ArchCheck:
        v = self.verdict
        assert v.sass is not None
        flops = self.task.flops_for(workload)
        ncu = ncu_mod.find_ncu()

        def error(reason: str) -> ArchCheck:
            return ncu_mod.decide_arch(arch=self.arch, sass=v.sass, kernels=None, task_flops=flops, error=reason)

        if ncu is None:
            return error("Nsight Compute (ncu) is not installed on this host")
        profile_dir = self.workdir / "profile"  # the one folder the profiled process may write (report, events)
        profile_dir.mkdir(exist_ok=True)
        report = profile_dir / "arch-profile.ncu-rep"
        result_path = profile_dir / "arch-profile-result.jsonl"
        result_path.unlink(missing_ok=True)
        job = self._job(
            workload,
            mode="profile",
            profile_seed=derive_seed(self.run_seed, workload.uuid, "profile"),
            result_path=str(result_path),
        )
        target = [sys.executable, "-m", "evaluator.child", str(job)]
        env = child_env(self.workdir, [str(REPO_ROOT)])
        (self.workdir / "logs").mkdir(exist_ok=True)
        ncu_root = Path(ncu).resolve().parent
        jail = self.jail

        def profile(kernel_names: list[str] | None = None) -> tuple[list[str], Any]:
            cmd = ncu_mod.ncu_profile_command(ncu, report, target, kernel_names=kernel_names)
            run = run_group(
                cmd,
                timeout_s=self.opts.arch_timeout_s,
                env=env,
                cwd=self.workdir,
                jail=jail,
                writable=[profile_dir],
                readable=[self.workdir, ncu_root],
                gpu=True,
            )
            self._absorb_limits(run.limit_events)
            return cmd, run

        cmd, run = profile()
        (self.workdir / "logs" / "ncu.log").write_text(run.output)
        if (
            jail is not None
            and jail.mode == "bubblewrap"
            and not run.timed_out
            and "ERR_NVGPUCTRPERM" in run.output
            and self._unsandboxed_profile_allowed()
        ):
            # The driver restricts counters to CAP_SYS_ADMIN, which the sandbox drops: profile without bubblewrap.
            jail = Jail("unsandboxed", "profiling counters need CAP_SYS_ADMIN", jail.limits)
            v.notes.append(
                "arch: Nsight Compute was refused counter access inside the sandbox (ERR_NVGPUCTRPERM); the profiled "
                "run was repeated outside bubblewrap (limits, cgroup and clean environment kept), as allowed"
            )
            if v.sandbox is not None:
                v.sandbox.limits["profile"] = "outside bubblewrap: counters need CAP_SYS_ADMIN"
            result_path.unlink(missing_ok=True)
            cmd, run = profile()
            (self.workdir / "logs" / "ncu-unsandboxed.log").write_text(run.output)
        if not run.timed_out and "No kernels were profiled" in run.output and v.sass.kernels:
            # NVTX filtering matched nothing on this host: filter on the kernel names from the SASS instead.
            v.notes.append("ncu: NVTX range filter profiled nothing; used a kernel-name filter instead")
            result_path.unlink(missing_ok=True)
            cmd, run = profile(v.sass.kernels)
            (self.workdir / "logs" / "ncu-fallback.log").write_text(run.output)
        if run.timed_out:
            check = error(f"the Nsight Compute run exceeded {self.opts.arch_timeout_s:g} s and was killed")
            check.command = cmd
            return check
        events = _read_events(result_path)
        reason = ncu_mod.ncu_error_reason(run.output)
        failed = next((e for e in events if e.get("event") == "error"), None)
        if failed is not None:
            reason = f"the profiled call failed: {_describe_error(failed)}"
        elif not any(e.get("event") == "done" for e in events) and reason is None:
            reason = f"the profiled process did not finish (ncu exit status {run.returncode})"
        if reason is None and not report.is_file():
            reason = f"ncu wrote no report (exit status {run.returncode})"
        if reason is not None:
            check = error(reason)
            check.command = cmd
            return check
        source_csv, raw_csv = ncu_mod.read_report(ncu, report)
        (self.workdir / "logs" / "ncu-source.csv").write_text(source_csv)
        try:
            kernels = ncu_mod.parse_source_page(source_csv)
        except ncu_mod.NcuParseError as exc:
            check = error(f"unreadable source page: {exc}")
            check.command = cmd
            return check
        check = ncu_mod.decide_arch(arch=self.arch, sass=v.sass, kernels=kernels, task_flops=flops)
        (self.workdir / "logs" / "ncu-raw.csv").write_text(raw_csv)
        try:
            times = ncu_mod.parse_raw_metrics(raw_csv)
            check.ncu_gpu_time_ms = sum(t for _, t in times) if times else None
        except ncu_mod.NcuParseError as exc:
            v.notes.append(f"ncu gpu__time_duration unreadable: {exc}")
        check.command = cmd
        return check


class _CandidateError(RuntimeError):
    """The candidate process reported a failure of the candidate's code (load, call or synchronise)."""


class _ChannelViolation(_CandidateError):
    """A message that the evaluator's side of the candidate process did not send: out of order, extra, or
    pointing outside the exchange folder. Candidate code shares that process and can write to the channel."""


def _describe_error(msg: dict[str, Any]) -> str:
    text = str(msg.get("message", "")).strip()
    stage = msg.get("stage", "")
    lowered = text.lower()
    if "out of memory" in lowered or "cudaerrormemoryallocation" in lowered:
        prefix = "GPU out of memory"
    elif stage == "load":
        prefix = "the library failed to load"
    else:
        prefix = "the candidate failed"
    return f"{prefix} ({msg.get('type', 'error')}): {text[:2000]}"


def _exit_text(code: int | None, sandboxed: bool = False) -> str:
    if code is None:
        return "still running, killed"
    # bubblewrap's init reports a child killed by signal N as exit status 128 + N.
    signum = -code if code < 0 else code - 128 if sandboxed and 128 < code < 160 else 0
    if signum:
        import signal

        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            return f"killed by signal {signum}"
    return f"exit status {code}"


def _fill_correctness(c: Correctness, comparison: Comparison) -> None:
    c.max_absolute_error = comparison.max_absolute_error
    c.max_relative_error = comparison.max_relative_error
    c.relative_norm_error = comparison.relative_norm_error
    c.failing_elements = comparison.failing_elements
    c.total_elements = comparison.total_elements
    c.nan_count = comparison.nan_count
    c.inf_count = comparison.inf_count


def _read_events(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def _axes(workload: Workload) -> str:
    return ", ".join(f"{k}={v}" for k, v in workload.axes.items()) or workload.uuid[:8]


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _fast_tmp() -> str | None:
    """The shared-memory tmpfs when it has room: outputs pass through it, hundreds of MB for large workloads.

    Containers often mount a 64 MiB /dev/shm; then the default temporary folder (disk) is used instead, since a
    full exchange folder would look like a candidate failure.
    """
    shm = Path("/dev/shm")  # noqa: S108 - mkdtemp makes a private 0700 folder inside it
    try:
        return str(shm) if shm.is_dir() and shutil.disk_usage(shm).free > 8 * 1024**3 else None
    except OSError:
        return None


def _outside_finding(paths: list[str]) -> PolicyFinding:
    """The finding for files nvcc opened outside the include roots, naming them as nvcc did (the path the
    source wrote, not where a link leads), never their content."""
    named = ", ".join(f"'{p[:120]}'" for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return PolicyFinding("include-path", f"the compiler opened files outside the allowed include roots: {named}")
