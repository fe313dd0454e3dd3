"""The in-process RQ worker tests drain queues with: the portal's own (portal/core/rq_workers.py), whose
`work(burst=True)` returns when its queues are empty, not a minute later."""

from __future__ import annotations

from portal.core.rq_workers import PromptSimpleWorker

__all__ = ["PromptSimpleWorker"]
