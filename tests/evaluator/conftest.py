"""Evaluator tests run candidate code under bubblewrap where it works. Where it does not (a CI container without
the package or without namespaces), the evaluator would refuse: each test then allows unsandboxed mode
explicitly, as an operator would (the `allow_unsandboxed_without_bwrap` fixture, undone after the test), and the
sandbox tests (test_sandbox_jail.py) check that the verdicts say so.

Modules whose subject is compiling, the compile cache or a compile time-out compile for real: they get the
`no_compile_cache` marker here; every other test shares the session's compile cache (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.sandbox import sandbox_problem

COMPILES_FOR_REAL = {"test_compile.py", "test_compile_cache.py"}


def pytest_report_header(config):
    problem = sandbox_problem()
    return f"evaluator sandbox: {'bubblewrap' if problem is None else 'unavailable: ' + problem}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in COMPILES_FOR_REAL and item.path.parent.name == "evaluator":
            item.add_marker(pytest.mark.no_compile_cache)


@pytest.fixture(autouse=True)
def _evaluator_tests_allow_unsandboxed_without_bwrap(allow_unsandboxed_without_bwrap):
    """Every evaluator test runs candidates, so each one gets the fixture."""
