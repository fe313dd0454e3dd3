"""A local HTTP server that speaks the OpenAI chat-completions protocol and replays scripted replies.

It stands in for a model endpoint in tests and demos: real HTTP, real sockets, no model. Usage:

    python -m portal.agent.replay_server --replay script.json --port 8901 [--host 127.0.0.1] [--log log.jsonl]

The script is JSON:

    {"turns": [STEP, STEP, ...],                 # replies for turn 0, 1, ... of any task
     "tasks": {"gemm_n7168_k5120": [STEP, ...]}} # optional, per task (matched in the first user message)

The turn of a request is the number of assistant messages it carries; past the last scripted step the last
one repeats. A STEP is a reply, or {"attempts": [REPLY, ...]} for successive requests of that turn (the last
repeats), which is how 429 storms and "slow, then fine" are scripted. A REPLY has any of:

    content         reply text (default "")
    status          HTTP status (default 200; others answer with an OpenAI-style error body)
    headers         extra response headers, e.g. {"Retry-After": "1"}
    location        redirect target, sent with a 3xx status
    delay           seconds to wait before answering
    hang            true: never answer (the connection stays open until the client gives up)
    usage           {"prompt_tokens", "completion_tokens", "reasoning_tokens"} (defaults: characters / 4)
    finish_reason   default "stop"

Every request is recorded (GET /_log returns the list; --log appends JSON lines): sequence number, task,
turn, attempt, model, and the last 4 characters of the bearer token, never the token.
Standard library only: it must run without Django and without the portal's dependencies.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HANG_LIMIT_S = 3600.0
STOP_POLL_S = 0.02  # how often the serving loop checks for `stop`


class ReplayScript:
    def __init__(self, data: dict[str, Any]) -> None:
        self.turns: list = list(data.get("turns") or [])
        self.tasks: dict[str, list] = {str(k): list(v) for k, v in (data.get("tasks") or {}).items()}
        if not self.turns and not self.tasks:
            raise ValueError("the replay script has neither 'turns' nor 'tasks'")
        self._attempts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path) -> ReplayScript:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def task_of(self, messages: list[dict]) -> str:
        first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        if not isinstance(first_user, str):
            first_user = json.dumps(first_user)
        # Longest name first, so gemm_a_causal is not taken for gemm_a.
        for name in sorted(self.tasks, key=len, reverse=True):
            if name in first_user:
                return name
        return ""

    def pick(self, messages: list[dict]) -> tuple[str, int, int, dict]:
        """(task, turn, attempt, reply) for a request carrying `messages`."""
        task = self.task_of(messages)
        steps = self.tasks.get(task) or self.turns
        if not steps:
            return task, 0, 0, {"content": ""}
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        step = steps[min(turn, len(steps) - 1)]
        with self._lock:
            attempt = self._attempts.get((task, turn), 0)
            self._attempts[(task, turn)] = attempt + 1
        if isinstance(step, dict) and "attempts" in step:
            options = step["attempts"] or [{"content": ""}]
            return task, turn, attempt, options[min(attempt, len(options) - 1)]
        return task, turn, attempt, step


class ReplayServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], script: ReplayScript, log_path: Path | None = None) -> None:
        super().__init__(address, ReplayHandler)
        self.script = script
        self.log_path = log_path
        self.requests: list[dict] = []
        self.stopping = threading.Event()
        self._log_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def record(self, entry: dict) -> None:
        with self._log_lock:
            entry["seq"] = len(self.requests)
            self.requests.append(entry)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def start_in_thread(self) -> threading.Thread:
        # `stop` waits for the serving loop to notice; at the default half-second poll that is most of a short run.
        thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": STOP_POLL_S}, name="replay-server", daemon=True
        )
        thread.start()
        return thread

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


class ReplayHandler(BaseHTTPRequestHandler):
    server: ReplayServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the request log is the record
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/_log"):
            with self.server._log_lock:
                body = json.dumps(self.server.requests).encode()
            self._send(200, body)
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": []}).encode())
        else:
            self._send(404, _error_body("not found", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, _error_body(f"no route {self.path}", "not_found"))
            return
        try:
            request = json.loads(raw or b"{}")
            messages = list(request.get("messages") or [])
        except (ValueError, AttributeError):
            self._send(400, _error_body("the body is not a chat-completions request", "invalid_request_error"))
            return
        task, turn, attempt, reply = self.server.script.pick(messages)
        auth = self.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else ""
        entry = {
            "at": time.time(),
            "task": task,
            "turn": turn,
            "attempt": attempt,
            "model": request.get("model"),
            "messages": len(messages),
            "token_last4": token[-4:] if token else "",
            "host_header": self.headers.get("Host", ""),
            "outcome": "hang" if reply.get("hang") else str(reply.get("status", 200)),
        }
        self.server.record(entry)
        if reply.get("hang"):
            self.server.stopping.wait(HANG_LIMIT_S)
            self.close_connection = True
            return
        delay = float(reply.get("delay") or 0)
        if delay and self.server.stopping.wait(delay):
            self.close_connection = True
            return
        status = int(reply.get("status", 200))
        headers = dict(reply.get("headers") or {})
        if reply.get("location"):
            headers["Location"] = str(reply["location"])
        if status != 200:
            kind = "rate_limit_exceeded" if status == 429 else "server_error"
            self._send(status, _error_body(str(reply.get("content") or f"scripted HTTP {status}"), kind), headers)
            return
        self._send(200, json.dumps(_completion(request, messages, reply)).encode(), headers)

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(str(key), str(value))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()


def _completion(request: dict, messages: list[dict], reply: dict) -> dict:
    content = str(reply.get("content") or "")
    usage = dict(reply.get("usage") or {})
    prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
    prompt_tokens = int(usage.get("prompt_tokens", max(1, prompt_chars // 4)))
    completion_tokens = int(usage.get("completion_tokens", max(1, len(content) // 4)))
    body_usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if "reasoning_tokens" in usage:
        body_usage["completion_tokens_details"] = {"reasoning_tokens": int(usage["reasoning_tokens"])}
    return {
        "id": f"chatcmpl-replay-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or "replay",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": reply.get("finish_reason", "stop"),
            }
        ],
        "usage": body_usage,
    }


def serve(script: ReplayScript, host: str = "127.0.0.1", port: int = 0, log_path: Path | None = None) -> ReplayServer:
    """Start a server in a background thread; `server.base_url` is what a run's endpoint should be."""
    server = ReplayServer((host, port), script, log_path)
    server.start_in_thread()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay scripted chat-completions replies over HTTP.")
    parser.add_argument("--replay", required=True, help="JSON script of replies (see the module docstring)")
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log", type=Path, help="append one JSON line per request here")
    args = parser.parse_args(argv)
    server = ReplayServer((args.host, args.port), ReplayScript.load(args.replay), args.log)
    print(f"replaying {args.replay} at {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
