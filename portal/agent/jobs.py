"""RQ jobs of the agent loop, all on the `agent` queue: thin wrappers that take ids and call services.
This is the only module that decrypts an endpoint's API key, and only inside an `agent` queue job."""

from __future__ import annotations

import logging

from rq import get_current_job

from portal.agent import crypto, scheduling, services
from portal.agent.models import ModelRun, Turn
from portal.agent.queueing import QUEUE

log = logging.getLogger(__name__)


def _reveal_api_key(run: ModelRun) -> str:
    job = get_current_job()
    if job is None or job.origin != QUEUE:
        raise RuntimeError(f"API keys are decrypted only inside jobs of the {QUEUE!r} queue")
    return crypto.api_key_decrypt(run.api_key_encrypted)


def turn_call_model(turn_id: int) -> str:
    """The model step; returns (to RQ) the line it logged."""
    user_id = Turn.objects.filter(id=turn_id).values_list("trajectory__run__user_id", flat=True).first()
    outcome = services.turn_model_step(turn_id=turn_id, reveal_api_key=_reveal_api_key)
    log.info("turn %s model step: %s", turn_id, outcome)
    if user_id is not None and not outcome.parked:
        # This step's place in the user's share is free: their next waiting step joins the back of the queue.
        scheduling.model_steps_wake(user_id=user_id)
    return str(outcome)


def turn_after_evaluation(turn_id: int) -> str:
    """The verdict step; returns (to RQ) the line it logged."""
    outcome = services.turn_verdict_step(turn_id=turn_id)
    log.info("turn %s verdict step: %s", turn_id, outcome)
    return str(outcome)
