"""The messages between the trusted parent (evaluator.measure.candidate) and the candidate process
(evaluator.candidate_process.child).

One JSON object per line over two private pipes (in profile mode, lines appended to a result file). The
parent sends commands (`{"cmd": ...}`); the child answers with events (`{"event": ...}`). Both sides build
and read messages only through this module, so the names below are the whole protocol:

    parent                         child
    ------                         -----
                                   standby                  (trusted setup done; no submission code loaded yet)
    load                     ->    ready {pid}              (the submission loaded)
    round {round, kind, calls, sampled}
                             ->    round_ready {round}      (idle: the parent now draws the calls' inputs)
    go                       ->    round_done {round}       (the calls ran; `kind` says how, see below)
    next
    finish                   ->    timing {method, fallback_reason, series, launches, functions, l2, footprints}
    exit                     ->    bye {sent}
    (any time)                     error {stage, type, message, traceback}
    (profile mode, no pipes)       done

A candidate process starts while the trusted baseline process of its workload is still being timed: it sets up
(PyTorch, the CUDA context, the lent slots, the timer), says `standby` and waits; only `load`, sent once the
baseline process is gone, loads the submission. The trusted baseline process loads nothing and says `ready` at once.

A round's calls run on the slots the parent lends, inputs drawn there by the parent after `round_ready`
(evaluator/measure/lent_calls.py); no seed ever comes here. Kinds: `trial` (each call synchronised), `timed` (each call
timed on its own in this process, L2 flushed before it; its samples kept when `sampled`), `batch` (back to back,
one synchronise at the end; the parent's clock ranks these).

Candidate code shares the child process and can write to the channel, so the parent checks every message it
reads (`expect_event`, `check_trial`, `check_timing`): anything it did not ask for is a `ChannelViolation`.

Used on both sides of the trust boundary: the candidate process builds events and reads commands with it, the
parent builds commands and validates every event with it (`BASELINE_MODE` names the trusted-baseline process).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.both_sides import hostile_files
from evaluator.both_sides.launches import Launch, dims3

# The job mode of the trusted baseline process: the library baseline timed with no submission code loaded.
BASELINE_MODE = "baseline"

# Commands (parent -> child).
CMD = "cmd"
ROUND = "round"
NEXT = "next"
GO = "go"
FINISH = "finish"
EXIT = "exit"
LOAD = "load"

# Events (child -> parent).
EVENT = "event"
STANDBY = "standby"
READY = "ready"
TIMED = "timing"
ROUND_READY = "round_ready"
ROUND_DONE = "round_done"
BYE = "bye"
ERROR = "error"
DONE = "done"

# Round kinds.
TRIAL_ROUND = "trial"
TIMED_ROUND = "timed"
BATCH_ROUND = "batch"
ROUND_KINDS = (TRIAL_ROUND, TIMED_ROUND, BATCH_ROUND)

# The child's stage when an error happened; "setup" is the evaluator's own code, before the candidate loads.
SETUP_STAGE = "setup"
LOAD_STAGE = "load"


class CandidateError(RuntimeError):
    """The candidate process reported a failure of the candidate's code (load, call or synchronise)."""


class ChannelViolation(CandidateError):
    """A message that the evaluator's side of the candidate process did not send: out of order, extra, or
    malformed. Candidate code shares that process and can write to the channel."""


# --------------------------------------------------------------------------- wire format


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def decode(line: bytes | str) -> Any:
    """One line as JSON (raises json.JSONDecodeError); the caller checks that it is a dict."""
    return json.loads(line)


def decode_command(line: bytes) -> dict[str, Any]:
    """One command line for the candidate process (from the trusted parent): a JSON object."""
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a command that is not a JSON object")
    return message


RESULT_FILE_MAX_BYTES = 16 * 1024 * 1024


def read_result_file(path: Path) -> list[dict[str, Any]]:
    """The events a profiled child appended to its result file; unreadable lines are skipped."""
    try:  # the file lies in the profiled candidate's folder
        text = hostile_files.read_text(path.parent, path.name, max_bytes=RESULT_FILE_MAX_BYTES)
    except hostile_files.Refused:
        return []
    events = []
    for line in text.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(message, dict):
            events.append(message)
    return events


