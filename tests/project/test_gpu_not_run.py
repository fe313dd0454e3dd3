"""A GPU pass that showed nothing says "not run" and fails: scripts/gpu_tests.sh when every GPU test
skipped (pytest exits 0 then) or when there is no sandbox and nobody asked to run without one; the adversarial
corpus for entries whose needs are unmet; a `gpu` test that would fall back to no sandbox on its own.

These run on this CPU machine, where no GPU is visible: exactly the "needs unmet" case."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _no_gpu_here() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible here: the GPU tests would run")


def _gpu_pass(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    # The nested pytest collects every GPU test whatever options the outer run was given (PYTEST_ADDOPTS).
    dropped = {"EVALUATOR_ALLOW_UNSANDBOXED", "EVALUATOR_BWRAP", "PYTEST_ADDOPTS"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",  # python3 is this virtualenv's
        OUT=str(tmp_path / "out"),
        BUNDLE=str(tmp_path / "no-bundle"),  # not a GPU host's bundle
        GPU_TEST_PATHS="tests/evaluator/test_adversarial_gpu.py",  # one module: collected in seconds
        **extra,
    )
    return subprocess.run(
        ["bash", "scripts/gpu_tests.sh", "tests"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_gpu_pass_whose_tests_all_skipped_says_not_run_and_exits_non_zero(tmp_path):
    """Catches: the script reporting success because pytest exits 0 when every test skipped."""
    _no_gpu_here()
    done = _gpu_pass(tmp_path, EVALUATOR_ALLOW_UNSANDBOXED="1")  # the sandbox is not this test's subject
    out = done.stdout
    assert done.returncode == 5, out[-3000:] + done.stderr[-2000:]
    assert (tmp_path / "out" / "gpu-tests.xml").is_file()  # pytest did run, and skipped everything
    said = re.findall(
        r"^gpu tests: not run \((\d+) collected, all skipped: GPU test: no CUDA GPU visible\)$", out, re.M
    )
    assert said and {int(n) for n in said} == {len(corpus.entries(gpu=True))}, out[-3000:]


def test_a_gpu_pass_without_a_sandbox_is_not_run_unless_asked(tmp_path):
    """Catches: falling back to EVALUATOR_ALLOW_UNSANDBOXED=1 on its own when bubblewrap cannot start."""
    done = _gpu_pass(tmp_path, EVALUATOR_BWRAP=str(tmp_path / "no-such-bwrap"))
    assert done.returncode == 4, done.stdout[-3000:] + done.stderr[-2000:]
    assert "sandbox: UNAVAILABLE" in done.stdout
    assert "gpu tests: not run (no sandbox here; set EVALUATOR_ALLOW_UNSANDBOXED=1" in done.stdout
    assert not (tmp_path / "out" / "gpu-tests.log").exists()  # pytest never started


def test_corpus_entries_with_unmet_needs_are_not_run_and_not_ok(capsys):
    """Catches: corpus.py recording an entry it could not run as ok (exit status 0 for a pass that showed nothing)."""
    _no_gpu_here()
    name = corpus.entries(gpu=True)[0]["name"]
    assert corpus.main(["--gpu-only", "--only", name, "--no-compile-cache"]) == 4
    out = capsys.readouterr().out
    assert f"{name}: not run (not run: gpu: no CUDA GPU visible)" in out
    assert "not run: 1 entry (needs unmet here); not ok" in out
    outcome = corpus.run_entry({"name": "x", "needs": ["sandbox"], "expect": {"status": ["PASSED"]}}, {"sandbox": "no"})
    assert (outcome.ok, outcome.actual, outcome.skipped) == (False, "not run", "sandbox: no")
    assert "not run" in corpus.table([outcome])


def test_a_gpu_test_never_falls_back_to_no_sandbox_on_its_own(tmp_path):
    """Catches: tests/conftest.py's allow_unsandboxed_without_bwrap letting a `gpu` test run unsandboxed."""
    test_file = tmp_path / "test_gpu_probe.py"
    test_file.write_text(
        "import pytest\n\n"
        "@pytest.mark.gpu\n"
        "def test_probe(allow_unsandboxed_without_bwrap):\n"
        "    pass\n\n"
        "def test_cpu_probe(allow_unsandboxed_without_bwrap):\n"
        "    import os\n"
        "    assert os.environ['EVALUATOR_ALLOW_UNSANDBOXED'] == '1'\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "EVALUATOR_ALLOW_UNSANDBOXED"}
    env["EVALUATOR_BWRAP"] = str(tmp_path / "no-such-bwrap")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:django", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-q", str(test_file), "--rootdir", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 passed" in done.stdout and "1 error" in done.stdout  # the gpu test errors in its fixture
    assert "GPU test without a sandbox" in done.stdout and "EVALUATOR_ALLOW_UNSANDBOXED=1" in done.stdout
