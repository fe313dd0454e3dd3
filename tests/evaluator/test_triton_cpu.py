"""Triton submissions on a machine without a GPU: the policy, compile and SASS stages.

The reference Triton GEMM compiles ahead of time for sm_90a in the sandbox and its cubin shows GMMA and TMA;
a file with a syntax error, a wrong `run` signature or a `run` that fails while its launches are traced gets
a clear verdict; a second process finds exactly the compiled kernels in a copy of the cache and compiles
nothing (what the candidate process relies on).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from evaluator.binaries.sass import resource_usage
from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import find_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.pipeline import Options, evaluate
from tests.support.factories import REPO

pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")

TASK = find_task(REPO / "tasks", "gemm_n4096_k4096")
REFERENCE = (REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py").read_text()
SCHEMA = json.loads((REPO / "evaluator" / "verdict.schema.json").read_text())
STATIC = ("policy", "compile", "sass")


def static_verdict(source: str, workdir: Path | None = None) -> vm.Verdict:
    opts = Options(workdir=workdir, keep_workdir=workdir is not None, compile_timeout_s=300)
    verdict = evaluate(source, TASK, "sm_90a", stages=STATIC, options=opts, language="triton")
    jsonschema.validate(json.loads(vm.to_json(verdict)), SCHEMA)
    return verdict


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[vm.Verdict, Path]:
    workdir = tmp_path_factory.mktemp("triton-ref")
    return static_verdict(REFERENCE, workdir), workdir


def test_reference_triton_gemm_compiles_ahead_of_time_with_gmma_and_tma(reference):
    v, workdir = reference
    assert v.status == OverallStatus.STATIC_ONLY, v.compile.output if v.compile else v.policy
    assert v.language == "triton" and v.triton_version and v.triton_version[0].isdigit()
    assert v.compile.ok and "compiled gemm_kernel" in v.compile.output
    assert v.compile.nvcc_version == f"triton {v.triton_version}"
    assert v.sass.kernels == ["gemm_kernel"]
    assert v.sass.families["gmma"] > 0 and v.sass.families["tma"] > 0
    assert any(op.startswith("HGMMA.") for op in v.sass.opcodes)
    assert [r.name for r in v.compile.resources] == ["gemm_kernel"] and v.compile.resources[0].shared_bytes > 0
    # The compiler's output is kept beside the verdict: PTX and cubin in the cache folder the candidate loads.
    cache = workdir / "build" / "triton-cache"
    assert list(cache.glob("*/gemm_kernel.cubin")) and list(cache.glob("*/gemm_kernel.ptx"))
    assert "HGMMA" in (workdir / "build-trusted" / "kernel.sass").read_text()  # the trusted side's own folder
    # Its footprint as compiled, which the timed calls' launches must show (a kernel of another module with the
    # same name would not): registers from the cubin, and the shared memory it declares.
    prints = resource_usage(list(cache.glob("*/gemm_kernel.cubin")))["gemm_kernel"]
    assert prints and all(p.registers > 0 for p in prints)


def test_the_compile_process_files_its_kernels_under_the_install_hash_the_parent_gave(reference, monkeypatch):
    # Hashing the Triton install (libtriton.so is 500 MB) costs each compile process about 0.3 s; the parent does it
    # once and hands it over. The second process below, which hashes the install itself, finding the kernels shows
    # the two agree.
    from triton import __version__
    from triton.runtime import autotuner, cache

    from evaluator.build.triton_compile import install_key
    from evaluator.candidate_process.triton_aot import use_install_key

    _, workdir = reference
    job = json.loads((workdir / "build" / "triton-job.json").read_text())
    assert job["triton_key"] == install_key() and job["triton_key"].startswith(__version__)
    monkeypatch.setattr(cache, "triton_key", cache.triton_key)  # restored after the test: this process's Triton
    monkeypatch.setattr(autotuner, "triton_key", autotuner.triton_key)
    use_install_key("given")

    class Part:
        def hash(self) -> str:
            return "part"

    assert cache.get_cache_key(Part(), Part(), Part(), {}).startswith("given-part-part-part-")
    assert autotuner.triton_key() == "given"


def test_a_second_process_finds_the_compiled_kernels_and_compiles_nothing(reference, tmp_path):
    _, workdir = reference
    copy = tmp_path / "cache"
    import shutil

    shutil.copytree(workdir / "build" / "triton-cache", copy)
    script = (
        "import sys, torch\n"
        "from pathlib import Path\n"
        "from evaluator.candidate_process.triton_aot import _install_target\n"
        "from evaluator.candidate_process.triton_runtime import load_triton, NOT_AHEAD_OF_TIME\n"
        "compiled = _install_target(90)\n"
        "run = load_triton(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "m = lambda *s: torch.empty(*s, dtype=torch.bfloat16, device='meta')\n"
        "try:\n"
        "    run(m(int(sys.argv[3]), 4096), m(4096, 4096), m(int(sys.argv[3]), 4096))\n"
        "except RuntimeError as exc:\n"
        "    print('REFUSED' if NOT_AHEAD_OF_TIME in str(exc) else 'OTHER', exc)\n"
        "    sys.exit(3)\n"
        "print('HIT', compiled)\n"
    )
    source = workdir / "build-trusted" / "kernel.py"  # what the candidate process loads

    def second(cache: Path, m: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", script, str(source), str(cache), str(m)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    # The folder the compile wrote is out of reach, as for a compile kept in the compile cache whose evaluation
    # is gone: Triton's group files name their members by the paths that compile wrote to.
    original = workdir / "build" / "triton-cache"
    away = original.with_name("triton-cache-away")
    original.rename(away)
    try:
        hit = second(copy, 8192)
        assert hit.returncode == 0 and "HIT [('gemm_kernel'" in hit.stdout, (hit.stdout, hit.stderr[-2000:])
        # M = 8200 is not a multiple of 16: another specialization, never compiled ahead of time, so refused.
        miss = second(copy, 8200)
        assert miss.returncode == 3 and "REFUSED" in miss.stdout, (miss.stdout, miss.stderr[-2000:])
    finally:
        away.rename(original)


def test_a_syntax_error_is_rejected_before_compiling_with_the_line():
    v = static_verdict("import triton\n\ndef run(A, B, C)\n    pass\n")
    assert v.status == OverallStatus.POLICY_REJECTED and v.compile is None
    assert v.policy[0].rule == "syntax" and v.policy[0].line == 3 and v.policy[0].text == "def run(A, B, C)"
    assert "line 3" in v.stage("policy").message


def test_a_bad_run_signature_is_rejected_with_the_expected_one():
    v = static_verdict(REFERENCE.replace("def run(A, B, C):", "def run(A, C):"))
    assert v.status == OverallStatus.POLICY_REJECTED
    assert v.policy[0].rule == "run-signature" and "def run(A, B, C)" in v.policy[0].message


def test_run_that_fails_while_traced_is_a_compile_error_naming_the_workload():
    v = static_verdict(REFERENCE.replace("    M, K = A.shape\n", "    M, K, J = A.shape\n"))
    assert v.status == OverallStatus.COMPILE_ERROR and not v.compile.ok
    assert "ValueError in run (workload 1: 128x4096" in v.stage("compile").message
    assert v.sass is None


def test_a_kernel_triton_cannot_compile_is_a_compile_error_with_the_compiler_message():
    broken = REFERENCE.replace("acc = tl.dot(a, b.T, acc)", "acc = tl.dot(a, b, acc)")  # [BM,BK] x [BN,BK]
    v = static_verdict(broken)
    assert v.status == OverallStatus.COMPILE_ERROR
    assert "CompilationError" in v.compile.output and "tl.dot(a, b, acc)" in v.compile.output


def test_the_same_triton_file_compiles_for_sm_100a_with_tcgen05_and_tma():
    opts = Options(compile_timeout_s=300)
    v = evaluate(REFERENCE, TASK, "sm_100a", stages=STATIC, options=opts, language="triton")
    assert v.status == OverallStatus.STATIC_ONLY, v.compile.output
    assert v.sass.families["tcgen05"] > 0 and v.sass.families["tma"] > 0 and v.sass.families["gmma"] == 0
    assert any(op.startswith("UTCHMMA") for op in v.sass.opcodes)


ATTENTION = REPO / "tasks/mha_with_lse_d128/solutions/triton_fa_fwd/kernel.py"
INTERPRETED = """
import math, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch
from evaluator.candidate_process.triton_aot import load_candidate
run = load_candidate(__import__("pathlib").Path(sys.argv[1])).run
torch.manual_seed(0)
worst = 0.0
for S in (128, 200):
    Q, K, V = (torch.randn(1, 2, S, 128) for _ in range(3))
    O, L = torch.empty(1, 2, S, 128), torch.empty(1, 2, S)
    run(Q, K, V, O, L)
    s = Q @ K.transpose(-1, -2) / math.sqrt(128)
    worst = max(worst, (O - torch.softmax(s, -1) @ V).abs().max().item(), (L - torch.logsumexp(s, -1)).abs().max().item())
print(worst)
"""


def test_reference_triton_attention_matches_the_reference_in_triton_s_interpreter():
    # The interpreter's bf16 tl.dot is unusable on CPU, so the algorithm is checked in fp32 (the kernel casts to
    # its inputs' dtype, bf16 on the GPU); ragged S=200 exercises the masks.
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETED, str(ATTENTION)], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip().splitlines()[-1]) < 1e-4
