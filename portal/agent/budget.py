"""Reads for the budget a run page and its API document show: the run's evaluations used of its budget, and
(to its owner) the owner's evaluation budget shared with their uploads and the model steps waiting for it."""

from __future__ import annotations

from typing import Any

from portal.agent.models import ModelRun, Turn
from portal.submissions import quotas


def run_budget(run: ModelRun, *, viewer=None) -> dict[str, Any]:
    turns = Turn.objects.filter(trajectory__run=run)
    budget: dict[str, Any] = {
        "used": turns.exclude(evaluation=None).count(),
        "limit": run.evaluation_budget,  # None: no run budget (an operator's run)
        "waiting_turns": turns.filter(state=Turn.State.CALLING_MODEL).exclude(waiting_reason="").count(),
    }
    if viewer is not None and getattr(viewer, "is_authenticated", False) and viewer.id == run.user_id:
        usage = quotas.evaluation_usage(run.user)
        budget["owner"] = {
            "active": usage.active,
            "active_limit": usage.active_limit,
            "last_hour": usage.last_hour,
            "hourly_limit": usage.hourly_limit,
        }
    return budget