# --------------------------------------------------------------------------- commands (built by the parent)


def round_command(round_: int, kind: str, calls: int, *, sampled: bool = True) -> dict[str, Any]:
    if kind not in ROUND_KINDS:
        raise ValueError(f"unknown round kind {kind!r}")
    return {CMD: ROUND, "round": round_, "kind": kind, "calls": calls, "sampled": sampled}


def next_command() -> dict[str, Any]:
    return {CMD: NEXT}


def go_command() -> dict[str, Any]:
    return {CMD: GO}


def finish_command() -> dict[str, Any]:
    return {CMD: FINISH}


def exit_command() -> dict[str, Any]:
    return {CMD: EXIT}


def load_command() -> dict[str, Any]:
    return {CMD: LOAD}


def command_name(command: dict[str, Any]) -> str:
    return str(command.get(CMD, ""))


def round_args(command: dict[str, Any]) -> tuple[int, str, int, bool]:
    """(round, kind, calls, sampled) of a round command."""
    kind = str(command["kind"])
    if kind not in ROUND_KINDS:
        raise ValueError(f"unknown round kind {kind!r}")
    return int(command["round"]), kind, int(command["calls"]), bool(command.get("sampled", True))


# --------------------------------------------------------------------------- events (built by the child)


def standby_event() -> dict[str, Any]:
    return {EVENT: STANDBY}


def ready_event(pid: int) -> dict[str, Any]:
    return {EVENT: READY, "pid": pid}


def timing_event(
    method: str,
    fallback_reason: str | None,
    series: dict[str, dict[str, Any]],
    launches: dict[str, list[list[Any]]],
    functions: list[list[Any]],
    l2: dict[str, Any],
    footprints: list[list[Any]] | None = None,
    modules: list[list[Any]] | None = None,
) -> dict[str, Any]:
    """`series`: call name ("candidate", "baseline") -> {"samples_ms": [...], "activities": [...]};
    `launches`: "timed", "trials", "batch" -> per call, its kernels as [name, [grid], [block]];
    `functions`: [module id, name] of every function loaded; `l2`: {"changed_bytes", "error"};
    `footprints`: [name, registers, static shared bytes] of every kernel launched, as the activity records say;
    `modules`: [module id, sha256 of its image] of every module loaded, or None where no module records exist."""
    return {
        EVENT: TIMED,
        "method": method,
        "fallback_reason": fallback_reason,
        "series": series,
        "launches": launches,
        "functions": functions,
        "l2": l2,
        "footprints": footprints or [],
        "modules": modules,
    }


def round_ready_event(round_: int) -> dict[str, Any]:
    return {EVENT: ROUND_READY, "round": round_}


def round_done_event(round_: int) -> dict[str, Any]:
    return {EVENT: ROUND_DONE, "round": round_}


def bye_event(sent: int) -> dict[str, Any]:
    return {EVENT: BYE, "sent": sent}


def error_event(stage: str, kind: str, message: str, traceback: str) -> dict[str, Any]:
    return {EVENT: ERROR, "stage": stage, "type": kind, "message": message[:4000], "traceback": traceback[-4000:]}


def done_event() -> dict[str, Any]:
    return {EVENT: DONE}


# --------------------------------------------------------------------------- reading events (the parent)


def is_error(message: dict[str, Any]) -> bool:
    return message.get(EVENT) == ERROR


def is_setup_error(message: dict[str, Any]) -> bool:
    """An error of the evaluator's own code in the child, before the candidate was loaded."""
    return is_error(message) and message.get("stage") == SETUP_STAGE


def describe_error(message: dict[str, Any]) -> str:
    """An error event in words, for the verdict."""
    text = str(message.get("message", "")).strip()
    stage = message.get("stage", "")
    lowered = text.lower()
    if "out of memory" in lowered or "cudaerrormemoryallocation" in lowered:
        prefix = "GPU out of memory"
    elif stage == LOAD_STAGE:
        prefix = "the library failed to load"
    else:
        prefix = "the candidate failed"
    return f"{prefix} ({message.get('type', 'error')}): {text[:2000]}"


