"""API clients for the reliability benchmark: closed-loop threads posting to /api/v1/submissions, each with its own
user and token, and the statistics over what they saw. The percentile and summary code is pure."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TASK = "gemm_n7168_k5120"
ARCH = "sm_90a"

# What each kind of fresh source must get as a verdict from a CPU-stages-only worker.
EXPECTED_STATUS = {"compile": "STATIC_ONLY", "policy": "POLICY_REJECTED", "broken": "COMPILE_ERROR"}

BROKEN = """// does not compile: a syntax error the compiler must report
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) { this is not C++ }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
"""


@dataclass
class Outcome:
    """One HTTP exchange as a client saw it."""

    t: float  # seconds since the run started, when the request was sent
    client: int
    kind: str  # fresh:<compile|policy|broken>, duplicate, invalid:<what>, read, retry:<kind of the original>
    status: int  # HTTP status; 0 for a connection error or timeout
    latency_ms: float
    submission_id: int | None = None
    evaluation_id: str = ""
    error: str = ""
    expected: int | None = None  # for invalid requests, the status the API must answer with


@dataclass
class Accepted:
    submission_id: int
    evaluation_id: str
    kind: str  # compile | policy | broken
    client: int
    t: float


@dataclass
class LoadState:
    """Shared between client threads; appends are atomic under the GIL, the source pool has its own lock."""

    outcomes: list[Outcome] = field(default_factory=list)
    accepted: dict[int, Accepted] = field(default_factory=dict)
    pool: list[str] = field(default_factory=list)  # accepted sources, resent as duplicates
    pool_lock: threading.Lock = field(default_factory=threading.Lock)


class SourceMaker:
    """Distinct kernels by varying a trailing comment: the starter (compiles: ~5-10 s of nvcc here), the starter
    with a forbidden include (refused by policy in well under a second), and a syntax error (~3 s)."""

    def __init__(self, repo: Path) -> None:
        self.starter = (repo / "tasks" / TASK / "starter.cu").read_text()

    def make(self, kind: str, tag: str) -> str:
        if kind == "compile":
            return f"{self.starter}\n// reliability bench {tag}\n"
        if kind == "policy":
            return f"#include <cublas_v2.h>\n{self.starter}\n// reliability bench {tag}\n"
        return f"{BROKEN}// reliability bench {tag}\n"


def _invalid_request(kind: str, token: str) -> tuple[bytes, dict[str, str], int]:
    """Body, headers and the status the API must answer with, for one kind of bad request."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    good = {"task": TASK, "arch": ARCH, "source": "// x\n"}
    if kind == "unknown-task":
        return json.dumps({**good, "task": "no_such_task"}).encode(), headers, 404
    if kind == "missing-source":
        return json.dumps({"task": TASK, "arch": ARCH}).encode(), headers, 400
    if kind == "no-target":
        return json.dumps({**good, "arch": "sm_80"}).encode(), headers, 400
    if kind == "not-json":
        return b"{this is not json", headers, 400
    if kind == "blank-source":
        return json.dumps({**good, "source": "   \n"}).encode(), headers, 400
    if kind == "bad-token":
        return json.dumps(good).encode(), {**headers, "Authorization": "Bearer ptx_not-a-real-token"}, 401
    if kind == "oversize":  # just over MAX_SOURCE_BYTES (1 MiB) but under the request limit
        return json.dumps({**good, "source": "/" * (1024 * 1024 + 16)}).encode(), headers, 413
    raise ValueError(kind)


INVALID_KINDS = ("unknown-task", "missing-source", "no-target", "not-json", "blank-source", "bad-token")


def _exchange(
    host: str, port: int, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, dict | None, str]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        return response.status, payload, ""
    except (OSError, http.client.HTTPException) as exc:
        return 0, None, f"{type(exc).__name__}: {exc}"[:200]
    finally:
        conn.close()


