"""Watching an evaluation until it is final: one rewritten status line on a terminal, plain lines (one per change)
otherwise, so logs and CI output stay readable."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ptxbench_cli.api import CliError
from ptxbench_cli.text import one_line

POLL_S = 1.0
POLL_MAX_S = 5.0


def describe(evaluation: dict[str, Any]) -> str:
    """One line: the state, and on a running evaluation the stage with its message."""
    state = evaluation.get("state", "?")
    if state == "queued":
        position = evaluation.get("queue_position")
        where = f" on {evaluation.get('queue')}" if evaluation.get("queue") else ""
        return f"queued{where}" + (f", position {position}" if position else "")
    if state == "running":
        current = next((s for s in evaluation.get("stages") or [] if s.get("state") == "running"), None)
        stage = (current or {}).get("label") or evaluation.get("stage") or "starting"
        message = (current or {}).get("message") or evaluation.get("message") or ""
        said = {stage.strip().lower(), str((current or {}).get("stage") or "").lower()}
        return f"running: {stage}" + (f" ({message})" if message and message.strip().lower() not in said else "")
    return str(state)


class Watcher:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self._last = ""

    def show(self, line: str) -> None:
        line = one_line(line, 200)
        if line == self._last:
            return
        self._last = line
        if self.live:
            self.stream.write("\r\x1b[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.live and self._last:
            self.stream.write("\n")
            self.stream.flush()


def wait_for(fetch: Callable[[], dict[str, Any]], *, timeout_s: float, watcher: Watcher) -> dict[str, Any]:
    """Poll until `final`; the poll interval grows from 1 s to 5 s while nothing changes."""
    deadline = time.monotonic() + timeout_s
    interval = POLL_S
    last = None
    while True:
        evaluation = fetch()
        line = describe(evaluation)
        watcher.show(line)
        if evaluation.get("final"):
            watcher.done()
            return evaluation
        if time.monotonic() >= deadline:
            watcher.done()
            raise CliError(
                f"gave up waiting after {timeout_s:.0f} s; the evaluation goes on (ptxbench status {evaluation.get('id')})",
                exit_code=6,
            )
        interval = POLL_S if line != last else min(POLL_MAX_S, interval * 1.5)
        last = line
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
