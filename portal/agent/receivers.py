"""Signal receivers: an evaluation that finished moves its turn's trajectory to the next step."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from portal.submissions.services import evaluation_finished

log = logging.getLogger(__name__)


@receiver(evaluation_finished, dispatch_uid="agent.turn_after_evaluation")
def on_evaluation_finished(sender, evaluation_id: str, **kwargs) -> None:
    from portal.agent.services import evaluation_finished_received

    try:
        evaluation_finished_received(evaluation_id=str(evaluation_id))
    except Exception:  # noqa: BLE001 - the GPU worker's job must not fail for this; reconcile queues it later
        log.exception("could not queue the verdict step for evaluation %s; the reconcile job will", evaluation_id)
