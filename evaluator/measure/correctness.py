"""Reference outputs and their comparison with the outputs the parent captured from the memory it lends.

Only the trusted parent runs this: reference outputs never exist in the candidate process, and neither do seeds.
The parent draws each call's inputs from its seed (evaluator/measure/lent_calls.py) and computes the reference here on
the same inputs, drawn again from the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluator.both_sides.inputs import as_output_tuple, input_deriver, load_reference, make_inputs, torch_dtype
from evaluator.both_sides.taskdata import Task, Workload
from evaluator.both_sides.verdict import Correctness
from evaluator.errors import EnvironmentProblem
from evaluator.measure.batch_samples import SAMPLE_NORM_FACTOR
from evaluator.measure.compare import DEFAULT_REL_NORM_BOUND, Comparison, compare_output, worst


@dataclass
class Checker:
    """What comparing a candidate's outputs needs: the task and its reference."""

    task: Task
    device: Any  # torch.device of the references
    reference: Any  # the task's reference callable
    derive: Any  # the task's input deriver (evaluator.both_sides.inputs.input_deriver)

    @classmethod
    def for_task(cls, task: Task, device: Any) -> Checker:
        return cls(task, device, load_reference(task.definition), input_deriver(task))

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

    def compare_tensors(self, workload: Workload, outputs: list[Any], refs: tuple[Any, ...]) -> Comparison:
        """The worst comparison of outputs this process captured itself (evaluator/both_sides/shared_outputs.py): their
        shapes and dtypes are the layout it chose, so only the values are the candidate's."""
        definition = self.task.definition
        comparisons = []
        for spec, ref, out in zip(definition.outputs, refs, outputs, strict=True):
            expected_shape = tuple(definition.shape_of(spec, workload.axes))
            comparisons.append(self._compare_one(spec, out, ref, expected_shape, torch_dtype(spec.dtype)))
        return worst(comparisons)

    def compare_samples(self, taken: list[Any], refs: tuple[Any, ...]) -> Comparison:
        """The worst comparison of one call's sampled elements (per output, a 1-D tensor the parent took itself,
        evaluator/measure/batch_samples.py) with the reference's at the same places: the task's element rule, the
        relative-norm bound widened by SAMPLE_NORM_FACTOR."""
        comparisons = [
            self._compare_one(
                spec,
                out,
                ref,
                tuple(ref.shape),
                torch_dtype(spec.dtype),
                name=f"{spec.name} (sampled elements)",
                norm_factor=SAMPLE_NORM_FACTOR,
            )
            for spec, out, ref in zip(self.task.definition.outputs, taken, refs, strict=True)
        ]
        return worst(comparisons)

    def _compare_one(
        self,
        spec: Any,
        out: Any,
        ref: Any,
        expected_shape: tuple[int, ...],
        expected_dtype: Any,
        *,
        name: str | None = None,
        norm_factor: float = 1.0,
    ) -> Comparison:
        import torch

        kwargs = {
            "name": name or spec.name,
            "expected_shape": expected_shape,
            "expected_dtype": expected_dtype,
            "atol": self.task.atol,
            "rtol": self.task.rtol,
            "rel_norm_bound": norm_factor * self.rel_norm_bound,
        }
        try:
            return compare_output(out, ref, device=self.device, **kwargs)
        except torch.cuda.OutOfMemoryError:
            # The candidate process may still hold most of the GPU's memory: compare on the host instead.
            return compare_output(out, ref.cpu(), device=torch.device("cpu"), **kwargs)


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
