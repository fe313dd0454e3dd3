"""A made-up task family, added to a temporary copy of the registry (evaluator/both_sides/task_families.py) with its templates
in a temporary folder, reaches every layer that reads the registry: make_suite writes its task folder (group,
FLOPs, tolerance, baseline, reference, a starter per language), the task loads, its inputs are drawn by the
family's rule, its FLOPs and bytes are the family's, and the comparison applies the family's tolerance."""

from __future__ import annotations

import pytest
import torch

from evaluator.both_sides import task_families
from evaluator.both_sides.flops import evaluate_flops
from evaluator.both_sides.inputs import make_inputs
from evaluator.both_sides.task_families import Draw, TaskFamily, Tolerance, TrustedFile
from evaluator.both_sides.taskdata import load_task
from evaluator.checks import physical_limits
from evaluator.languages import LANGUAGES
from evaluator.measure.correctness import Checker
from tests.support.script_modules import load_script
from tests.tasks.test_task_suite import REPO

FAMILY = TaskFamily(
    name="made_up_scale",
    op_type="made_up_scale",
    group="made_up",
    flops="N",
    io_bytes="4*N + 4 + 4*N",
    tolerance=Tolerance(atol=0.2, rtol=0.2, relative_norm=0.3),
    reference="made_up_reference.py",
    baselines=(TrustedFile("torch_mul", "torch.mul", "baseline.py", "made_up_baseline.py"),),
    starter_prefix="made_up",
    knowledge_pages=(),
    draws={"alpha": Draw("uniform", 2.0, 3.0)},
)
SCALE_SOURCE = "def run(X, alpha):\n    return X * alpha\n"


@pytest.fixture
def make_suite(tmp_path, monkeypatch):
    """scripts/make_suite.py with the made-up family registered and its templates beside the real ones."""
    module = load_script(REPO / "scripts" / "make_suite.py", "make_suite_made_up_family", monkeypatch)
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / FAMILY.reference).write_text(SCALE_SOURCE)
    (templates / FAMILY.baselines[0].template).write_text("import torch\n\n\n" + SCALE_SOURCE)
    for lang in LANGUAGES.values():
        if lang.starter_file:
            (templates / f"{FAMILY.starter_prefix}_{lang.starter_file}").write_text(f"// {lang.name} starter\n")
    monkeypatch.setattr(module, "TEMPLATES", templates)
    monkeypatch.setitem(task_families.FAMILIES, FAMILY.name, FAMILY)
    return module


def _made_up_task(make_suite, root):
    definition = {
        "name": "made_up_scale_n64",
        "op_type": FAMILY.op_type,
        "description": "Y = alpha * X",
        "axes": {"N": {"type": "var"}},
        "inputs": {"X": {"shape": ["N"], "dtype": "float32"}, "alpha": {"shape": [], "dtype": "float32"}},
        "outputs": {"Y": {"shape": ["N"], "dtype": "float32"}},
        "reference": SCALE_SOURCE,
    }
    files = make_suite.family_task(FAMILY, definition, "N", (64, 4096), 4096)
    folder = root / files.name
    folder.mkdir()
    for file, text in files.files.items():
        (folder / file).write_text(text)
    return files, load_task(folder)


def test_make_suite_writes_the_family_task_from_the_registry(make_suite, tmp_path):
    files, task = _made_up_task(make_suite, tmp_path)
    starters = {lang.starter_file for lang in LANGUAGES.values() if lang.starter_file}
    assert set(files.files) == {"definition.json", "workloads.jsonl", "ptxbench.json", "baseline.py", *starters}
    assert (task.group, task.flops) == ("made_up", "N")
    assert (task.atol, task.rtol, task.rel_norm_bound) == (0.2, 0.2, 0.3)
    assert [(b.id, b.name) for b in task.baselines] == [("torch_mul", "torch.mul")]
    assert task.workload(task.headline_workload).axes == {"N": 4096}


def test_inputs_flops_bytes_and_comparison_follow_the_family(make_suite, tmp_path):
    _, task = _made_up_task(make_suite, tmp_path)
    workload = task.workload(task.headline_workload)
    # Inputs: alpha by the family's draw (uniform in [2, 3)); X by the default (standard normal).
    alphas = []
    for seed in range(20):
        x, alpha = make_inputs(task.definition, workload, seed, device="cpu")
        alphas.append(float(alpha))
        assert abs(float(x.mean())) < 0.2 and 0.8 < float(x.std()) < 1.2
    assert all(2.0 <= a < 3.0 for a in alphas)
    # FLOPs and bytes.
    axes = task.definition.axis_values(workload.axes)
    assert task.flops_for(workload) == 4096
    assert physical_limits.io_bytes(task.definition, workload) == evaluate_flops(FAMILY.io_bytes, axes)
    # Comparison: an output 0.15 off everywhere is inside the family's 0.2, a zero output is not.
    checker = Checker.for_task(task, torch.device("cpu"))
    (ref,) = checker.reference_outputs(workload, seed=5)
    assert checker.rel_norm_bound == 0.3
    assert checker.compare_tensors(workload, [ref + 0.15], (ref,)).ok
    assert not checker.compare_tensors(workload, [torch.zeros_like(ref)], (ref,)).ok


def test_a_task_of_no_registered_family_keeps_the_defaults(tmp_path, make_suite, monkeypatch):
    _, task = _made_up_task(make_suite, tmp_path)
    monkeypatch.delitem(task_families.FAMILIES, FAMILY.name)
    alphas = [float(make_inputs(task.definition, task.workloads[0], s, device="cpu")[1]) for s in range(20)]
    assert any(a < 2.0 for a in alphas)  # standard normal again
