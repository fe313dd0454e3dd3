"""Evaluator tests run candidate code under bubblewrap where it works. Where it does not (a CI container without
the package or without namespaces), the evaluator would refuse: each test then allows unsandboxed mode
explicitly, as an operator would (the `allow_unsandboxed_without_bwrap` fixture, undone after the test), and the
sandbox tests (test_sandbox_jail.py) check that the verdicts say so.

Modules whose subject is compiling, the compile cache or a compile time-out compile for real: they get the
`no_compile_cache` marker here; every other test shares the session's compile cache (tests/conftest.py).
The nvcc- and Triton-heavy tests get the `slow` marker here (run by `make test`, left out by `make test-fast`):
the CPU adversarial corpus, the compile cache's own tests, the successful nvcc compile, the Triton ahead-of-time
compiles, and the failure variants of the pipeline test (the passing and the time-out cases stay in the fast run)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.sandbox import sandbox_problem

COMPILES_FOR_REAL = {"test_compile.py", "test_compile_cache.py"}
# module -> its slow tests (None: all of them)
SLOW: dict[str, set[str] | None] = {
    "test_adversarial_cpu.py": {"test_cpu_entry_gets_its_expected_verdict", "test_write_outside_left_nothing_behind"},
    "test_compile_cache.py": None,
    "test_compile.py": {"test_compile_success_for_sm90a"},
    "test_triton_cpu.py": {
        "test_reference_triton_gemm_compiles_ahead_of_time_with_gmma_and_tma",
        "test_a_second_process_finds_the_compiled_kernels_and_compiles_nothing",
        "test_the_same_triton_file_compiles_for_sm_100a_with_tcgen05_and_tma",
    },
    "test_pipeline_cpu.py": {
        "test_wrong_candidate",
        "test_unwritten_output_fails_as_nan",
        "test_input_modification_is_named",
        "test_crash_is_runtime_error",
        "test_noisy_stdout_is_captured_and_capped",
    },
}


def pytest_report_header(config):
    problem = sandbox_problem()
    return f"evaluator sandbox: {'bubblewrap' if problem is None else 'unavailable: ' + problem}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent.name != "evaluator" or item.path.parent.parent.name != "tests":
            continue
        if item.path.name in COMPILES_FOR_REAL:
            item.add_marker(pytest.mark.no_compile_cache)
        if item.path.name in SLOW and (SLOW[item.path.name] is None or item.originalname in SLOW[item.path.name]):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _evaluator_tests_allow_unsandboxed_without_bwrap(allow_unsandboxed_without_bwrap):
    """Every evaluator test runs candidates, so each one gets the fixture."""


@pytest.fixture
def host_tmp():
    """A folder directly under the system's temporary folder, for tests that run candidate code unsandboxed: a root
    evaluator runs it as the sandbox user on the host's own folders, and pytest makes its base folder private again
    whenever another pytest process (an xdist worker) starts, which would shut that user out mid-test."""
    path = Path(tempfile.mkdtemp(prefix="ptxbench-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
