"""Evaluator tests run candidate code under bubblewrap where it works. Where it does not (a CI container without
the package or without namespaces), the evaluator would refuse: the tests then allow unsandboxed mode explicitly,
as an operator would, and the sandbox tests (test_sandbox_jail.py) check that the verdicts say so."""

from __future__ import annotations

import os

from evaluator.errors import EnvironmentProblem
from evaluator.jail import open_jail


def _sandbox_problem() -> str | None:
    try:
        open_jail(allow_unsandboxed=False)
    except EnvironmentProblem as exc:
        return str(exc)
    return None


SANDBOX_PROBLEM = _sandbox_problem()
if SANDBOX_PROBLEM is not None:
    os.environ.setdefault("EVALUATOR_ALLOW_UNSANDBOXED", "1")


def pytest_report_header(config):
    return f"evaluator sandbox: {'bubblewrap' if SANDBOX_PROBLEM is None else 'unavailable: ' + SANDBOX_PROBLEM}"
