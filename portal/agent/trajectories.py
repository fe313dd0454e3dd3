"""Trajectory files: export in mini-swe-agent's trajectory format, and read PTXBench-style trajectory files
for re-scoring on this portal's hardware.

mini-swe-agent (2.x) writes `{"trajectory_format": "mini-swe-agent-1.1", "info": {...}, "messages": [...]}`
(see `DefaultAgent.serialize`); its inspector reads any JSON object with a `messages` list (or a bare list)
of `{role, content}` dicts and pages through them at each assistant message. Per-message data goes in each
message's `extra`, as mini-swe-agent does; PTXBench's own numbers go under `info.ptxbench`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from portal.agent.models import Trajectory

TRAJECTORY_FORMAT = "mini-swe-agent-1.1"
# The version of PTXBench's own names under `info.ptxbench` and each message's `extra` (docs/api.md): 2
# (a turn's `speedup_factor`, the verdict's name); documents written before carry no `format` there and say `speedup`.
PTXBENCH_FORMAT = "ptxbench-portal.trajectory-2"


def trajectory_export(trajectory: Trajectory) -> dict[str, Any]:
    """The trajectory as a mini-swe-agent trajectory document (messages as sent and received)."""
    run = trajectory.run
    turns = list(trajectory.turns.all().order_by("index"))
    messages: list[dict[str, Any]] = []
    assistant_seen = 0
    for message in trajectory.messages:
        item: dict[str, Any] = {"role": message.get("role", ""), "content": message.get("content", "")}
        if item["role"] == "assistant" and assistant_seen < len(turns):
            turn = turns[assistant_seen]
            item["extra"] = {
                "turn": turn.index,
                "usage": {
                    "prompt_tokens": turn.prompt_tokens,
                    "completion_tokens": turn.completion_tokens,
                    "reasoning_tokens": turn.reasoning_tokens,
                },
                "latency_s": turn.model_latency_s,
                "kernel_found": bool(turn.kernel),
            }
            assistant_seen += 1
        elif item["role"] == "user" and assistant_seen > 0 and assistant_seen <= len(turns):
            turn = turns[assistant_seen - 1]
            item["extra"] = {
                "turn": turn.index,
                "status": turn.published_status,
                "arch_status": turn.arch_status,
                "speedup_factor": turn.speedup_factor,
                "evaluation": str(turn.evaluation_id) if turn.evaluation_id else None,
            }
        messages.append(item)
    last_kernel = next((t.kernel for t in reversed(turns) if t.kernel), "")
    calls = sum(1 for t in turns if t.replied_at is not None)
    return {
        "trajectory_format": TRAJECTORY_FORMAT,
        "instance_id": f"{trajectory.task.slug}__run{run.id}_t{trajectory.index}",
        "info": {
            "model_stats": {"instance_cost": 0.0, "api_calls": calls},
            "config": {
                "model": {"model_name": run.model, "model_kwargs": {"temperature": run.temperature}},
                "agent_type": "ptxbench-portal.agent",
            },
            "mini_version": None,
            "exit_status": trajectory.stop_reason or trajectory.state,
            "submission": last_kernel,
            "ptxbench": {
                "format": PTXBENCH_FORMAT,
                "run": run.id,
                "display_name": run.display_name,
                "task": trajectory.task.slug,
                "arch": run.arch,
                "pack": run.pack_variant,
                "trajectory": trajectory.index,
                "target_speedup": run.target_speedup,
                "stop_reason": trajectory.stop_reason,
                "stop_message": trajectory.stop_message,
                "gpu_name": run.gpu_name,
                "turns": [
                    {
                        "index": t.index,
                        "status": t.published_status,
                        "arch_status": t.arch_status,
                        "speedup_factor": t.speedup_factor,
                        "prompt_tokens": t.prompt_tokens,
                        "completion_tokens": t.completion_tokens,
                        "reasoning_tokens": t.reasoning_tokens,
                        "model_latency_s": t.model_latency_s,
                    }
                    for t in turns
                ],
            },
        },
        "messages": messages,
    }


class TrajectoryFileError(ValueError):
    pass


@dataclass(frozen=True)
class ImportedTrajectory:
    task: str  # task slug named by the file, or "" when it names none
    model: str
    opening: list[dict[str, str]]  # the messages before the first assistant message
    replies: list[str]  # assistant messages in order, one per turn


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal/Anthropic-style content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def trajectory_parse(data: Any) -> ImportedTrajectory:
    """Read a trajectory document: mini-swe-agent's format (what PTXBench publishes), a bare message list,
    or an object with `messages`. Only roles and text are kept; everything else is ignored."""
    if isinstance(data, list):
        info: dict[str, Any] = {}
        raw = data
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        raw = data["messages"]
    else:
        raise TrajectoryFileError("not a trajectory: expected a JSON object with a 'messages' list, or a list")
    opening: list[dict[str, str]] = []
    replies: list[str] = []
    for message in raw:
        if not isinstance(message, dict):
            raise TrajectoryFileError("every message must be an object with 'role' and 'content'")
        role = str(message.get("role", ""))
        if role == "assistant":
            replies.append(_text(message.get("content")))
        elif not replies and role in ("system", "user"):
            opening.append({"role": role, "content": _text(message.get("content"))})
    if not replies:
        raise TrajectoryFileError("the trajectory has no assistant message to re-score")
    ptx = info.get("ptxbench") if isinstance(info.get("ptxbench"), dict) else {}
    model_cfg = ((info.get("config") or {}).get("model") or {}) if isinstance(info.get("config"), dict) else {}
    task = str(ptx.get("task") or data.get("task", "") if isinstance(data, dict) else "")
    if not task and isinstance(data, dict):
        task = str(data.get("instance_id", "")).split("__")[0]
    return ImportedTrajectory(
        task=task,
        model=str(model_cfg.get("model_name") or "imported"),
        opening=opening,
        replies=replies,
    )


def trajectory_load(text: str) -> ImportedTrajectory:
    try:
        return trajectory_parse(json.loads(text))
    except ValueError as exc:
        if isinstance(exc, TrajectoryFileError):
            raise
        raise TrajectoryFileError(f"not JSON: {exc}")
