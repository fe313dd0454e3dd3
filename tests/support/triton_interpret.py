"""Run a task's Triton starter in Triton's interpreter on CPU against the task's reference, the evaluator's way:
inputs from `evaluator.both_sides.inputs.make_inputs` (with the task's input generator), NaN-poisoned outputs, the
reference from the definition, `evaluator.measure.compare.compare_output` with the task's tolerance.

Its own process, because TRITON_INTERPRET must be set before triton is imported:

    python -m tests.support.triton_interpret TASK FILE AXIS=VALUE[,AXIS=VALUE...] ...

prints one JSON object: per shape, per output, the comparison's status, message and worst errors. Axis values
override the task's constant axes too (small GEMMs: M=..,N=..,K=..). With `--serve` it reads one job a line from
stdin (a JSON list: TASK, FILE, shapes...) and answers each with one line, `{"report": ...}` or `{"error": ...}`:
the tests keep one such process (one import of PyTorch and Triton) for all their starters.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _axes(text: str) -> dict[str, int]:
    return {name: int(value) for name, value in (part.split("=") for part in text.split(","))}


def main(argv: list[str]) -> int:
    os.environ["TRITON_INTERPRET"] = "1"  # before the first import of triton, which reads it once
    if argv != ["--serve"]:
        print(json.dumps(interpret(*argv)))
        return 0
    answers, sys.stdout = sys.stdout, sys.stderr  # what a starter prints cannot be taken for an answer
    for line in sys.stdin:
        try:
            answer = {"report": interpret(*json.loads(line))}
        except Exception:  # noqa: BLE001 - the test that sent the job shows it
            answer = {"error": traceback.format_exc()}
        print(json.dumps(answer), file=answers, flush=True)
    return 0


def interpret(task_name: str, file: str, *shapes: str) -> list[dict]:
    """Run `file`'s `run` for each shape in the interpreter; per shape and output, the comparison's result."""
    import torch

    from evaluator.both_sides.inputs import alloc_outputs, input_deriver, load_reference, make_inputs, torch_dtype
    from evaluator.both_sides.taskdata import Workload, find_task
    from evaluator.candidate_process.triton_aot import load_candidate
    from evaluator.measure.compare import compare_output

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
    return report


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
