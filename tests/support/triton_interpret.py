"""Run a task's Triton starter in Triton's interpreter on CPU against the task's reference, the evaluator's way:
inputs from `evaluator.inputs.make_inputs` (with the task's input generator), NaN-poisoned outputs, the
reference from the definition, `evaluator.compare.compare_output` with the task's tolerance.

Its own process, because TRITON_INTERPRET must be set before triton is imported:

    python -m tests.support.triton_interpret TASK FILE AXIS=VALUE[,AXIS=VALUE...] ...

prints one JSON object: per shape, per output, the comparison's status, message and worst errors. Axis values
override the task's constant axes too (small GEMMs: M=..,N=..,K=..).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _axes(text: str) -> dict[str, int]:
    return {name: int(value) for name, value in (part.split("=") for part in text.split(","))}


def main(argv: list[str]) -> int:
    os.environ["TRITON_INTERPRET"] = "1"  # before the first import of triton, which reads it once
    import torch

    from evaluator.compare import compare_output
    from evaluator.inputs import alloc_outputs, input_deriver, load_reference, make_inputs, torch_dtype
    from evaluator.taskdata import Workload, find_task
    from evaluator.triton_aot import load_candidate

    task_name, file, *shapes = argv
    task = find_task(REPO / "tasks", task_name)
    d = task.definition
    run = load_candidate(Path(file)).run
    reference = load_reference(d)
    derive = input_deriver(task)
    report = []
    for index, shape in enumerate(shapes):
        axes = _axes(shape)
        workload = Workload(uuid=f"interpreted-{index}", axes=axes, inputs={})
        inputs = make_inputs(d, workload, seed=1000 + index, device="cpu", derive=derive)
        outputs = alloc_outputs(d, workload, device="cpu")
        with torch.no_grad():
            run(*inputs, *outputs)
            expected = reference(*inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for spec, out, ref in zip(d.outputs, outputs, expected, strict=True):
            kwargs = {"rel_norm_bound": task.rel_norm_bound} if task.rel_norm_bound is not None else {}
            c = compare_output(
                out,
                ref,
                name=spec.name,
                expected_shape=d.shape_of(spec, axes),
                expected_dtype=torch_dtype(spec.dtype),
                atol=task.atol,
                rtol=task.rtol,
                **kwargs,
            )
            report.append(
                {
                    "shape": shape,
                    "output": spec.name,
                    "status": c.status.value,
                    "message": c.message,
                    "max_absolute_error": c.max_absolute_error,
                    "relative_norm_error": c.relative_norm_error,
                }
            )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
