"""Shared helpers for the agent-loop tests: scripted replies, a replay server fixture, draining the queues."""

from __future__ import annotations

import django_rq
import pytest

from portal.agent.replay_server import ReplayScript, serve
from portal.agent.services import RunRequest, run_create
from tests.support.factories import BROKEN_KERNEL, GEMM, starter_source
from tests.support.rq_workers import PromptSimpleWorker

API_KEY = "sk-test-SECRET-0123456789abcdefWXYZ"
# A fixed Fernet key (pytest-django runs with DEBUG off, where a key is required); subprocess workers get it too.
FERNET_KEY = "q8V0dWq0m1sQ7cJ5o1yqN3gk0a7x2Y9r4b6c8d0e2f4="
# What every loop test needs: CPU stages only (no GPU here), the replay server admitted, fast backoff.
LOOP_SETTINGS = {
    "EVALUATOR_STAGES": "policy,compile,sass",
    "AGENT_FERNET_KEY": FERNET_KEY,
    "AGENT_ENDPOINT_ALLOWLIST": ["127.0.0.1/32"],
    "AGENT_RETRY_BACKOFF_S": 0.05,
    "AGENT_RETRY_BACKOFF_CAP_S": 0.2,
}


def ended(status: str) -> dict[str, str]:
    """The `outcome` and `verdict_status` of a turn written straight to the database with this published status
    (PASSED, NO_KERNEL, ...): `Turn.objects.create(..., **ended("PASSED"))`."""
    from portal.agent.states import outcome_of_status

    outcome, verdict_status = outcome_of_status(status)
    return {"outcome": outcome, "verdict_status": verdict_status}


def fenced(source: str, lang: str = "cuda") -> str:
    return f"```{lang}\n{source.rstrip()}\n```"


def broken_reply() -> dict:
    return {"content": "Here is a first attempt.\n\n" + fenced(BROKEN_KERNEL), "usage": {"reasoning_tokens": 120}}


def fixed_reply() -> dict:
    return {
        "content": "Sorry, the syntax was wrong. A draft:\n```cuda\n// draft, not the answer\n```\nThe kernel:\n\n"
        + fenced(starter_source()),
        "usage": {"prompt_tokens": 5000, "completion_tokens": 900, "reasoning_tokens": 300},
    }


NO_CODE = {"content": "I would tile the GEMM 128x256 and feed wgmma from TMA; let me think about it more."}
STORM = {"attempts": [{"status": 429, "headers": {"Retry-After": "0"}, "content": "slow down"}]}
HANG = {"hang": True}


@pytest.fixture
def replay():
    """Start a replay server for a script; every server started is stopped at the end of the test."""
    servers = []

    def start(script: dict):
        server = serve(ReplayScript(script))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def drain() -> None:
    """Run every queued step (model calls and CPU-stage evaluations) in-process until the queues are empty."""
    django_rq.get_worker("agent", "gpu-sm90", worker_class=PromptSimpleWorker).work(burst=True)


def start_replay_run(user, server, **fields):
    """A model run against a replay server (`replay` fixture): the GEMM task on sm_90a, model "replay-model", one
    trajectory of one turn, a 5 s request timeout; `fields` set or override any RunRequest field."""
    request = {
        "base_url": server.base_url,
        "model": "replay-model",
        "arch": "sm_90a",
        "task_slugs": [GEMM],
        "api_key": API_KEY,
        "turns": 1,
        "trajectories_per_task": 1,
        "request_timeout": 5.0,
        **fields,
    }
    return run_create(user=user, request=RunRequest(**request))
