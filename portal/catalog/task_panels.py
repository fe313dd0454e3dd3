"""What apps above the catalog add to a task's page. The catalog owns the page (`views.task_detail`) and knows
nothing of results; an app with something to show there registers a panel in its AppConfig.ready(): the
leaderboard's is the current best kernel per architecture and the library's latency per GPU
(`portal/leaderboard/boards/task_highlights.py`). A panel takes the task and its architectures (Hopper first) and returns
the template context it fills."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from portal.catalog.models import Task

TaskPanel = Callable[[Task, list[str]], dict[str, Any]]

_panels: dict[str, TaskPanel] = {}


def register_task_panel(name: str, panel: TaskPanel) -> None:
    """Add `panel` to every task page (registering a name again replaces it)."""
    _panels[name] = panel


def task_panels_context(task: Task, arches: list[str]) -> dict[str, Any]:
    """The context of every registered panel, in registration order."""
    context: dict[str, Any] = {}
    for panel in _panels.values():
        context.update(panel(task, arches))
    return context
