"""RQ jobs for Fixit: thin wrappers that take ids and call a service."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def explanation_write(explanation_id: int) -> str:
    from portal.agent.jobs import _reveal_api_key  # refuses outside the `agent` queue
    from portal.fixit import reasoning

    outcome = reasoning.explanation_write(explanation_id=explanation_id, reveal_api_key=_reveal_api_key)
    log.info("fixit explanation %s: %s", explanation_id, outcome)
    return outcome
