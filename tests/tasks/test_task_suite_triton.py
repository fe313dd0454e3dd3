"""The Triton starters of the task suite (CPU): every task has one, generated like the rest of the folder; each
passes the Triton policy with the task's `run` signature; each distinct starter computes the task's reference
within its tolerance in Triton's interpreter (on CPU tensors, through the evaluator's inputs, poisoned outputs
and comparison); and, ahead of time for sm_90a, none has wgmma or TMA in its SASS (like the CUDA starters they
pass correctness and fail the architecture layer).

Triton 3.9's interpreter computes a bf16 tl.dot on the raw bits (np.matmul of the uint16 storage), so the
starters widen their tiles to fp32 before tl.dot; that is also what keeps them off the tensor cores on the GPU
(input_precision="ieee").
"""

from __future__ import annotations

import json
import select
import subprocess
import sys

import pytest

from evaluator.both_sides.taskdata import find_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.pipeline import Options, evaluate
from evaluator.source_policy.triton_policy import check_source
from tests.tasks.test_task_suite import BWD, FWD, GEMM, REPO, SUITE, TASKS

pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")

STARTER = "starter_triton.py"
# One task per distinct starter, with small ragged shapes (S and M not multiples of the 32-row blocks; D=96 is
# padded to 128 inside the kernels).
INTERPRETED = {
    "gemm_n256_k7168": ["M=37,N=45,K=70", "M=64,N=96,K=128"],
    "mha_with_lse_d96": ["B=1,H=2,S=45", "B=2,H=1,S=64"],
    "mha_with_lse_d64_causal": ["B=1,H=2,S=45", "B=2,H=1,S=64"],
    "mha_bwd_d96": ["B=1,H=2,S=45", "B=2,H=1,S=33"],
    "mha_bwd_d128_causal": ["B=1,H=2,S=45", "B=2,H=1,S=33"],
}


def _starter(name: str) -> str:
    return (TASKS / name / STARTER).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def interpret(tmp_path_factory):
    """`interpret(task, file, shapes)`: the report of tests.support.triton_interpret, from one interpreter process
    kept for the session (PyTorch and Triton imported once, not once per starter)."""
    log = tmp_path_factory.mktemp("triton-interpret") / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.triton_interpret", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=REPO,
        )

    def ask(task: str, file: str, shapes: list[str]) -> list[dict]:
        proc.stdin.write(json.dumps([task, file, *shapes]) + "\n")
        proc.stdin.flush()
        if not select.select([proc.stdout], [], [], 300)[0]:  # the time-out each starter's own process had
            proc.kill()
            pytest.fail(f"no answer from the interpreter process in 300 s: {log.read_text()[-3000:]}")
        line = proc.stdout.readline()
        assert line, f"the interpreter process exited ({proc.poll()}): {log.read_text()[-3000:]}"
        answer = json.loads(line)
        assert "error" not in answer, answer["error"][-3000:]
        return answer["report"]

    yield ask
    proc.stdin.close()
    proc.wait(timeout=60)


def _params(name: str) -> list[str]:
    d = find_task(TASKS, name).definition
    return [s.name for s in (*d.inputs, *d.outputs)]


def test_five_distinct_starters_cover_the_suite_and_the_interpreted_ones_are_one_of_each():
    groups: dict[str, list[str]] = {}
    for name in SUITE:
        groups.setdefault(_starter(name), []).append(name)
    assert len(groups) == 5  # GEMM; forward and backward, each with and without the causal mask
    assert sorted(len(g) for g in groups.values()) == [3, 3, 4, 4, 5]  # the forward's serves d=256 too
    assert all(len(set(g) & set(INTERPRETED)) == 1 for g in groups.values())


@pytest.mark.parametrize("name", SUITE)
def test_starter_passes_the_triton_policy_with_the_task_signature(name):
    assert check_source(_starter(name), _params(name)) == []


def test_starter_causal_flag_matches_the_task():
    for name in FWD + BWD:
        causal = name.endswith("_causal")
        assert f"CAUSAL = {causal}  # query i attends keys j <= i" in _starter(name), name
    for name in GEMM:
        assert "CAUSAL" not in _starter(name)


@pytest.mark.slow  # seconds of Triton interpreter per starter
@pytest.mark.parametrize("name", sorted(INTERPRETED))
def test_starter_matches_the_reference_in_the_triton_interpreter(name, interpret):
    report = interpret(name, str(TASKS / name / STARTER), INTERPRETED[name])
    outputs = [s.name for s in find_task(TASKS, name).definition.outputs]
    assert [(r["shape"], r["output"]) for r in report] == [(s, o) for s in INTERPRETED[name] for o in outputs]
    for r in report:
        assert r["status"] == "PASSED", r
        # Only the bf16 rounding of the output is left (half an ulp of bf16 is 2**-9 relative).
        assert r["relative_norm_error"] < 1e-2, r


def test_the_interpreter_check_sees_a_wrong_mask(interpret):
    # The non-causal forward starter run against the causal task: every row but the last attends too many keys.
    report = interpret("mha_with_lse_d64_causal", str(TASKS / "mha_with_lse_d64" / STARTER), ["B=1,H=2,S=45"])
    assert {r["output"]: r["status"] for r in report} == {"O": "INCORRECT_NUMERICAL", "LSE": "INCORRECT_NUMERICAL"}


@pytest.mark.slow  # about 7-15 s of Triton compile per starter
@pytest.mark.parametrize("name", sorted(INTERPRETED))
def test_starter_compiles_ahead_of_time_for_sm90a_without_wgmma_or_tma(name, allow_unsandboxed_without_bwrap):
    task = find_task(TASKS, name)
    verdict = evaluate(
        _starter(name),
        task,
        "sm_90a",
        stages=("policy", "compile", "sass"),
        options=Options(compile_timeout_s=300),
        language="triton",
    )
    assert verdict.status == OverallStatus.STATIC_ONLY, verdict.compile.output if verdict.compile else verdict.policy
    expected = (
        ["gemm_tile"] if name in GEMM else ["attention_forward"] if name in FWD else ["grad_key_value", "grad_query"]
    )
    assert sorted(verdict.sass.kernels) == expected
    assert verdict.sass.families["gmma"] == 0 and verdict.sass.families["tma"] == 0
