"""Whether this machine can run candidates under bubblewrap, asked once per session."""

from __future__ import annotations

import functools

from evaluator.errors import EnvironmentProblem
from evaluator.isolation.jail import open_jail


@functools.cache
def sandbox_problem() -> str | None:
    """None when bubblewrap works here, else why it does not (a CI container without it or without namespaces)."""
    try:
        open_jail(allow_unsandboxed=False)
    except EnvironmentProblem as exc:
        return str(exc)
    return None
