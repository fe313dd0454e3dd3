"""Leaderboard benchmark: query counts and in-process timings per page, then p50/p95/p99 under load
(wrk, 16 concurrent connections) against gunicorn on this machine. A private redis-server (the shared
leaderboard store) is started unless --redis-url is given.

Run on a seeded database (never production):
    DEBUG=1 PORTAL_DATA_DIR=/tmp/lbseed .venv/bin/python manage.py migrate
    DEBUG=1 PORTAL_DATA_DIR=/tmp/lbseed .venv/bin/python manage.py seed_leaderboard
    DEBUG=1 PORTAL_DATA_DIR=/tmp/lbseed .venv/bin/python bench/leaderboard_bench.py --out /tmp/bench.json
(or DATABASE_URL=postgres://... for PostgreSQL). Needs `wrk` (Debian: apt-get install -y wrk).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

PAGES = [
    ("summary page (sm_90a, k=8)", "/leaderboard/?arch=sm_90a&k=8"),
    ("task page (gemm, sm_90a, k=8)", "/leaderboard/?arch=sm_90a&task=gemm_n7168_k5120&k=8"),
    (
        "task page (mha d128, sm_100a, k=4, B200, by tokens)",
        "/leaderboard/?arch=sm_100a&task=mha_with_lse_d128&k=4&gpu=B200&sort=tokens",
    ),
    ("kernel page (gemm, sm_90a)", "/leaderboard/kernels/?arch=sm_90a&task=gemm_n7168_k5120"),
    ("API summary", "/api/v1/leaderboard/summary?arch=sm_90a&k=8"),
    ("API models (gemm, k=8)", "/api/v1/leaderboard/models?arch=sm_90a&task=gemm_n7168_k5120&k=8"),
    ("API kernels (gemm, sm_90a)", "/api/v1/leaderboard/kernels?arch=sm_90a&task=gemm_n7168_k5120"),
    ("API chart best-speedup", "/api/v1/leaderboard/charts/best-speedup?arch=sm_90a&k=8"),
]

LUA = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('RESULT {"requests": %d, "duration_us": %d, "socket_errors": %d, "non2xx": %d, ' ..
    '"p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.0f}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max, latency.mean))
end
"""


def in_process(pages) -> list[dict]:
    """Per page: time and query count when nothing is cached ("cold": this process computes), when another
    process has computed the generation into the shared store ("shared": this process only reads and renders),
    and when this process has it in memory ("warm")."""
    import django

    django.setup()
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from portal.leaderboard.cache import clear_process_cache, leaderboard_changed, shared_store

    client = Client(HTTP_HOST="127.0.0.1")
    client.get(pages[-1][1])  # load templates, URL resolvers and plotly once, outside the timings
    out = []
    for label, url in pages:
        leaderboard_changed()
        shared_store().clear()
        row = {"page": label, "url": url}
        for phase in ("cold", "shared", "warm"):
            if phase != "warm":
                clear_process_cache()
                cache.clear()
            with CaptureQueriesContext(connection) as queries:
                t = time.perf_counter()
                response = client.get(url)
                row[f"{phase}_ms"] = round((time.perf_counter() - t) * 1000, 1)
            assert response.status_code == 200, (url, response.status_code)
            row[f"{phase}_queries"] = len(queries.captured_queries)
        row["bytes"] = len(response.content)
        out.append(row)
        print(
            f"  {label}: cold {row['cold_ms']} ms / {row['cold_queries']} queries, "
            f"shared {row['shared_ms']} ms / {row['shared_queries']} queries, "
            f"warm {row['warm_ms']} ms / {row['warm_queries']} queries",
            flush=True,
        )
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis() -> tuple[subprocess.Popen, str]:
    """A throwaway redis-server for the queues and the shared leaderboard store."""
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="lbbench-redis-")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    stop(proc)
    raise SystemExit("redis-server did not start")


def _server_env() -> dict[str, str]:
    return {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "benchmark-only-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "BEHIND_TLS_PROXY": "0",
        "LOG_LEVEL": "WARNING",
    }


