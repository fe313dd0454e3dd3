"""The attention-forward tasks at head dimension 256 (CPU): they load with the forward family's rules, their
reference agrees with PyTorch's own attention (O and the LSE) on small shapes, and their starters pass each
language's source policy. Their expert kernels are built and SASS-checked with the others
(tests/tasks/test_reference_solutions.py); the forward at d=256 has no backward task."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from evaluator.both_sides.taskdata import Task, load_task
from evaluator.languages import LANGUAGES
from tests.support.task_suite_math import excess_error, load_function, tolerance_ratio
from tests.tasks.test_task_suite import REFERENCE_MARGIN, REPO, TASKS

D256 = ["mha_with_lse_d256", "mha_with_lse_d256_causal"]


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {name: load_task(TASKS / name) for name in D256}


def _causal(name: str) -> bool:
    return name.endswith("_causal")


def test_the_d256_tasks_are_forward_tasks_with_the_family_rules(tasks):
    for name, task in tasks.items():
        d = task.definition
        assert (d.op_type, task.group) == ("mha_with_lse", "mha_fwd")
        assert (d.axis("B").value, d.axis("H").value, d.axis("D").value) == (4, 48, 256)
        assert [w.axes["S"] for w in task.workloads] == [512, 1024, 2048, 4096, 8192, 16384]
        assert task.workload(task.headline_workload).axes == {"S": 4096}
        assert (task.atol, task.rtol) == (0.01, 0.01)  # the forward family's, causal or not
        assert [b.id for b in task.baselines] == ["cudnn", "flash"]
        headline = task.flops_for(task.workload(task.headline_workload))
        assert headline == 4 * 4 * 48 * 4096 * 4096 * 256 // (2 if _causal(name) else 1)
    assert not (TASKS / "mha_bwd_d256").exists() and not (TASKS / "mha_bwd_d256_causal").exists()


@pytest.mark.parametrize("name", D256)
@pytest.mark.parametrize("b,h,s", [(1, 2, 16), (2, 1, 37)])
def test_reference_matches_torch_attention_on_cpu(tasks, name, b, h, s):
    task = tasks[name]
    gen = torch.Generator().manual_seed(s)
    Q, K, V = (torch.randn(b, h, s, 256, generator=gen).to(torch.bfloat16) for _ in range(3))
    O, LSE = load_function(task.definition.reference, "run", f"reference_{name}")(Q, K, V)  # noqa: E741
    assert (O.dtype, LSE.dtype, O.shape, LSE.shape) == (torch.bfloat16, torch.float32, Q.shape, Q.shape[:3])

    def torch_attention(causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        # PyTorch's CPU flash attention, in float64 on the same bf16 values; it returns the natural-log LSE.
        q, k, v = (x.double() for x in (Q, K, V))
        out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=1 / math.sqrt(256))
        return out[0], out[1]

    O_torch, LSE_torch = torch_attention(_causal(name))
    assert excess_error(O, O_torch, task.atol, task.rtol) <= REFERENCE_MARGIN
    assert excess_error(LSE, LSE_torch, task.atol, task.rtol) <= REFERENCE_MARGIN
    # The mask matters on these inputs: the other variant is far outside the tolerance.
    O_other, LSE_other = torch_attention(not _causal(name))
    assert tolerance_ratio(O, O_other, task.atol, task.rtol) > 5
    assert tolerance_ratio(LSE, LSE_other, task.atol, task.rtol) > 5


@pytest.mark.parametrize("name", D256)
@pytest.mark.parametrize("language", [lang for lang in LANGUAGES.values() if lang.starter_file], ids=lambda x: x.name)
def test_starters_pass_the_source_policy_and_carry_the_mask(tasks, name, language):
    source = (TASKS / name / language.starter_file).read_text(encoding="utf-8")
    assert language.check_policy(source, tasks[name]) == []
    causal = _causal(name)
    flag = f"constexpr bool kCausal = {'true' if causal else 'false'};" if language.name == "cuda" else None
    assert (flag or f"CAUSAL = {causal}  # query i attends keys j <= i") in source


def test_the_cuda_starter_is_the_d256_one():
    # The family's shared CUDA starter rejects d=256 at run time; these tasks carry the two-threads-a-row one.
    for name in D256:
        source = (TASKS / name / "starter.cu").read_text(encoding="utf-8")
        assert "constexpr int kD = 256;" in source and "is not 64, 96 or 128" not in source


@pytest.mark.slow  # a Triton interpreter process: about 2 s
@pytest.mark.parametrize("name", D256)
def test_the_triton_starter_matches_the_reference_in_the_interpreter(name):
    pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    shape = "B=1,H=2,S=45"  # S not a multiple of the 32-row blocks
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.triton_interpret", name, str(TASKS / name / "starter_triton.py"), shape],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert [(r["output"], r["status"]) for r in report] == [("O", "PASSED"), ("LSE", "PASSED")], report
