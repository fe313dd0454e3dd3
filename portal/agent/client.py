"""One chat-completions call to a user's OpenAI-compatible endpoint, with bounded retries.

Uses the official `openai` client over the SSRF-pinned httpx client. Retries 429, 5xx, timeouts and
connection failures with exponential backoff (honouring Retry-After up to a cap); anything else, or running
out of attempts, is a ModelCallError whose message explains what happened, for the trajectory's record.
The API key never appears in a message or a log line: errors are scrubbed of it before they leave here.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from portal.agent.ssrf import Allowlist, EndpointRefused, pinned_client

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)
# httpx logs request URLs at INFO and the OpenAI client dumps request options at DEBUG; neither belongs in
# the portal's logs (a URL may carry a token in its query).
for _name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
    logging.getLogger(_name).setLevel(logging.WARNING)

RETRY_AFTER_CAP_S = 60.0


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str  # plain; lives only in the agent job's memory
    temperature: float
    max_output_tokens: int
    request_timeout: float
    max_retries: int
    backoff_base_s: float = 2.0
    backoff_cap_s: float = 60.0


@dataclass(frozen=True)
class ModelReply:
    content: str
    finish_reason: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None  # usage.completion_tokens_details.reasoning_tokens, when reported
    latency_s: float  # of the successful request
    attempts: int  # HTTP attempts, including the successful one


class ModelCallError(Exception):
    """The endpoint gave no usable reply. `message` explains it for people; `attempts` counts requests."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts


class ModelCallStopped(ModelCallError):
    """The call was ended by the portal: the run was cancelled, or the step's wall-clock cap was reached."""


def _scrub(text: str, secret: str) -> str:
    text = str(text)[:1000]
    return text.replace(secret, "••••") if secret else text


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return min(float(value), RETRY_AFTER_CAP_S) if value else None
    except ValueError:
        return None


class _Stopped(Exception):
    """The caller's stop check said so, or the step's wall-clock deadline passed."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _request_in_thread(send, *, should_stop, deadline: float, poll_s: float, on_abandon):
    """Run `send()` (one HTTP request) in a thread and wait for it in slices of `poll_s`, checking the stop flag
    and the deadline between slices, so a hanging endpoint cannot hold the job past either. On a stop the
    client is closed (`on_abandon`): the request's thread ends at its own timeout at the latest, and RQ's work
    horse, which exits after the job, takes it down at once."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = send()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="model-call", daemon=True)
    thread.start()
    while True:
        thread.join(timeout=max(0.0, min(poll_s, deadline - time.monotonic())))
        if not thread.is_alive():
            break
        why = "the run was cancelled" if should_stop() else None
        if why is None and time.monotonic() >= deadline:
            why = "the model-call step reached its wall-clock cap"
        if why:
            on_abandon()
            raise _Stopped(why)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _wait(seconds: float, *, should_stop, deadline: float, poll_s: float) -> None:
    """Sleep between attempts, in slices, ending early on a stop or at the deadline."""
    until = min(time.monotonic() + seconds, deadline)
    while True:
        if should_stop():
            raise _Stopped("the run was cancelled")
        left = until - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(poll_s, left))
    if time.monotonic() >= deadline:
        raise _Stopped("the model-call step reached its wall-clock cap")


