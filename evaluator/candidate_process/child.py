"""The candidate process: `python -m evaluator.candidate_process.child JOB.json --fd-in R --fd-out W`.

Started fresh for every workload by the trusted parent (evaluator/candidate.py) in its own process group. It
loads the candidate library, makes its inputs from the per-trial seeds it is sent (the run seed never comes
here), poisons the outputs, calls `run`, synchronises, checks that inputs are unchanged, and leaves the
outputs as raw files in the exchange folder for the parent to compare. Reference outputs never exist here.
Messages go over the two pipes the parent passed; the candidate's own prints land in captured stdout/stderr.

In profile mode (under Nsight Compute) it makes one call inside the NVTX range the profiler filters on. In
`protocol.BASELINE_MODE` it is the trusted-baseline process: the same machinery with no submission loaded.

The submission runs in this interpreter: everything this process sends is a hint the parent checks
(evaluator/candidate_process/__init__.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator import protocol


class OutputFiles:
    """Writes the outputs the parent asks to see as raw files in the exchange folder.

    One pinned host buffer per size (the device-to-host copy runs at full speed) and files written in place
    under a name that is reused: after the first save the file's pages exist, so a save costs one copy out of
    the GPU and one into the page cache (a new 117 MB file on /dev/shm cost ~140 ms, mostly zeroing pages).
    """

    def __init__(self, torch: Any, pinned: bool) -> None:
        self.torch, self.pinned = torch, pinned
        self.buffers: dict[int, Any] = {}

    def save(self, tensor: Any, path: Path) -> dict[str, Any]:
        torch = self.torch
        t = tensor.detach().contiguous()
        flat = t.reshape(-1)
        raw = flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8, device=t.device)
        n = raw.numel()
        buf = self.buffers.get(n)
        if buf is None:
            buf = self.buffers[n] = torch.empty(n, dtype=torch.uint8, pin_memory=self.pinned and n > 0)
        buf.copy_(raw)
        with open(path, "r+b" if path.exists() else "wb", buffering=0) as fh:
            fh.write(memoryview(buf.numpy()))
            fh.truncate(n)
        return {"path": str(path), "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}


class Session:
    def __init__(self, job: dict[str, Any], send: Any, progress: dict[str, str]) -> None:
        import torch

        from evaluator.inputs import load_baseline
        from evaluator.taskdata import load_task

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
        self.exchange = Path(job["exchange_dir"])
        self.files = OutputFiles(torch, pinned=self.cuda)
        from evaluator.inputs import input_deriver

        self.derive = input_deriver(self.task)
        self.baseline = None
        if job.get("baseline"):
            b = self.task.baselines[0]
            self.baseline = load_baseline(b.source, b.function, b.id)
        torch.empty(1, device=self.device)  # create the CUDA context before the candidate's code is loaded
        # The batch calls' outputs: slots of memory the parent owns (evaluator/shared_outputs.py), mapped here
        # before the candidate's code is loaded; the parent captures them itself before its clock stops.
        self.slots: list[list[Any]] | None = None
        self.lent_inputs: list[list[Any]] = []  # per slot, the tensor inputs the parent draws there (if it lends)
        self._slots_mapping: Any = None
        if job.get("shared_outputs"):
            from evaluator.shared_outputs import open_slots

            views, self._slots_mapping = open_slots(
                torch, job["shared_outputs"], "cuda" if self.cuda else "cpu", int(job.get("device", 0))
            )
            lent = int(job["shared_outputs"].get("inputs", 0))
            self.lent_inputs = [v[:lent] for v in views] if lent else []
            self.slots = [v[lent:] for v in views]
        # Before the candidate's code exists: the activity records (kernels, the functions every module defines)
        # and the persisting-L2 limit as the context has it, so that what the candidate changes shows.
        self.timer: Any = None
        self.timer_fallback = ""
        from evaluator.candidate_process.l2control import L2Guard
        from evaluator.candidate_process.timing import HostTimer, make_timer

        serving = job.get("mode") != "profile"
        self.l2 = L2Guard(enabled=self.cuda and serving)
        if serving:
            self.timer, self.timer_fallback = make_timer() if self.cuda else (HostTimer(), "")
        self.trial_windows: list[tuple[int, int]] = []
        self.run: Callable[..., Any]  # the candidate's `run` (or, in the trusted baseline process, the library's)
        if job.get("mode") == protocol.BASELINE_MODE:
            # The trusted baseline process: no submission code is loaded. The library baseline is driven
            # through the same timed-call and batch machinery a candidate's run gets, on inputs drawn the same way.
            b = self.task.baselines[0]
            library_call = load_baseline(b.source, b.function, b.id)
            n_inputs = len(self.definition.inputs)
            self.module = None
            self.run = lambda *args: library_call(*args[:n_inputs])
            return
        if job.get("language") == "triton":
            import triton  # noqa: F401 - imported before the candidate's code runs (a missing install is setup's)

            from evaluator.candidate_process.triton_runtime import load_triton

            progress["stage"] = protocol.LOAD_STAGE  # the module body is the candidate's code
            self.module = None
            self.run = load_triton(Path(job["library"]), Path(job["triton_cache"]))
            return
        import tvm_ffi

        progress["stage"] = (
            protocol.LOAD_STAGE
        )  # from here on, failures are the candidate's (its static initialisers run now)
        self.module = tvm_ffi.load_module(job["library"])
        self.run = self.module["run"] if not hasattr(self.module, "run") else self.module.run

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _inputs(self, seed: int) -> list[Any]:
        from evaluator.inputs import make_inputs

        return make_inputs(self.definition, self.workload, seed, device=str(self.device), derive=self.derive)

    def _outputs(self) -> list[Any]:
        from evaluator.inputs import alloc_outputs

        return alloc_outputs(self.definition, self.workload, device=str(self.device))

    def trials(self, seeds: list[int]) -> None:
        torch = self.torch
        for index, seed in enumerate(seeds):
            inputs = self._inputs(seed)
            saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            outputs = self._outputs()
            self.sync()
            start = time.monotonic()
            t0 = self.timer.now() if self.timer is not None else 0
            self.run(*inputs, *outputs)
            self.sync()
            t1 = self.timer.now() if self.timer is not None else 0
            seconds = time.monotonic() - start
            if self.timer is not None:
                self.trial_windows.append((t0, t1))
            modified = [
                spec.name
                for spec, before, after in zip(self.definition.inputs, saved, inputs, strict=True)
                if isinstance(after, torch.Tensor) and not torch.equal(before, after)
            ]
            files = [
                {"name": spec.name, **self.files.save(t, self.exchange / f"trial{index}_{spec.name}.bin")}
                for spec, t in zip(self.definition.outputs, outputs, strict=True)
            ]
            self.send(protocol.trial_event(index, files, modified, seconds))

    def _save_outputs(self, outputs: list[Any]) -> list[dict[str, Any]]:
        """A checked call's outputs, always into the same files: the parent has read them before it asks again."""
        return [
            {"name": spec.name, **self.files.save(t, self.exchange / f"call_{spec.name}.bin")}
            for spec, t in zip(self.definition.outputs, outputs, strict=True)
        ]

    def _refill(self, inputs: list[Any], seed: int) -> None:
        """Draw call inputs from `seed` into the existing tensors (same buffers, values never seen before)."""
        for dst, src in zip(inputs, self._inputs(seed), strict=True):
            if isinstance(dst, self.torch.Tensor):
                dst.copy_(src)

    def _answer(self, receive: Any, index: int, outputs: list[Any]) -> None:
        """After a call returned: tell the parent, and save its outputs only if the parent asks for them."""
        self.send(protocol.called_event(index))
        command = receive()
        if protocol.command_name(command) == protocol.SAVE and protocol.index_arg(command) == index:
            self.send(protocol.saved_event(index, self._save_outputs(outputs)))
        elif protocol.command_name(command) != protocol.NEXT:
            raise RuntimeError(f"unexpected command {protocol.command_name(command)!r} after call {index}")

    def timing(
        self, receive: Any, call_seeds: list[int], recheck_seed: int, warmup: int, iters: int, sets: int
    ) -> None:
        """Timed calls on freshly drawn inputs, the re-check call, then batches the parent times with its clock.

        Every call draws its inputs from its own seed into input set i % sets outside the timed window, and its
        outputs are poisoned first. After each timed call the parent decides whether to look at its outputs;
        nothing here knows in advance which calls those are.
        """
        from evaluator.candidate_process.timing import l2_flusher, time_interleaved
        from evaluator.inputs import poison

        n = sets
        total = warmup + iters
        if len(call_seeds) != total:
            raise RuntimeError("timing command: one seed per call expected")
        pool = [(self._inputs(s), self._outputs()) for s in call_seeds[:n]]
        flush = l2_flusher(self.device) if self.cuda else (lambda: None)
        timer = self.timer

        def candidate(i: int) -> None:
            ins, outs = pool[i % n]
            self.run(*ins, *outs)

        calls = {"candidate": candidate}
        if self.baseline is not None:
            baseline = self.baseline

            def reference(i: int) -> None:
                baseline(*pool[i % n][0])

            calls["baseline"] = reference

        order: dict[int, str] = {}

        def before(name: str, i: int) -> None:
            if i not in order:  # the first of the two calls of round i: draw round i's inputs
                order[i] = name
                self._refill(pool[i % n][0], call_seeds[i])
            if name == "candidate":
                for t in pool[i % n][1]:
                    poison(t)
                self.l2.reset()

        def after(name: str, i: int) -> None:
            if name == "candidate" and i >= warmup:
                self._answer(receive, i, pool[i % n][1])

        series = time_interleaved(
            calls,
            warmup=warmup,
            iters=iters,
            flush_l2=flush,
            before_call=before,
            after_call=after,
            timer=timer,
            sync=self.sync,
        )
        # The re-check: one more call on fresh inputs after the timing loop, always compared by the parent.
        ins, outs = pool[total % n]
        self._refill(ins, recheck_seed)
        for t in outs:
            poison(t)
        self.l2.reset()
        flush()
        self.sync()
        self.run(*ins, *outs)
        self.sync()
        self._answer(receive, total, outs)
        batch_windows = self._batches(receive)
        launches: dict[str, list[list[Any]]] = {"timed": [], "trials": [], "batch": []}
        if timer is not None:
            timer.flush()
            launches["timed"] = [_wire(c) for c in series["candidate"].launches]
            launches["trials"] = [_wire(timer.window(a, b)[2]) for a, b in self.trial_windows]
            launches["batch"] = [_wire(timer.window(a, b)[2]) for a, b in batch_windows]
        self.send(
            protocol.timing_event(
                timer.method if timer is not None else "cuda_events",
                self.timer_fallback,
                {name: {"samples_ms": s.samples_ms, "activities": s.activities} for name, s in series.items()},
                launches,
                [[m, name] for m, name in (timer.functions if timer is not None else [])],
                {"changed_bytes": self.l2.changed_bytes, "error": self.l2.error},
                [list(f) for f in sorted(timer.footprints)[:256]] if timer is not None else [],
            )
        )

    def _batches(self, receive: Any) -> list[tuple[int, int]]:
        """Serve the parent's batch rounds until it says finish; returns each batch's timer window."""
        from evaluator.inputs import poison

        windows: list[tuple[int, int]] = []
        sets: list[tuple[list[Any], list[Any]]] = []
        while True:
            command = receive()
            name = protocol.command_name(command)
            if name == protocol.FINISH:
                return windows
            if name != protocol.BATCH:
                raise RuntimeError(f"unexpected command {name!r} during batches")
            round_, seeds = protocol.batch_args(command)
            lent = protocol.lent_calls(command)
            if lent:
                windows.append(self._lent_batch(receive, round_, lent))
                continue
            if self.slots is not None and len(seeds) > len(self.slots):
                raise RuntimeError(f"a batch of {len(seeds)} calls and {len(self.slots)} shared output slots")
            while len(sets) < len(seeds):
                outs = self.slots[len(sets)] if self.slots is not None else self._outputs()
                sets.append((self._inputs(seeds[len(sets)]), outs))
            for (ins, outs), seed in zip(sets, seeds, strict=False):
                self._refill(ins, seed)
                for t in outs:
                    poison(t)
            self.l2.reset()
            self.sync()
            self.send(protocol.batch_ready_event(round_))
            if protocol.command_name(receive()) != protocol.GO:
                raise RuntimeError("expected go")
            t0 = self.timer.now() if self.timer is not None else 0
            for ins, outs in sets[: len(seeds)]:
                self.run(*ins, *outs)
            self.sync()
            t1 = self.timer.now() if self.timer is not None else 0
            windows.append((t0, t1))
            self.send(protocol.batch_done_event(round_))
            command = receive()
            if protocol.command_name(command) == protocol.SAVE:
                j = protocol.index_arg(command)
                self.send(protocol.saved_event(j, self._save_outputs(sets[j][1])))
            elif protocol.command_name(command) != protocol.NEXT:
                raise RuntimeError("expected save or next after a batch")

    def _lent_args(self, slot: int) -> list[Any]:
        """A lent slot's call arguments in definition order: its tensors where the parent drew them, scalars from
        the workload (they need no seed)."""
        from evaluator.inputs import scalar_input

        tensors = iter(self.lent_inputs[slot])
        args = []
        for spec in self.definition.inputs:
            value = scalar_input(spec, self.workload)
            args.append(next(tensors) if value is None else value)
        return args

    def _lent_batch(self, receive: Any, round_: int, calls: int) -> tuple[int, int]:
        """One batch on inputs the parent draws into the lent slots after `batch_ready` (its clock running): this
        process is sent no seed, and its outputs go to the slots the parent captures from."""
        if self.slots is None or calls > len(self.lent_inputs):
            raise RuntimeError(f"a lent batch of {calls} calls and {len(self.lent_inputs)} lent slots")
        self.l2.reset()
        self.sync()
        self.send(protocol.batch_ready_event(round_))
        if protocol.command_name(receive()) != protocol.GO:
            raise RuntimeError("expected go")
        t0 = self.timer.now() if self.timer is not None else 0
        for k in range(calls):
            self.run(*self._lent_args(k), *self.slots[k])
        self.sync()
        t1 = self.timer.now() if self.timer is not None else 0
        self.send(protocol.batch_done_event(round_))
        if protocol.command_name(receive()) != protocol.NEXT:
            raise RuntimeError("expected next after a lent batch")
        return t0, t1

    def profile(self, seed: int) -> None:
        """One call inside the NVTX range that Nsight Compute is told to profile."""
        torch = self.torch
        inputs, outputs = self._inputs(seed), self._outputs()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("ptxbench_candidate")
        self.run(*inputs, *outputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


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
    session = None
    progress = {"stage": protocol.SETUP_STAGE}  # Session.__init__ moves it to "load" once trusted setup is done
    try:
        session = Session(job, send, progress)
        if job.get("mode") == "profile":
            stage = "profile"
            session.profile(int(job["profile_seed"]))
            send(protocol.done_event())
            return 0
        send(protocol.ready_event(os.getpid()))
        stage = "command"
        commands = os.fdopen(args.fd_in, "rb")

        def receive() -> dict[str, Any]:
            line = commands.readline()
            if not line:
                raise RuntimeError("the evaluator closed the command channel")
            return protocol.decode_command(line)

        while True:
            cmd = receive()
            name = protocol.command_name(cmd)
            if name == protocol.TRIALS:
                stage = "trials"
                session.trials(protocol.trials_args(cmd))
            elif name == protocol.TIMING:
                stage = "timing"
                session.timing(receive, *protocol.timing_args(cmd))
            elif name == protocol.EXIT:
                break
        # How many messages this side sent: the parent compares it with what it read, so a message that candidate
        # code wrote into the channel shows up.
        send(protocol.bye_event(sent[0]))
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure of candidate code is reported, then we exit
        if session is None:
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
