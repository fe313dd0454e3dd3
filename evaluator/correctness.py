"""Reference outputs and their comparison with what a candidate process left in the exchange folder.

Only the trusted parent runs this: reference outputs never exist in the candidate process. Inputs are made
from the same per-trial seeds on both sides (evaluator.inputs), so the parent recomputes them here.
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.compare import DEFAULT_REL_NORM_BOUND, Comparison, compare_output, worst
from evaluator.errors import EnvironmentProblem
from evaluator.inputs import as_output_tuple, input_deriver, load_reference, make_inputs, torch_dtype
from evaluator.protocol import ChannelViolation
from evaluator.taskdata import Task, Workload
from evaluator.verdict import Correctness, Status


@dataclass
class Checker:
    """What comparing a candidate's outputs needs: the task, its reference, where outputs may lie."""

    task: Task
    device: Any  # torch.device of the references
    exchange: Path  # the only folder a candidate's output file may be in
    reference: Any  # the task's reference callable
    derive: Any  # the task's input deriver (evaluator.inputs.input_deriver)
    _buffers: dict[int, Any] = field(default_factory=dict)  # host buffers outputs are read into, by size

    @classmethod
    def for_task(cls, task: Task, device: Any, exchange: Path) -> Checker:
        return cls(task, device, exchange, load_reference(task.definition), input_deriver(task))

    @property
    def rel_norm_bound(self) -> float:
        return rel_norm_bound(self.task)

    def reference_outputs(self, workload: Workload, seed: int) -> tuple[Any, ...]:
        """The reference's outputs on the inputs of `seed`. Raises EnvironmentProblem on a broken reference."""
        import torch

        definition = self.task.definition
        with torch.no_grad():
            inputs = make_inputs(definition, workload, seed, device=str(self.device), derive=self.derive)
            out = as_output_tuple(self.reference(*inputs))
        if len(out) != len(definition.outputs):
            raise EnvironmentProblem(
                f"the reference of {self.task.name} returned {len(out)} outputs, the definition declares "
                f"{len(definition.outputs)}"
            )
        return out

    def compare(self, workload: Workload, files: Any, refs: tuple[Any, ...]) -> Comparison:
        """The worst comparison of the output files a result message names against `refs`.

        Raises ChannelViolation when the message's list of files is malformed or names a file that the
        evaluator did not ask for.
        """
        import torch

        definition = self.task.definition
        if (
            not isinstance(files, list)
            or len(files) != len(definition.outputs)
            or not all(isinstance(f, dict) for f in files)
        ):
            raise ChannelViolation("a result message with a malformed list of outputs")
        comparisons = []
        for spec, ref, info in zip(definition.outputs, refs, files, strict=True):
            expected_shape = tuple(definition.shape_of(spec, workload.axes))
            expected_dtype = torch_dtype(spec.dtype)
            if info.get("dtype") != str(expected_dtype).removeprefix("torch."):
                return Comparison(
                    Status.INCORRECT_DTYPE, f"{spec.name}: dtype {info.get('dtype')}, expected {spec.dtype}"
                )
            path = Path(str(info.get("path", "")))
            if path.parent != self.exchange or not path.name.endswith(f"_{spec.name}.bin"):
                raise ChannelViolation(f"output file {str(path)[:200]} is not one the evaluator asked for")
            itemsize = torch.empty(0, dtype=expected_dtype).element_size()
            raw = self._read(path, math.prod(expected_shape) * itemsize)
            if raw is None or list(info.get("shape", [])) != list(expected_shape):
                return Comparison(
                    Status.INCORRECT_SHAPE, f"{spec.name}: shape {info.get('shape')}, expected {list(expected_shape)}"
                )
            out = raw.view(expected_dtype).reshape(expected_shape)
            comparisons.append(self._compare_one(spec, out, ref, expected_shape, expected_dtype))
        return worst(comparisons)

    def compare_tensors(self, workload: Workload, outputs: list[Any], refs: tuple[Any, ...]) -> Comparison:
        """The worst comparison of outputs this process captured itself (evaluator/shared_outputs.py): their
        shapes and dtypes are the layout it chose, so only the values are the candidate's."""
        definition = self.task.definition
        comparisons = []
        for spec, ref, out in zip(definition.outputs, refs, outputs, strict=True):
            expected_shape = tuple(definition.shape_of(spec, workload.axes))
            comparisons.append(self._compare_one(spec, out, ref, expected_shape, torch_dtype(spec.dtype)))
        return worst(comparisons)

    def _compare_one(
        self, spec: Any, out: Any, ref: Any, expected_shape: tuple[int, ...], expected_dtype: Any
    ) -> Comparison:
        import torch

        kwargs = {
            "name": spec.name,
            "expected_shape": expected_shape,
            "expected_dtype": expected_dtype,
            "atol": self.task.atol,
            "rtol": self.task.rtol,
            "rel_norm_bound": self.rel_norm_bound,
        }
        try:
            return compare_output(out, ref, device=self.device, **kwargs)
        except torch.cuda.OutOfMemoryError:
            # The candidate process may still hold most of the GPU's memory: compare on the host instead.
            return compare_output(out, ref.cpu(), device=torch.device("cpu"), **kwargs)

    def _read(self, path: Path, nbytes: int) -> Any:
        """The file's bytes in a reused (pinned, on a GPU host) buffer, or None when it does not hold exactly
        `nbytes` or is not a regular file. Never follows a link: the candidate process may write this folder."""
        import torch

        try:  # O_NONBLOCK: a FIFO put in the file's place must not hang this process in open()
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        with os.fdopen(fd, "rb", buffering=0) as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size != nbytes:
                return None
            buf = self._buffers.get(nbytes)
            if buf is None:
                pinned = self.device.type == "cuda" and nbytes > 0
                buf = self._buffers[nbytes] = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
            view = memoryview(buf.numpy())
            got = 0
            while got < nbytes:
                n = fh.readinto(view[got:])
                if not n:
                    return None
                got += n
        return buf


def rel_norm_bound(task: Task) -> float:
    return float(task.rel_norm_bound or DEFAULT_REL_NORM_BOUND)


def fill_correctness(c: Correctness, comparison: Comparison) -> None:
    """Copy a comparison's error figures into the verdict's correctness record."""
    c.max_absolute_error = comparison.max_absolute_error
    c.max_relative_error = comparison.max_relative_error
    c.relative_norm_error = comparison.relative_norm_error
    c.failing_elements = comparison.failing_elements
    c.total_elements = comparison.total_elements
    c.nan_count = comparison.nan_count
    c.inf_count = comparison.inf_count