def chat_completion(
    config: EndpointConfig,
    messages: list[dict],
    *,
    allowlist: Allowlist | None = None,
    should_stop=lambda: False,
    wall_clock_s: float | None = None,
    poll_s: float = 1.0,
) -> ModelReply:
    """Send `messages` and return the first choice's text and usage, or raise ModelCallError.
    Every attempt and every wait together end within `wall_clock_s` (default: unbounded but for the attempts'
    own timeouts), and `should_stop()` is asked at least every `poll_s` seconds, a request in flight included."""
    # Imported here, not with the module: the SDK's types cost ~1.4 s of CPU, and every Django process (each
    # management command, web server and worker start) imports this module through the agent's views.
    import openai

    started_step = time.monotonic()
    budget = wall_clock_s if wall_clock_s is not None else (config.max_retries + 1) * (config.request_timeout + 60)
    deadline = started_step + budget
    http_client = pinned_client(timeout=config.request_timeout, allowlist=allowlist)
    client = openai.OpenAI(
        base_url=config.base_url,
        # Local servers take any key; the SDK insists on a non-empty one.
        api_key=config.api_key or "no-key",
        timeout=config.request_timeout,
        max_retries=0,  # retries are ours, bounded and explained
        http_client=http_client,
    )
    attempts_allowed = config.max_retries + 1
    problems: list[str] = []
    attempt = 0
    try:
        for attempt in range(1, attempts_allowed + 1):
            wait = None
            started = time.monotonic()
            timeout = max(0.1, min(config.request_timeout, deadline - started))
            try:
                response = _request_in_thread(
                    lambda timeout=timeout: client.chat.completions.create(
                        model=config.model,
                        messages=messages,
                        temperature=config.temperature,
                        max_tokens=config.max_output_tokens,
                        timeout=timeout,
                    ),
                    should_stop=should_stop,
                    deadline=deadline,
                    poll_s=poll_s,
                    on_abandon=http_client.close,
                )
            except EndpointRefused as exc:
                raise ModelCallError(f"endpoint refused by the portal: {exc.message}", attempt)
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = _scrub(getattr(exc, "message", "") or "", config.api_key)
                if status == 429 or status >= 500:
                    problems.append(f"HTTP {status}")
                    wait = _retry_after(exc)
                elif 300 <= status < 400:
                    raise ModelCallError(
                        f"the endpoint answered HTTP {status} (a redirect); redirects are not followed: "
                        "give the final URL of the OpenAI-compatible API",
                        attempt,
                    )
                else:
                    raise ModelCallError(f"the endpoint refused the request: HTTP {status}: {detail}", attempt)
            except openai.APITimeoutError:
                problems.append(f"no answer within {timeout:g} s")
            except openai.APIConnectionError as exc:
                problems.append(f"connection failed ({_scrub(type(exc.__cause__ or exc).__name__, '')})")
            except openai.OpenAIError as exc:
                raise ModelCallError(f"the endpoint's answer could not be read: {_scrub(exc, config.api_key)}", attempt)
            else:
                latency = time.monotonic() - started
                return _reply_from(response, latency, attempt)
            if attempt < attempts_allowed:
                delay = min(config.backoff_cap_s, config.backoff_base_s * 2 ** (attempt - 1))
                if wait is not None:
                    delay = max(delay, min(wait, config.backoff_cap_s))
                log.info(
                    "model call attempt %d/%d failed (%s); retrying in %.1f s",
                    attempt,
                    attempts_allowed,
                    problems[-1],
                    delay,
                )
                _wait(delay, should_stop=should_stop, deadline=deadline, poll_s=poll_s)
    except _Stopped as stop:
        summary = f" ({', '.join(problems)})" if problems else ""
        raise ModelCallStopped(
            f"{stop.why} after {time.monotonic() - started_step:.0f} s and {attempt} attempt(s){summary}", attempt
        ) from None
    finally:
        http_client.close()
    summary = ", ".join(problems)
    raise ModelCallError(f"the endpoint gave no reply after {attempts_allowed} attempts: {summary}", attempts_allowed)


def _reply_from(response, latency: float, attempts: int) -> ModelReply:
    if not getattr(response, "choices", None):
        raise ModelCallError("the endpoint's answer has no choices", attempts)
    choice = response.choices[0]
    content = (choice.message.content if choice.message else None) or ""
    usage = getattr(response, "usage", None)
    details = getattr(usage, "completion_tokens_details", None) if usage else None
    return ModelReply(
        content=content,
        finish_reason=str(choice.finish_reason or "")[:32],
        prompt_tokens=getattr(usage, "prompt_tokens", None) if usage else None,
        completion_tokens=getattr(usage, "completion_tokens", None) if usage else None,
        reasoning_tokens=getattr(details, "reasoning_tokens", None) if details else None,
        latency_s=latency,
        attempts=attempts,
    )
