"""One chat-completions call to a user's OpenAI-compatible endpoint, with bounded retries.

Uses the official `openai` client over the SSRF-pinned httpx client. Retries 429, 5xx, timeouts and
connection failures with exponential backoff (honouring Retry-After up to a cap); anything else, or running
out of attempts, is a ModelCallError whose message explains what happened, for the trajectory's record.
The API key never appears in a message or a log line: errors are scrubbed of it before they leave here.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import openai

from portal.agent.ssrf import Allowlist, EndpointRefused, pinned_client

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


def _scrub(text: str, secret: str) -> str:
    text = str(text)[:1000]
    return text.replace(secret, "••••") if secret else text


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return min(float(value), RETRY_AFTER_CAP_S) if value else None
    except ValueError:
        return None


def chat_completion(
    config: EndpointConfig,
    messages: list[dict],
    *,
    allowlist: Allowlist | None = None,
    sleep=time.sleep,
) -> ModelReply:
    """Send `messages` and return the first choice's text and usage, or raise ModelCallError."""
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
    try:
        for attempt in range(1, attempts_allowed + 1):
            wait = None
            started = time.monotonic()
            try:
                response = client.chat.completions.create(
                    model=config.model,
                    messages=messages,
                    temperature=config.temperature,
                    max_tokens=config.max_output_tokens,
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
                problems.append(f"no answer within {config.request_timeout:g} s")
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
                sleep(delay)
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
