"""The candidate process: `python -m evaluator.child JOB.json --fd-in R --fd-out W`.

Started fresh for every workload by the trusted parent (evaluator.pipeline) in its own process group. It
loads the candidate library, makes its inputs from the per-trial seeds it is sent (the run seed never comes
here), poisons the outputs, calls `run`, synchronises, checks that inputs are unchanged, and leaves the
outputs as raw files in the exchange folder for the parent to compare. Reference outputs never exist here.
Messages go over the two pipes the parent passed; the candidate's own prints land in captured stdout/stderr.

In profile mode (under Nsight Compute) it makes one call inside the NVTX range the profiler filters on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from evaluator import protocol


def _save(tensor: Any, path: Path) -> dict[str, Any]:
    import torch

    t = tensor.detach().contiguous()
    flat = t.reshape(-1)
    raw = flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8, device=t.device)
    raw.cpu().numpy().tofile(path)
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
        self.task = load_task(Path(job["task_dir"]))
        self.definition = self.task.definition
        self.workload = self.task.workload(job["workload"])
        self.exchange = Path(job["exchange_dir"])
        from evaluator.inputs import input_deriver

        self.derive = input_deriver(self.task)
        self.baseline = None
        if job.get("baseline"):
            b = self.task.baselines[0]
            self.baseline = load_baseline(b.source, b.function, b.id)
        torch.empty(1, device=self.device)  # create the CUDA context before the candidate's code is loaded
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
            self.run(*inputs, *outputs)
            self.sync()
            seconds = time.monotonic() - start
            modified = [
                spec.name
                for spec, before, after in zip(self.definition.inputs, saved, inputs, strict=True)
                if isinstance(after, torch.Tensor) and not torch.equal(before, after)
            ]
            files = [
                {"name": spec.name, **_save(t, self.exchange / f"trial{index}_{spec.name}.bin")}
                for spec, t in zip(self.definition.outputs, outputs, strict=True)
            ]
            self.send(protocol.trial_event(index, files, modified, seconds))

    def timing(self, seeds: list[int], warmup: int, iters: int, pre_seeds: list[int] | None = None) -> None:
        from evaluator.inputs import poison
        from evaluator.timing import l2_flusher, make_timer, time_interleaved

        # With pre_seeds the sets start with other values, and the final `seeds` values are copied into the same
        # tensors just before the checked call: a result cached by pointer (or any state kept from earlier calls on
        # the same buffers) is then stale, and the check sees it.
        first = pre_seeds if pre_seeds and len(pre_seeds) == len(seeds) else seeds
        torch = self.torch
        sets = [(self._inputs(s), self._outputs()) for s in first]
        refreshed: set[int] = set() if first is not seeds else set(range(len(seeds)))
        flush = l2_flusher(self.device)
        timer, fallback_reason = make_timer()
        total = warmup + iters
        n = len(sets)

        def candidate(i: int) -> None:
            ins, outs = sets[i % n]
            self.run(*ins, *outs)

        calls = {"candidate": candidate}
        if self.baseline is not None:
            baseline = self.baseline

            def reference(i: int) -> None:
                baseline(*sets[i % n][0])

            calls["baseline"] = reference

        def before(name: str, i: int) -> None:
            # The last call on each input set is the one whose output the parent checks: poison it first.
            if i >= total - n and (i % n) not in refreshed:
                refreshed.add(i % n)
                for dst, src in zip(sets[i % n][0], self._inputs(seeds[i % n]), strict=True):
                    if isinstance(dst, torch.Tensor):
                        dst.copy_(src)
            if name == "candidate" and i >= total - n:
                for t in sets[i % n][1]:
                    poison(t)

        series = time_interleaved(calls, warmup=warmup, iters=iters, flush_l2=flush, before_call=before, timer=timer)
        if timer is not None:
            timer.close()
        files = [
            [
                {"name": spec.name, **_save(t, self.exchange / f"timing{k}_{spec.name}.bin")}
                for spec, t in zip(self.definition.outputs, outs, strict=True)
            ]
            for k, (_, outs) in enumerate(sets)
        ]
        self.send(
            protocol.timing_event(
                "cupti" if timer is not None else "cuda_events",
                fallback_reason,
                {name: {"samples_ms": s.samples_ms, "activities": s.activities} for name, s in series.items()},
                files,
            )
        )

    def profile(self, seed: int) -> None:
        """One call inside the NVTX range that Nsight Compute is told to profile."""
        torch = self.torch
        inputs, outputs = self._inputs(seed), self._outputs()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("ptxbench_candidate")
        self.run(*inputs, *outputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.child")
    parser.add_argument("job")
    parser.add_argument("--fd-in", type=int)
    parser.add_argument("--fd-out", type=int)
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())

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
        for line in commands:
            cmd = protocol.decode(line)
            name = protocol.command_name(cmd)
            if name == protocol.TRIALS:
                stage = "trials"
                session.trials(protocol.trials_args(cmd))
            elif name == protocol.TIMING:
                stage = "timing"
                seeds, warmup, iters, pre = protocol.timing_args(cmd)
                session.timing(seeds, warmup, iters, pre)
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