class Client(threading.Thread):
    def __init__(
        self,
        index: int,
        token: str,
        *,
        port: int,
        state: LoadState,
        maker: SourceMaker,
        t0: float,
        stop: threading.Event,
        mix: dict[str, float],
        seed: int,
    ) -> None:
        super().__init__(name=f"client-{index}", daemon=True)
        self.index = index
        self.token = token
        self.port = port
        self.state = state
        self.maker = maker
        self.t0 = t0
        self.stop_event = stop
        self.mix = mix
        self.rng = random.Random(seed)
        self.sequence = 0

    def _post(self, kind: str, body: bytes, headers: dict[str, str], expected: int | None = None) -> Outcome:
        sent = time.monotonic()
        status, payload, error = _exchange("127.0.0.1", self.port, "POST", "/api/v1/submissions", body, headers, 60)
        outcome = Outcome(
            t=round(sent - self.t0, 3),
            client=self.index,
            kind=kind,
            status=status,
            latency_ms=round((time.monotonic() - sent) * 1000, 1),
            error=error or (str(payload.get("error", ""))[:200] if status >= 400 and payload else ""),
            expected=expected,
        )
        if status in (200, 201) and payload:
            outcome.submission_id = payload.get("id")
            evaluations = payload.get("evaluations") or [{}]
            outcome.evaluation_id = str(evaluations[0].get("id", ""))
        self.state.outcomes.append(outcome)
        return outcome

    def _fresh(self) -> None:
        weights = self.mix
        kind = self.rng.choices(list(weights), weights=list(weights.values()))[0]
        self.sequence += 1
        source = self.maker.make(kind, f"c{self.index} n{self.sequence} {self.rng.getrandbits(32):08x}")
        body = json.dumps({"task": TASK, "arch": ARCH, "source": source, "name": f"rb-{kind}"}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        outcome = self._post(f"fresh:{kind}", body, headers)
        if outcome.status in (0,) or outcome.status >= 500:
            # A real client retries once; the sha256 dedup makes that safe (200 if the first try was stored).
            time.sleep(1.0)
            outcome = self._post(f"retry:{kind}", body, headers)
        if outcome.status == 201 and outcome.submission_id:
            self._remember(outcome, kind, source)

    def _remember(self, outcome: Outcome, kind: str, source: str) -> None:
        self.state.accepted[outcome.submission_id] = Accepted(
            outcome.submission_id, outcome.evaluation_id, kind, self.index, outcome.t
        )
        with self.state.pool_lock:
            self.state.pool.append(source)

    def _duplicate(self) -> None:
        with self.state.pool_lock:
            source = self.rng.choice(self.state.pool) if self.state.pool else None
        if source is None:
            return self._fresh()
        body = json.dumps({"task": TASK, "arch": ARCH, "source": source}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        self._post("duplicate", body, headers, expected=200)
        return None

    def _invalid(self) -> None:
        kind = "oversize" if self.rng.random() < 0.05 else self.rng.choice(INVALID_KINDS)
        body, headers, expected = _invalid_request(kind, self.token)
        self._post(f"invalid:{kind}", body, headers, expected=expected)

    def _read(self) -> None:
        ids = list(self.state.accepted)
        if not ids:
            return
        sent = time.monotonic()
        path = f"/api/v1/submissions/{self.rng.choice(ids)}"
        status, _, error = _exchange("127.0.0.1", self.port, "GET", path, None, {}, 60)
        latency = round((time.monotonic() - sent) * 1000, 1)
        self.state.outcomes.append(Outcome(round(sent - self.t0, 3), self.index, "read", status, latency, error=error))

    def run(self) -> None:
        while not self.stop_event.is_set():
            roll = self.rng.random()
            if roll < 0.60:
                self._fresh()
            elif roll < 0.85:
                self._duplicate()
            elif roll < 0.95:
                self._invalid()
            else:
                self._read()
            last = self.state.outcomes[-1] if self.state.outcomes else None
            if last is not None and last.client == self.index and last.status == 0:
                time.sleep(0.5)  # the site is down (restart): don't spin on connection refused


# --------------------------------------------------------------------------- statistics (pure)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def category(outcome: Outcome) -> str:
    """accepted / duplicate / rate_limited / invalid / failed / read for one outcome."""
    if outcome.kind == "read":
        return "read"
    if outcome.status == 0 or outcome.status >= 500:
        return "failed"
    if outcome.status == 201:
        return "accepted"
    if outcome.status == 200:
        return "duplicate"
    if outcome.status == 429:
        return "rate_limited"
    return "invalid"


def summarise(outcomes: list[Outcome], seconds: float) -> dict:
    """Counts per category, latency percentiles overall and per category, and requests whose status was not
    the one the API must give (an invalid request accepted, a duplicate answered as new ...)."""
    by_category: dict[str, list[float]] = {}
    for outcome in outcomes:
        by_category.setdefault(category(outcome), []).append(outcome.latency_ms)
    latencies = [o.latency_ms for o in outcomes if o.status]

    def pcts(values: list[float]) -> dict:
        return {f"p{q}": percentile(values, q) for q in (50, 95, 99)} | {"max": max(values) if values else None}

    wrong = [o for o in outcomes if o.expected is not None and o.status not in (o.expected, 0) and o.status < 500]
    return {
        "requests": len(outcomes),
        "seconds": round(seconds, 1),
        "requests_per_second": round(len(outcomes) / seconds, 1) if seconds > 0 else None,
        "counts": {name: len(values) for name, values in sorted(by_category.items())},
        "latency_ms": pcts(latencies),
        "latency_ms_by_category": {name: pcts(values) for name, values in sorted(by_category.items())},
        "connection_errors": sum(1 for o in outcomes if o.status == 0),
        "http_5xx": sum(1 for o in outcomes if o.status >= 500),
        "retries": sum(1 for o in outcomes if o.kind.startswith("retry:")),
        "retries_answered_duplicate": sum(1 for o in outcomes if o.kind.startswith("retry:") and o.status == 200),
        "unexpected_status": Counter(f"{o.kind} -> {o.status} ({o.error[:60]})" for o in wrong).most_common(10),
        "kinds": dict(Counter(o.kind for o in outcomes).most_common()),
        "errors": Counter(o.error[:80] for o in outcomes if o.status == 0 or o.status >= 500).most_common(8),
    }