def setup_error_text(message: dict[str, Any]) -> str:
    return f"{message.get('type')}: {message.get('message')}"


def expect_event(message: dict[str, Any], event: str) -> dict[str, Any]:
    """`message` if it is the `event` asked for; CandidateError for an error event, ChannelViolation otherwise.

    A setup error is not checked here: the caller turns it into an environment problem first.
    """
    if is_error(message):
        raise CandidateError(describe_error(message))
    if message.get(EVENT) != event:
        raise ChannelViolation(f"expected '{event}' from the candidate process, got {str(message)[:200]}")
    return message


def check_timing(message: dict[str, Any]) -> dict[str, Any]:
    """The timing event with its fields present and of the right kinds."""
    series = message.get("series")
    if not isinstance(series, dict) or not isinstance(series.get("candidate"), dict):
        raise ChannelViolation("a timing message without the candidate's series")
    for s in series.values():
        if (
            not isinstance(s, dict)
            or not isinstance(s.get("samples_ms"), list)
            or not isinstance(s.get("activities"), list)
        ):
            raise ChannelViolation("a timing series without its samples and activity counts")
    launches = message.get("launches")
    if not isinstance(launches, dict) or not all(isinstance(v, list) for v in launches.values()):
        raise ChannelViolation("a timing message without its kernel launches")
    if not isinstance(message.get("functions"), list) or not isinstance(message.get("l2"), dict):
        raise ChannelViolation("a timing message without its loaded functions or L2 state")
    footprints_of(message.get("footprints"))
    images_of(message.get("modules"))
    return message


def check_round(message: dict[str, Any], round_: int) -> dict[str, Any]:
    if message.get("round") != round_:
        raise ChannelViolation(f"expected a message for round {round_}, got one for {message.get('round')!r}")
    return message


def launches_of(raw: Any) -> list[Launch]:
    """One call's launches from the wire, checked: [[name, [gx, gy, gz], [bx, by, bz]], ...]."""
    if not isinstance(raw, list):
        raise ChannelViolation("a call's launches are not a list")
    out = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)):
            raise ChannelViolation("a malformed kernel launch record")
        try:
            out.append(Launch(item[0], dims3(item[1]), dims3(item[2])))
        except (TypeError, ValueError):
            raise ChannelViolation("a kernel launch record whose grid or block is not three integers") from None
    return out


def footprints_of(raw: Any) -> list[tuple[str, int, int]]:
    """The launched kernels' footprints from the wire, checked: [[name, registers, static shared bytes], ...]."""
    if not isinstance(raw, list):
        raise ChannelViolation("a timing message without its kernel footprints")
    out = []
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in item[1:])
        ):
            raise ChannelViolation("a malformed kernel footprint record")
        out.append((item[0], item[1], item[2]))
    return out


def images_of(raw: Any) -> dict[int, str] | None:
    """The loaded modules' image digests from the wire, checked: [[module id, sha256 hex or ""], ...], or None
    (this host's CUPTI gives no module records)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ChannelViolation("a timing message whose loaded modules are not a list")
    out: dict[int, str] = {}
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], int)
            and not isinstance(item[0], bool)
            and isinstance(item[1], str)
            and (item[1] == "" or (len(item[1]) == 64 and all(c in "0123456789abcdef" for c in item[1])))
        ):
            raise ChannelViolation("a malformed loaded-module record")
        out[item[0]] = item[1]
    return out


def check_bye(message: dict[str, Any], received: int) -> None:
    """The child's count of sent messages must match what arrived before the bye."""
    if message.get("sent") != received - 1:
        raise ChannelViolation(f"{received - 1} messages arrived but the evaluator's side sent {message.get('sent')}")


def profile_outcome(events: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, bool]:
    """(the error event if any, whether the done event came) from a profiled child's result file."""
    failed = next((e for e in events if is_error(e)), None)
    return failed, any(e.get(EVENT) == DONE for e in events)
