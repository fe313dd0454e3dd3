"""Kernel extraction from replies and the feedback built from verdicts (pure functions, real verdict shapes)."""

from __future__ import annotations

from portal.agent.extract import extract_kernel
from portal.agent.feedback import compiler_excerpt, verdict_feedback
from portal.agent.prompts import no_kernel, system_prompt, task_message, truncated
from portal.core.verdict_record import parse_verdict
from tests.support.verdicts import complete

KERNEL = "#include <tvm/ffi/function.h>\n__global__ void k() {}\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"


def test_the_last_kernel_looking_block_wins_over_drafts_and_other_languages():
    reply = (
        "Draft:\n```cuda\n__global__ void draft() {}\n```\n"
        f"Final:\n```cuda\n{KERNEL}```\n"
        "And how to test it:\n```python\nimport torch\nprint('__global__ only in a string')\n```\n"
    )
    result = extract_kernel(reply)
    assert result.kernel == KERNEL and result.blocks == 3


def test_no_code_block_or_no_kernel_gives_nothing():
    assert extract_kernel("Let me think about tiling first.").kernel == ""
    assert extract_kernel("```text\njust words\n```").kernel == ""


def test_code_written_while_thinking_does_not_count():
    reply = f"<think>maybe\n```cuda\n{KERNEL}```\n</think>I'm not ready to answer yet."
    assert extract_kernel(reply).kernel == ""


def test_a_reply_cut_off_inside_the_kernel_is_reported_as_truncated():
    result = extract_kernel(f"Here:\n```cuda\n{KERNEL}__global__ void more() {{")
    assert result.kernel == "" and result.truncated


def test_tilde_fences_and_longer_fences_work():
    assert extract_kernel(f"~~~cu\n{KERNEL}~~~\n").kernel == KERNEL
    assert extract_kernel(f"````cuda\n{KERNEL}```\nstill inside\n````\n").kernel.endswith("still inside\n")


COMPILE_ERROR_VERDICT = complete({
    "status": "COMPILE_ERROR",
    "arch": "sm_90a",
    "policy": [],
    "compile": {
        "ok": False,
        "timed_out": False,
        "output": (
            'ptxas info    : 0 bytes gmem\n/tmp/ptxbench-eval-sc3n5ei1/build/kernel.cu(2): error: identifier "undefined_symbol_xyz" is undefined\n'
            "  __global__ void k(int* x){ x[0] = undefined_symbol_xyz; }\n                                   ^\n\n"
            '1 error detected in the compilation of "/tmp/ptxbench-eval-sc3n5ei1/build/kernel.cu".\n'
        ),
    },
    "workloads": [{"uuid": "u", "axes": {"M": 128}, "status": "COMPILE_ERROR", "message": "nvcc exited with 2"}],
    "arch_check": {"status": "not_requested", "families": {}},
})  # fmt: skip


def test_compile_errors_come_with_the_compiler_lines_and_short_paths():
    text = verdict_feedback(parse_verdict(COMPILE_ERROR_VERDICT), speedup=None, target_speedup=1.2)
    assert text.startswith("Evaluation result: COMPILE_ERROR.")
    assert 'kernel.cu(2): error: identifier "undefined_symbol_xyz" is undefined' in text
    assert "/tmp/ptxbench-eval" not in text and "ptxas info" not in text
    assert text.endswith("Please fix the kernel and answer with the complete file.")


def test_compiler_excerpt_caps_long_output():
    text = compiler_excerpt("\n".join(f"kernel.cu({i}): error: bad" for i in range(500)))
    assert text.count("\n") < 80 and text.endswith("[... compiler output truncated]")


def _passed_verdict(gmma_executed: int, tma_static: int, arch_status: str) -> dict:
    perf = {"latency_ms": 1.0, "baseline_latency_ms": 1.3, "speedup_factor": 1.3, "baseline": "cublas"}
    return complete({
        "status": "PASSED",
        "arch": "sm_90a",
        "policy": [],
        "compile": {"ok": True, "output": ""},
        "sass": {"families": {"gmma": 64, "tma": tma_static}, "target_families": ["gmma", "tma"]},
        "workloads": [
            {"uuid": "a", "axes": {"M": 128}, "status": "PASSED", "performance": perf},
            {
                "uuid": "b",
                "axes": {"M": 8192},
                "status": "INCORRECT_NUMERICAL",
                "correctness": {
                    "max_absolute_error": 0.5,
                    "max_relative_error": 2.0,
                    "failing_elements": 12,
                    "total_elements": 4096,
                },
            },
        ],
        "arch_check": {
            "status": arch_status,
            "reason": "",
            "families": {
                "gmma": {"static": 64, "executed": gmma_executed, "predicated_on": gmma_executed * 128},
                "tma": {"static": tma_static, "executed": 0, "predicated_on": 0},
            },
        },
    })  # fmt: skip


def test_instruction_report_names_dead_wgmma_and_missing_tma():
    text = verdict_feedback(parse_verdict(_passed_verdict(0, 0, "not_executed")), speedup=1.3, target_speedup=1.2)
    assert "wgmma present (64 in the SASS) but never executed" in text
    assert "no TMA found" in text
    assert "- M=128: PASSED, 1.30x vs cublas (1.000 ms vs 1.300 ms)" in text
    assert "- M=8192: INCORRECT_NUMERICAL: max abs error 0.5, max rel error 2, 12 of 4096 elements" in text


def test_closing_lines():
    verified = _passed_verdict(10, 4, "verified")
    assert "Target reached: correct, 1.30x" in verdict_feedback(
        parse_verdict(verified), speedup=1.3, target_speedup=1.2
    )
    assert "keep optimizing" in verdict_feedback(parse_verdict(verified), speedup=1.3, target_speedup=1.5)
    static = {"status": "STATIC_ONLY", "arch": "sm_90a", "sass": {"families": {"gmma": 0}, "target_families": ["gmma"]}}
    assert "not measured" in verdict_feedback(parse_verdict(static), speedup=None, target_speedup=1.2)
    assert "```cuda" in no_kernel() and "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in no_kernel()


def test_no_kernel_feedback_names_the_runs_own_language():
    assert "```python" in no_kernel("triton") and "@triton.jit" in no_kernel("triton")
    assert "```cuda" not in no_kernel("triton") and "```cuda" not in truncated("triton")
    assert "```python" in truncated("triton") and "```cuda" in truncated("cuda")


def test_prompts_carry_pack_starter_signature_and_workloads():
    system = system_prompt(arch="sm_90a", pack_text="# Hopper\nwgmma notes", starter="// starter")
    assert "wgmma notes" in system and "// starter" in system and "sm_90a" in system
    assert "```cuda\n// starter\n```" in system
    triton = system_prompt(arch="sm_90a", pack_text="", starter="@triton.jit\ndef k(): ...", language="triton")
    assert "```python\n@triton.jit\ndef k(): ...\n```" in triton and "```cuda" not in triton
    message = task_message(
        name="gemm_x",
        description="A GEMM.",
        definition={
            "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 64}},
            "inputs": {"A": {"shape": ["M", "N"], "dtype": "bfloat16"}},
            "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16"}},
        },
        workloads=[{"axes": {"M": 128}, "headline": False}, {"axes": {"M": 8192}, "headline": True}],
        run_signature="void run(TensorView A, TensorView C);",
        families=["gmma", "tma"],
        arch="sm_90a",
    )
    assert "| A | input | [M, N] | bfloat16 |" in message and "- N = 64" in message
    assert "M=8192 (headline" in message and "void run(TensorView A, TensorView C);" in message
