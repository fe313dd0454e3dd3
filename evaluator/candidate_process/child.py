"""The candidate process: `python -m evaluator.candidate_process.child JOB.json --fd-in R --fd-out W`.

Started fresh for every workload by the trusted parent (evaluator/measure/candidate.py) in its own process group. It
loads the candidate library and answers the parent's rounds: every call runs on inputs the parent drew into the
memory it lends (evaluator/measure/lent_calls.py, evaluator/both_sides/shared_outputs.py) and writes its outputs there, where the
parent captures and compares them. No seed and no reference output ever comes here.
Messages go over the two pipes the parent passed; the candidate's own prints land in captured stdout/stderr.

In profile mode (under Nsight Compute) it makes one call inside the NVTX range the profiler filters on. In
`protocol.BASELINE_MODE` it is the trusted-baseline process: the same machinery with no submission loaded.

The submission runs in this interpreter: everything this process sends is a hint the parent checks
(evaluator/candidate_process/__init__.py).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.both_sides import protocol


class Session:
    def __init__(self, job: dict[str, Any], send: Any, progress: dict[str, str]) -> None:
        import torch

        from evaluator.both_sides.inputs import load_baseline
        from evaluator.both_sides.taskdata import load_task

        self.job, self.send = job, send
        self.torch = torch
        # device_type "cpu" exists so that CI can exercise this whole path on machines without a GPU.
        self.cuda = job.get("device_type", "cuda") == "cuda"
        self.device = torch.device("cuda", int(job.get("device", 0))) if self.cuda else torch.device("cpu")
        if self.cuda:
            torch.cuda.set_device(self.device)
        else:
            # One thread: a CPU library call timed here must not wait at an OpenMP barrier for a thread the host
            # descheduled (15-30 ms a call on a loaded 2-core machine, where the call itself takes microseconds).
            torch.set_num_threads(1)
        self.task = load_task(Path(job["task_dir"]))
        self.definition = self.task.definition
        self.workload = self.task.workload(job["workload"])
        from evaluator.both_sides.inputs import input_deriver

        self.derive = input_deriver(self.task)
        torch.empty(1, device=self.device)  # create the CUDA context before the candidate's code is loaded
        # Every call's inputs and outputs: slots of memory the parent owns (evaluator/both_sides/shared_outputs.py), mapped
        # here before the candidate's code is loaded; the parent draws the inputs and captures the outputs itself.
        self.lent_inputs: list[list[Any]] = []
        self.slots: list[list[Any]] = []
        self._slots_mapping: Any = None
        if job.get("shared_outputs"):
            from evaluator.both_sides.shared_outputs import open_slots

            views, self._slots_mapping = open_slots(
                torch, job["shared_outputs"], "cuda" if self.cuda else "cpu", int(job.get("device", 0))
            )
            lent = int(job["shared_outputs"].get("inputs", 0))
            self.lent_inputs = [v[:lent] for v in views]
            self.slots = [v[lent:] for v in views]
        # Before the candidate's code exists: the activity records (kernels, the functions every module defines)
        # and the persisting-L2 limit as the context has it, so that what the candidate changes shows.
        self.timer: Any = None
        self.timer_fallback = ""
        from evaluator.candidate_process.l2control import L2Guard
        from evaluator.candidate_process.timing import HostTimer, l2_flusher, make_timer

        serving = job.get("mode") != "profile"
        self.l2 = L2Guard(enabled=self.cuda and serving)
        if serving:
            self.timer, self.timer_fallback = make_timer() if self.cuda else (HostTimer(), "")
        self.windows: dict[str, list[tuple[int, int]]] = {"trials": [], "timed": [], "batch": []}
        self.flush_l2: Callable[[], Any] = l2_flusher(self.device) if self.cuda and serving else (lambda: None)
        self.run: Callable[..., Any]  # the candidate's `run` (or, in the trusted baseline process, the library's)
        if job.get("mode") == protocol.BASELINE_MODE:
            # The trusted baseline process: no submission code is loaded. The library baseline is driven
            # through the same timed-call and batch machinery a candidate's run gets, on inputs drawn the same way.
            b = self.task.baselines[0]
            library_call = load_baseline(b.source, b.function, b.id)
            n_inputs = len(self.definition.inputs)
            self.run = lambda *args: library_call(*args[:n_inputs])
        self.module = None

    def load(self, progress: dict[str, str]) -> None:
        """Load the submission: from here on this process runs candidate code."""
        job = self.job
        # The language's loader (evaluator/languages.py), named in the job by the trusted parent: this process
        # never imports the registry, whose build side is trusted-only code.
        loader = importlib.import_module(job["loader"])
        loader.prepare()
        progress["stage"] = protocol.LOAD_STAGE  # from here on, failures are the candidate's: its code runs now
        cache = job.get("kernel_cache")
        self.module, self.run = loader.load(Path(job["library"]), Path(cache) if cache else None)

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _lent_args(self, slot: int) -> list[Any]:
        """A lent slot's call arguments in definition order: its tensors where the parent drew them, scalars from
        the workload (they need no seed)."""
        from evaluator.both_sides.inputs import scalar_input

        tensors = iter(self.lent_inputs[slot])
        args = []
        for spec in self.definition.inputs:
            value = scalar_input(spec, self.workload)
            args.append(next(tensors) if value is None else value)
        return args

    def round(self, receive: Any, round_: int, kind: str, calls: int, sampled: bool) -> None:
        """One round on the lent slots: idle until the parent has drawn the inputs and says `go`, then the calls
        as `kind` asks (evaluator/both_sides/protocol.py), then done."""
        if calls > len(self.slots):
            raise RuntimeError(f"a round of {calls} calls and {len(self.slots)} lent slots")
        self.l2.reset()
        self.sync()
        self.send(protocol.round_ready_event(round_))
        if protocol.command_name(receive()) != protocol.GO:
            raise RuntimeError("expected go")
        if kind == protocol.BATCH_ROUND:
            t0 = self.timer.now() if self.timer is not None else 0
            for k in range(calls):
                self.run(*self._lent_args(k), *self.slots[k])
            self.sync()
            t1 = self.timer.now() if self.timer is not None else 0
            self.windows["batch"].append((t0, t1))
        else:
            for k in range(calls):
                if kind == protocol.TIMED_ROUND:
                    self.l2.reset()
                    self.flush_l2()
                self.sync()
                t0 = self.timer.now() if self.timer is not None else 0
                self.run(*self._lent_args(k), *self.slots[k])
                self.sync()
                t1 = self.timer.now() if self.timer is not None else 0
                if kind == protocol.TRIAL_ROUND:
                    self.windows["trials"].append((t0, t1))
                elif sampled:
                    self.windows["timed"].append((t0, t1))
        self.send(protocol.round_done_event(round_))
        if protocol.command_name(receive()) != protocol.NEXT:
            raise RuntimeError("expected next after a round")

    def finish(self) -> None:
        """The in-process report: the sampled timed calls' GPU time, and every call's kernels."""
        timer = self.timer
        samples: list[float] = []
        activities: list[int] = []
        launches: dict[str, list[list[Any]]] = {"timed": [], "trials": [], "batch": []}
        if timer is not None:
            timer.flush()
            for part in ("trials", "timed", "batch"):
                for a, b in self.windows[part]:
                    ms, count, kernels = timer.window(a, b)
                    launches[part].append(_wire(kernels))
                    if part == "timed":
                        samples.append(ms)
                        activities.append(count)
        self.send(
            protocol.timing_event(
                timer.method if timer is not None else "cuda_events",
                self.timer_fallback,
                {"candidate": {"samples_ms": samples, "activities": activities}},
                launches,
                [[m, name] for m, name in (timer.functions if timer is not None else [])],
                {"changed_bytes": self.l2.changed_bytes, "error": self.l2.error},
                [list(f) for f in sorted(timer.footprints)[:256]] if timer is not None else [],
                _images(timer),
            )
        )

    def profile(self, seed: int) -> None:
        """One call inside the NVTX range that Nsight Compute is told to profile. Its inputs come from a seed
        used for this call only (nothing else is drawn from it), and its outputs are not compared."""
        from evaluator.both_sides.inputs import alloc_outputs, make_inputs

        torch = self.torch
        inputs = make_inputs(self.definition, self.workload, seed, device=str(self.device), derive=self.derive)
        outputs = alloc_outputs(self.definition, self.workload, device=str(self.device))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("ptxbench_candidate")
        self.run(*inputs, *outputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def _images(timer: Any) -> list[list[Any]] | None:
    """[module id, sha256 of its image] of every module loaded since the timer started; None: no module records
    here."""
    modules = timer.modules if timer is not None else None
    return None if modules is None else [[m, digest] for m, digest in sorted(modules.items())]


def _wire(launches: list[Any]) -> list[list[Any]]:
    return [[name, list(grid), list(block)] for name, grid, block in launches]


def leave_profiler_channel(path: Path) -> None:
    """Under Nsight Compute this process inherits the profiler's stdout and stderr, the channel the parent reads
    the profiler's own lines from. Before any candidate code runs, both move to a file of this process's own, so
    nothing the candidate prints or writes lands there (the pipe belongs to the parent's user, so it cannot be
    reopened through /proc by the sandbox's user either)."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.candidate_process.child")
    parser.add_argument("job")
    parser.add_argument("--fd-in", type=int)
    parser.add_argument("--fd-out", type=int)
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    if job.get("mode") == "profile" and job.get("output_path"):
        leave_profiler_channel(Path(job["output_path"]))

    out = os.fdopen(args.fd_out, "wb", buffering=0) if args.fd_out is not None else None
    result_path = job.get("result_path")

    sent = [0]

    def send(message: dict[str, Any]) -> None:
        sent[0] += 1
        if out is not None:
            out.write(protocol.encode(message))
        elif result_path:
            with open(result_path, "ab") as fh:
                fh.write(protocol.encode(message))

    stage = protocol.SETUP_STAGE
    progress = {"stage": protocol.SETUP_STAGE}  # Session.load moves it to "load" before the submission's code runs
    try:
        session = Session(job, send, progress)
        if job.get("mode") == "profile":
            session.load(progress)
            stage = "profile"
            session.profile(int(job["profile_seed"]))
            send(protocol.done_event())
            return 0
        commands = os.fdopen(args.fd_in, "rb")

        def receive() -> dict[str, Any]:
            line = commands.readline()
            if not line:
                raise RuntimeError("the evaluator closed the command channel")
            return protocol.decode_command(line)

        if job.get("mode") != protocol.BASELINE_MODE:
            # Set up, the submission not loaded: the parent times the library baseline meanwhile and says `load`
            # once that process is gone (evaluator/measure/candidate.py).
            send(protocol.standby_event())
            cmd = receive()
            if protocol.command_name(cmd) != protocol.LOAD:
                raise RuntimeError(f"expected 'load', got {protocol.command_name(cmd)!r}")
            session.load(progress)
        send(protocol.ready_event(os.getpid()))
        stage = "command"

        while True:
            cmd = receive()
            name = protocol.command_name(cmd)
            if name == protocol.ROUND:
                round_, kind, calls, sampled = protocol.round_args(cmd)
                stage = "trials" if kind == protocol.TRIAL_ROUND else "timing"
                session.round(receive, round_, kind, calls, sampled)
            elif name == protocol.FINISH:
                session.finish()
            elif name == protocol.EXIT:
                break
            else:
                raise RuntimeError(f"unexpected command {name!r}")
        # How many messages this side sent: the parent compares it with what it read, so a message that candidate
        # code wrote into the channel shows up.
        send(protocol.bye_event(sent[0]))
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure of candidate code is reported, then we exit
        if stage == protocol.SETUP_STAGE:  # setup and load: `progress` says whether the submission had been loaded
            stage = progress["stage"]
        send(protocol.error_event(stage, type(exc).__name__, str(exc), traceback.format_exc()))
        sys.stderr.write(traceback.format_exc())
        return 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a faulted CUDA context can hang or crash in destructors.
    os._exit(code)
