"""RQ jobs for Fixit: thin wrappers that take ids and call a service."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def explanation_write(explanation_id: int) -> str:
    from portal.agent import scheduling
    from portal.agent.jobs import _reveal_api_key  # refuses outside the `agent` queue
    from portal.fixit import reasoning
    from portal.fixit.models import RepairExplanation

    user_id = (
        RepairExplanation.objects.filter(id=explanation_id).values_list("trajectory__run__user_id", flat=True).first()
    )
    try:
        outcome = reasoning.explanation_write(explanation_id=explanation_id, reveal_api_key=_reveal_api_key)
    finally:
        if user_id is not None:
            # This call's place in the user's share is free: their next waiting call joins the back of the queue.
            scheduling.model_steps_wake(user_id=user_id)
    log.info("fixit explanation %s: %s", explanation_id, outcome)
    return outcome