def start_gunicorn(workers: int, port: int) -> subprocess.Popen:
    env = _server_env()
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True
    )
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    proc = subprocess.Popen(
        [
            gunicorn,
            "portal.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        start_new_session=True,
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)  # noqa: S310 - local
            return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise SystemExit("gunicorn did not start")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def wrk(url: str, *, connections: int, duration: int, script: str) -> dict:
    result = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "10s", "-s", script, url],
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"RESULT (\{.*\})", result.stdout)
    if not match:
        raise SystemExit(f"unexpected wrk output:\n{result.stdout}\n{result.stderr}")
    data = json.loads(match.group(1))
    seconds = data["duration_us"] / 1e6
    return {
        "requests": data["requests"],
        "rps": round(data["requests"] / seconds, 1),
        "errors": data["socket_errors"] + data["non2xx"],
        **{
            k.replace("_us", "_ms"): round(v / 1000, 1)
            for k, v in data.items()
            if k.endswith("_us") and k != "duration_us"
        },
    }


def under_load(pages, *, workers: int, connections: int, duration: int, churn: float) -> list[dict]:
    """Each page under wrk. With churn > 0 a thread starts a new results generation every `churn` seconds,
    as if verdicts kept landing, so some requests recompute."""
    import django

    django.setup()
    from portal.leaderboard.cache import leaderboard_changed

    port = _free_port()
    proc = start_gunicorn(workers, port)
    script = Path(tempfile.mkdtemp()) / "report.lua"
    script.write_text(LUA)
    out = []
    try:
        for label, path in pages:
            url = f"http://127.0.0.1:{port}{path}"
            wrk(url, connections=connections, duration=5, script=str(script))  # every worker computes once
            stop_churn = threading.Event()

            def bump(stop_event: threading.Event = stop_churn) -> None:
                while not stop_event.wait(churn):
                    leaderboard_changed()

            churner = threading.Thread(target=bump, daemon=True)
            if churn > 0:
                churner.start()
            row = {
                "page": label,
                "url": path,
                **wrk(url, connections=connections, duration=duration, script=str(script)),
            }
            stop_churn.set()
            out.append(row)
            print(
                f"  {label}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, p99 {row['p99_ms']} ms, "
                f"{row['rps']} req/s, errors {row['errors']}",
                flush=True,
            )
    finally:
        stop(proc)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (make run uses 3)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--duration", type=int, default=15, help="seconds of load per page")
    parser.add_argument("--churn", type=float, default=0.0, help="seconds between new result generations (0: none)")
    parser.add_argument("--redis-url", help="use this Redis instead of starting a private redis-server")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install -y wrk)")
    redis_proc = None
    if args.redis_url:
        os.environ["REDIS_URL"] = args.redis_url
    else:
        redis_proc, os.environ["REDIS_URL"] = start_redis()
    try:
        run(args)
    finally:
        if redis_proc is not None:
            stop(redis_proc)


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True)
    return head + ("-dirty" if dirty.stdout.strip() else "")


def run(args) -> None:
    import django

    django.setup()
    from django.db import connection

    from portal.agent.models import ModelRun, Turn
    from portal.submissions.models import Evaluation, Submission

    volume = {
        "database": connection.vendor,
        "model_runs": ModelRun.objects.count(),
        "turns": Turn.objects.count(),
        "kernel_submissions": Submission.objects.filter(kind="kernel").count(),
        "evaluations": Evaluation.objects.count(),
    }
    load_start = os.getloadavg()
    print(f"volume: {volume}", flush=True)
    print("in process (Django test client):", flush=True)
    single = in_process(PAGES)
    print(
        f"under load (gunicorn {args.workers} workers, wrk {args.connections} connections, {args.duration} s each):",
        flush=True,
    )
    load = under_load(
        PAGES,
        workers=args.workers,
        connections=args.connections,
        duration=args.duration,
        churn=args.churn,
    )
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "loadavg_1_5_15": {"start": load_start, "end": os.getloadavg()},  # the box is shared: other work shows here
        "volume": volume,
        "settings": vars(args),
        "in_process": single,
        "under_load": load,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
