"""The whole correctness path (fresh candidate process, seeds, poisoning, comparison, faults) on the CPU.

The pipeline's device_type="cpu" mode runs host-code candidates on CPU tensors (task tests/evaluator/tasks/
tiny_gemm), so that isolation, timeouts and every correctness verdict are tested in CI without a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus, Status
from evaluator.pipeline import Options, evaluate, resolve_stages, select_workloads
from tests.support.variants import SOURCE, variant_workdir

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
SCHEMA = json.loads((HERE.parents[1] / "evaluator" / "verdict.schema.json").read_text())


def run_variant(variant: str | None, workloads: str = "all", **options):
    """The verdict of the CPU kernel's `variant`; `workloads="headline"` where one workload shows the behaviour
    (each workload is a fresh candidate process that imports PyTorch)."""
    with variant_workdir(variant) as work:
        opts = Options(
            **{"device_type": "cpu", "timeout_s": 20, "seed": b"fixed-test-seed!", "workdir": work, **options}
        )
        verdict = evaluate(SOURCE, TASK, "sm_90a", workloads=workloads, stages=["correctness"], options=opts)
    jsonschema.validate(json.loads(vm.to_json(verdict)), SCHEMA)
    return verdict


def test_correct_candidate_passes_every_workload():
    v = run_variant(None)
    assert v.status == OverallStatus.PASSED
    assert [w.status for w in v.workloads] == [Status.PASSED, Status.PASSED]
    c = v.workloads[0].correctness
    assert c.trials == 3 and c.max_absolute_error < 1e-4 and c.relative_norm_error < 1e-6
    assert v.stage("correctness").state.value == "passed"
    assert v.stage("timing").state.value == "not_run"


def test_wrong_candidate():
    v = run_variant("WRONG", workloads="headline")
    assert v.status == OverallStatus.INCORRECT_NUMERICAL
    assert v.workloads[0].correctness.failing_elements > 0


def test_unwritten_output_fails_as_nan():
    v = run_variant("UNWRITTEN", workloads="headline")
    w = v.workloads[0]
    assert w.status == Status.INCORRECT_NUMERICAL and "never written" in w.message
    assert w.correctness.nan_count == w.correctness.total_elements


def test_input_modification_is_named():
    v = run_variant("MODIFY_INPUT", workloads="headline")
    assert v.workloads[0].status == Status.INCORRECT_NUMERICAL
    assert v.workloads[0].correctness.inputs_modified == ["A"]


def test_hang_times_out_and_fail_fast_stops():
    v = run_variant("HANG", timeout_s=6)
    assert v.status == OverallStatus.TIMEOUT
    assert len(v.workloads) == 1 and "killed" in v.workloads[0].message
    assert any("not run" in n for n in v.notes)


def test_crash_is_runtime_error():
    v = run_variant("CRASH")
    assert v.status == OverallStatus.RUNTIME_ERROR
    assert "SIGSEGV" in v.workloads[0].message


def test_noisy_stdout_is_captured_and_capped():
    v = run_variant("NOISY", workloads="headline")
    assert v.status == OverallStatus.PASSED
    assert "noise line" in v.workloads[0].stdout_tail and len(v.workloads[0].stdout_tail) < 5000


def test_stage_dependencies_and_workload_selection():
    # correctness needs the static SASS: its kernel list is what may run in a candidate call
    assert resolve_stages(["timing"]) == ["policy", "compile", "sass", "correctness", "timing"]
    assert resolve_stages(["arch"]) == ["policy", "compile", "sass", "correctness", "arch"]
    with pytest.raises(ValueError):
        resolve_stages(["lint"])
    assert [w.axes["M"] for w in select_workloads(TASK, "headline")] == [40]
    assert len(select_workloads(TASK, "all")) == 2
    assert [w.axes["M"] for w in select_workloads(TASK, "00000000-0000-4000-8000-000000000016")] == [16]
    with pytest.raises(ValueError):
        select_workloads(TASK, "00000000")  # prefix of both: ambiguous


def test_progress_callback_sees_every_stage():
    seen = []
    opts = Options(device_type="cpu", timeout_s=20)
    evaluate(
        SOURCE,
        TASK,
        "sm_90a",
        workloads="headline",
        stages=["correctness"],
        options=opts,
        on_stage=lambda stage, msg: seen.append(stage),
    )
    assert seen[0] == "policy" and "compile" in seen and seen[-1] == "correctness"


def test_task_can_set_the_relative_norm_bound(tmp_path):
    import shutil

    task_dir = tmp_path / "tiny_gemm"
    shutil.copytree(HERE / "tasks" / "tiny_gemm", task_dir)
    extras = json.loads((task_dir / "ptxbench.json").read_text())
    extras["tolerance"] = {"atol": 0.01, "rtol": 0.01, "relative_norm": 1e-9}
    (task_dir / "ptxbench.json").write_text(json.dumps(extras))
    strict = load_task(task_dir)
    assert strict.rel_norm_bound == 1e-9
    v = evaluate(
        SOURCE,
        strict,
        "sm_90a",
        workloads="headline",
        stages=["correctness"],
        options=Options(device_type="cpu", timeout_s=20),
    )
    # fp32 accumulation in another order than the fp64 reference: tiny but non-zero error, over this bound.
    assert v.status == OverallStatus.INCORRECT_NUMERICAL and "relative norm" in v.workloads[0].message
    assert v.workloads[0].correctness.relative_norm_bound == 1e-9


def _task_with_generator(tmp_path, body: str):
    import shutil

    task_dir = tmp_path / "tiny_gemm"
    shutil.copytree(HERE / "tasks" / "tiny_gemm", task_dir)
    (task_dir / "inputs.py").write_text(body)
    extras = json.loads((task_dir / "ptxbench.json").read_text())
    extras["input_generator"] = {"id": "gen", "name": "test generator", "file": "inputs.py", "function": "derive"}
    (task_dir / "ptxbench.json").write_text(json.dumps(extras))
    return load_task(task_dir)


def test_input_generator_replaces_inputs_on_both_sides(tmp_path):
    from evaluator.both_sides.inputs import input_deriver, make_inputs

    task = _task_with_generator(tmp_path, "def derive(inputs):\n    return {'B': inputs['A'][:1].repeat(48, 1)}\n")
    workload = task.workload("00000000-0000-4000-8000-000000000040")
    a, b = make_inputs(task.definition, workload, 5, device="cpu", derive=input_deriver(task))
    assert b.shape == (48, 32) and bool((b == a[0]).all())
    # The candidate process derives the same B, so a correct kernel still passes.
    v = evaluate(
        SOURCE,
        task,
        "sm_90a",
        workloads="headline",
        stages=["correctness"],
        options=Options(device_type="cpu", timeout_s=20),
    )
    assert v.status == OverallStatus.PASSED, v.workloads[0].message


def test_input_generator_returning_unknown_inputs_is_an_error(tmp_path):
    from evaluator.both_sides.inputs import input_deriver, make_inputs

    task = _task_with_generator(tmp_path, "def derive(inputs):\n    return {'Z': inputs['A']}\n")
    with pytest.raises(ValueError, match="unknown inputs"):
        make_inputs(task.definition, task.workloads[0], 5, device="cpu", derive=input_deriver(task))
    bad_shape = _task_with_generator(tmp_path / "2", "def derive(inputs):\n    return {'B': inputs['A']}\n")
    with pytest.raises(ValueError, match="shape"):
        make_inputs(bad_shape.definition, bad_shape.workloads[0], 5, device="cpu", derive=input_deriver(bad_shape))
