"""Repair runs: a teacher model behind an OpenAI-compatible endpoint repairs stored failing kernels.

Each chosen failing turn becomes one trajectory of a model run of kind `repair` (`portal.agent`): the teacher
is sent the student's system prompt and task, the failing kernel as the assistant's message, and the feedback
it got with a request to repair it; every attempt is scored on a GPU worker like any turn, and the trajectory
stops at the first one that passes (or after `attempts`). Because it is a model run, the same SSRF guard, key
encryption, per-user limits, evaluation quota, per-run budget and fair scheduling apply. Pairs are then built
from it like any other data (`portal.fixit.pairs`): only passing (optionally verified) attempts count."""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.contrib.auth.models import User

from portal.agent.models import ModelRun, Turn
from portal.agent.services import RunRefused, RunRequest, run_create
from portal.fixit.pairs import FAILURE_STATUSES, NO_KERNEL, fenced
from portal.fixit.selectors import usable_turns

REPAIR_REQUEST = (
    "The kernel above was written for this task by another model and failed as its evaluation says. Repair it: "
    "find what is wrong, fix it, and answer with the complete corrected file in one ```cuda block."
)


def repair_opening(source: Turn) -> list[dict]:
    """What the teacher is sent before its first attempt: the student's system prompt, then one user message with
    the task, the failing kernel and the feedback it got. (The failing kernel is not put in an assistant message:
    the teacher did not write it, and the loop counts a trajectory's assistant messages as its turns.)"""
    messages = source.trajectory.messages
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    prompt = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    wrong = fenced(source.kernel) if source.kernel else source.reply
    return [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": f"{prompt}\n\n---\n\nA kernel for this task:\n\n{wrong}\n\nIts evaluation:\n\n"
            f"{source.feedback}\n\n{REPAIR_REQUEST}",
        },
    ]


def repair_sources(turn_ids: list[int], *, arch: str) -> list[Turn]:
    """The failing turns a repair run may take, in the order given; RunRefused naming the first that may not."""
    if not turn_ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in turn_ids):
        raise RunRefused("'turns' must be a non-empty list of turn ids")
    turn_ids = list(dict.fromkeys(turn_ids))
    if len(turn_ids) > settings.FIXIT_REPAIR_MAX_SOURCES:
        raise RunRefused(f"at most {settings.FIXIT_REPAIR_MAX_SOURCES} failing turns per repair run")
    found = {
        t.id: t
        for t in usable_turns()
        .filter(id__in=turn_ids, trajectory__run__kind=ModelRun.Kind.MODEL)
        .select_related("trajectory__run", "trajectory__task")
    }
    sources = []
    for turn_id in turn_ids:
        turn = found.get(turn_id)
        if turn is None:
            raise RunRefused(f"turn {turn_id} is not a public, evaluated turn of a model run")
        status = turn.published_status
        if status not in FAILURE_STATUSES or not (turn.kernel or (status == NO_KERNEL and turn.reply)):
            raise RunRefused(f"turn {turn_id} did not fail ({status or 'no status'}): nothing to repair")
        if turn.trajectory.run.arch != arch:
            raise RunRefused(f"turn {turn_id} was evaluated on {turn.trajectory.run.arch}, not {arch}")
        sources.append(turn)
    return sources


def repair_run_create(
    *, user: User, request: RunRequest, turn_ids: list[int], attempts: int = 3, check_limits: bool = True
) -> ModelRun:
    """Start a repair run of `request`'s endpoint over these failing turns, `attempts` turns each at most."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= settings.AGENT_MAX_TURNS:
        raise RunRefused(f"attempts must be between 1 and {settings.AGENT_MAX_TURNS}")
    sources = repair_sources(turn_ids, arch=request.arch)
    request = replace(
        request,
        task_slugs=sorted({t.trajectory.task.slug for t in sources}),
        turns=attempts,
        trajectories_per_task=1,
        target_speedup=0.01,  # stop at the first attempt that passes
        display_name=(request.display_name or f"{request.model} repairs")[:200],
    )
    return run_create(
        user=user, request=request, check_limits=check_limits, repairs=[(t, repair_opening(t)) for t in sources]
    )
