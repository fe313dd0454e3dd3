"""Load and fault benchmark: 50 API clients submit for 60 s against gunicorn + Redis + 2 CPU-stages
workers + the reconcile loop, then, while clients keep submitting, a worker is SIGKILLed mid-job, Redis is
restarted and the web tier is killed and restarted. The run then drains and audits the database: every submission
a client was told about exists, has exactly one evaluation, and that evaluation is final; no duplicate artifacts.

Self-contained and bounded: it builds everything in a temp dir (SQLite, its own redis-server with AOF on a free
port) and stops by itself (--max-seconds). Loopback only. Example:
    .venv/bin/python bench/reliability_bench.py --out /tmp/reliability.json
Quick smoke run:  --clients 8 --load-seconds 10 --fault-seconds 30
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_checks as checks  # noqa: E402 - the bench folder is not a package
from reliability_load import EXPECTED_STATUS, Client, LoadState, SourceMaker, summarise  # noqa: E402
from reliability_stack import PrivatePostgres, Stack, StackConfig, alive, descendants  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent, help="source tree to run")
    parser.add_argument("--commit", default="", help="label for the source tree (default: git HEAD of --repo)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--load-seconds", type=float, default=60)
    parser.add_argument("--fault-seconds", type=float, default=60, help="clients keep submitting this long into faults")
    parser.add_argument("--drain-timeout", type=float, default=1200)
    parser.add_argument("--max-seconds", type=int, default=2100, help="hard stop for the whole run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--web-workers", type=int, default=3)
    parser.add_argument("--mix", default="compile=0.3,policy=0.45,broken=0.25", help="fresh sources by kind")
    parser.add_argument("--database-url", default="", help="default: SQLite in the temp dir")
    parser.add_argument("--postgres", action="store_true", help="a private PostgreSQL 15 cluster instead of SQLite")
    parser.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for every process")
    parser.add_argument("--redis-down-seconds", type=float, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    parser.add_argument("--logs-to", type=Path, default=None, help="copy the processes' logs here")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    return parser.parse_args()


class Monitor(threading.Thread):
    """Every 5 s: evaluation states, Redis queue length and the machine's load average."""

    def __init__(self, stack: Stack, t0: float) -> None:
        super().__init__(daemon=True)
        self.stack = stack
        self.t0 = t0
        self.stop_event = threading.Event()
        self.samples: list[dict] = []

    def run(self) -> None:
        import redis
        from django.db import connection

        client = redis.Redis.from_url(self.stack.redis_url, socket_timeout=2)
        while not self.stop_event.wait(5):
            row = {"t": round(time.monotonic() - self.t0, 1), "load1": round(os.getloadavg()[0], 2)}
            try:
                row.update(checks.sample())
            except Exception as exc:  # noqa: BLE001 - a sample lost to a lock is not a reason to stop
                row["db_error"] = str(exc)[:100]
            try:
                row["redis_queue"] = client.llen("rq:queue:gpu-sm90")
            except redis.exceptions.RedisError:
                row["redis_queue"] = None
            self.samples.append(row)
        connection.close()


def _wait_until(t: float) -> None:
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _wait_mid_job(victim: str, timeout: float) -> dict | None:
    """An evaluation the worker is running, preferably while nvcc compiles (the longest stage here)."""
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        running = checks.running_on(victim)
        compiling = [r for r in running if r["stage"] in ("compile", "sass")]
        if compiling or (running and time.monotonic() > started + timeout / 2):
            return (compiling or running)[0]
        time.sleep(0.2)
    return None


def fault_kill_worker_process(stack: Stack, victim: str, replacement: str, t0: float) -> dict:
    """SIGKILL the worker's main process only (what the OOM killer or `kill -9 <pid>` does). RQ runs each job in a
    forked work horse in its own process group, so the job itself goes on; a supervisor starts a replacement."""
    target = _wait_mid_job(victim, 60)
    at = time.monotonic() - t0
    below = descendants(stack.pid(victim))
    stack.kill_group(victim)  # the worker's own group: the main process (the horse left it with setpgrp)
    survivors = [pid for pid in below if alive(pid)]
    stack.start_worker(replacement)
    return {
        "fault": "SIGKILL worker main process mid-job",
        "t": round(at, 1),
        "worker": victim,
        "replacement": replacement,
        "evaluation": str(target["id"]) if target else None,
        "stage_when_killed": target["stage"] if target else None,
        "processes_below_it_left_running": len(survivors),
    }


def fault_kill_worker_tree(stack: Stack, victim: str, replacement: str, t0: float) -> dict:
    """SIGKILL the worker, its work horse and the evaluator with its nvcc at once (host loss, cgroup kill): the
    evaluation is left 'running' with no heartbeat, for the reconcile loop to requeue."""
    target = _wait_mid_job(victim, 60)
    at = time.monotonic() - t0
    killed = stack.kill_tree(victim)
    stack.start_worker(replacement)
    return {
        "fault": "SIGKILL worker with work horse and evaluator mid-job",
        "t": round(at, 1),
        "worker": victim,
        "replacement": replacement,
        "evaluation": str(target["id"]) if target else None,
        "stage_when_killed": target["stage"] if target else None,
        "processes_killed": len(killed),
    }


def fault_restart_redis(stack: Stack, t0: float, down_seconds: float) -> dict:
    import redis

    client = redis.Redis.from_url(stack.redis_url)
    before = {"queue": client.llen("rq:queue:gpu-sm90"), "keys": client.dbsize()}
    at = time.monotonic() - t0
    stack.stop_redis()
    time.sleep(down_seconds)
    stack.start_redis()
    back = time.monotonic() - t0
    client = redis.Redis.from_url(stack.redis_url)
    after = {"queue": client.llen("rq:queue:gpu-sm90"), "keys": client.dbsize()}
    return {
        "fault": "Redis SHUTDOWN + start (AOF)",
        "t": round(at, 1),
        "t_back": round(back, 1),
        "before": before,
        "after": after,
    }


def fault_restart_web(stack: Stack, t0: float) -> dict:
    at = time.monotonic() - t0
    stack.kill_group("web")  # SIGKILL: master and workers die mid-request
    time.sleep(1)
    ready = stack.start_web()
    return {
        "fault": "gunicorn SIGKILL + start",
        "t": round(at, 1),
        "t_back": round(time.monotonic() - t0, 1),
        "seconds_to_healthy": round(ready, 1),
    }


def _window(outcomes, start: float, end: float) -> dict:
    inside = [o for o in outcomes if start <= o.t <= end]
    counts: dict[str, int] = {}
    for o in inside:
        key = "connection error" if o.status == 0 else str(o.status)
        counts[key] = counts.get(key, 0) + 1
    return {"from": round(start, 1), "to": round(end, 1), "statuses": dict(sorted(counts.items()))}


def _scan_logs(logs: Path) -> dict:
    patterns = {
        "tracebacks": r"Traceback \(most recent call last\)",
        "redis_connection_errors": r"could not connect to Redis|ConnectionError|Connection refused",
        "database_locked": r"database is locked",
        "worker_timeouts": r"WORKER TIMEOUT",
    }
    out = {}
    for path in sorted(logs.glob("*.log")):
        text = path.read_text(errors="replace")
        counts = {name: len(re.findall(p, text)) for name, p in patterns.items()}
        out[path.stem] = {k: v for k, v in counts.items() if v} | {"lines": text.count("\n")}
    return out


def _commit(repo: Path, label: str) -> str:
    if label:
        return label
    try:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(args: argparse.Namespace, root: Path) -> dict:
    mix = {k: float(v) for k, v in (item.split("=") for item in args.mix.split(","))}
    extra_env = dict(item.split("=", 1) for item in args.env)
    postgres = PrivatePostgres(root) if args.postgres else None
    if postgres is not None:
        args.database_url = postgres.start()
    config = StackConfig(
        repo=args.repo.resolve(),
        root=root,
        web_workers=args.web_workers,
        database_url=args.database_url,
        extra_env=extra_env,
    )
    stack = Stack(config)
    result: dict = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": _commit(config.repo, args.commit),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "config": {
            "clients": args.clients,
            "load_seconds": args.load_seconds,
            "fault_seconds": args.fault_seconds,
            "drain_timeout": args.drain_timeout,
            "gpu_workers": args.workers,
            "web_workers": args.web_workers,
            "mix": mix,
            "database": "postgresql" if args.database_url.startswith("postgres") else "sqlite",
            "env": {
                k: stack.env[k] for k in ("RECONCILE_INTERVAL", "EVALUATION_STALE_SECONDS", "WORKER_HEARTBEAT_SECONDS")
            }
            | extra_env,
        },
    }
    try:
        stack.start_redis()
        stack.manage("migrate", "--noinput", "-v", "0")
        stack.manage("sync_tasks")
        os.environ.update(stack.env)
        checks.setup_django(str(config.repo))
        from django.conf import settings
        from django.db import connections

        result["config"]["limits"] = {
            "EVALUATIONS_PER_HOUR": settings.EVALUATIONS_PER_HOUR,
            "MAX_ACTIVE_EVALUATIONS": settings.MAX_ACTIVE_EVALUATIONS,
            "EVALUATION_MAX_ATTEMPTS": settings.EVALUATION_MAX_ATTEMPTS,
        }
        tokens = checks.users_create(args.clients)
        connections.close_all()
        stack.start_web()
        for index in range(args.workers):
            stack.start_worker(f"w{index + 1}")
        stack.start_reconcile()
        print(f"stack up in {root}: web {stack.base_url}, redis {stack.redis_url}", flush=True)

        state = LoadState()
        maker = SourceMaker(config.repo)
        stop_clients = threading.Event()
        t0 = time.monotonic()
        monitor = Monitor(stack, t0)
        monitor.start()
        clients = [
            Client(
                i,
                tokens[i],
                port=stack.web_port,
                state=state,
                maker=maker,
                t0=t0,
                stop=stop_clients,
                mix=mix,
                seed=args.seed + i,
            )
            for i in range(args.clients)
        ]
        for client in clients:
            client.start()
        load_end = t0 + args.load_seconds
        clients_end = load_end + args.fault_seconds
        _wait_until(load_end)
        print(f"load phase over: {len(state.outcomes)} requests, {len(state.accepted)} accepted", flush=True)

        faults = []
        # Faults spread over the time clients keep submitting: two worker kills, Redis restart, web restart.
        faults.append(fault_kill_worker_process(stack, "w1", f"w{args.workers + 1}", t0))
        print(f"  {faults[-1]}", flush=True)
        _wait_until(load_end + args.fault_seconds / 6)
        faults.append(fault_kill_worker_tree(stack, "w2", f"w{args.workers + 2}", t0))
        print(f"  {faults[-1]}", flush=True)
        _wait_until(load_end + args.fault_seconds * 0.4)
        faults.append(fault_restart_redis(stack, t0, args.redis_down_seconds))
        print(f"  {faults[-1]}", flush=True)
        _wait_until(load_end + args.fault_seconds * 0.7)
        faults.append(fault_restart_web(stack, t0))
        print(f"  {faults[-1]}", flush=True)
        _wait_until(clients_end)
        stop_clients.set()
        for client in clients:
            client.join(timeout=70)
        submit_end = time.monotonic() - t0
        print(f"clients stopped at {submit_end:.0f} s: {len(state.accepted)} accepted", flush=True)

        # Drain: every evaluation of the bench users final, or the timeout.
        drain_start = time.monotonic()
        while time.monotonic() - drain_start < args.drain_timeout:
            active = checks.active_count()
            if active == 0:
                break
            if int(time.monotonic() - drain_start) % 60 < 5:
                print(f"  draining: {active} active after {time.monotonic() - drain_start:.0f} s", flush=True)
            time.sleep(5)
        drain_seconds = time.monotonic() - drain_start
        monitor.stop_event.set()
        monitor.join(timeout=10)

        outcomes = state.outcomes
        load = [o for o in outcomes if o.t < args.load_seconds]
        faulted = [o for o in outcomes if o.t >= args.load_seconds]
        duplicate_ids = {o.submission_id for o in outcomes if o.status == 200 and o.submission_id}
        audit = checks.audit(state.accepted, duplicate_ids, EXPECTED_STATUS, str(settings.ARTIFACTS_DIR))
        for fault in faults:
            end = fault.get("t_back", fault["t"])
            fault["client_statuses_during"] = _window(outcomes, fault["t"] - 1, end + 5)["statuses"]
        for fault in faults:
            if fault.get("evaluation"):
                fault["evaluation_afterwards"] = checks.evaluation_row(fault["evaluation"])
        result.update(
            {
                "load": summarise(load, args.load_seconds),
                "faults_phase": summarise(faulted, submit_end - args.load_seconds),
                "all_requests": summarise(outcomes, submit_end),
                "faults": faults,
                "drain": {
                    "seconds": round(drain_seconds, 1),
                    "timed_out": checks.active_count() > 0,
                    "last_submission_to_all_final_s": round(time.monotonic() - t0 - submit_end, 1),
                },
                "audit": audit,
                "rq_afterwards": checks.redis_leftovers(stack.redis_url),
                "timeline": monitor.samples,
            }
        )
        result["machine"]["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result["verdict"] = _verdict(result)
        connections.close_all()
    finally:
        stack.stop_all()
        if postgres is not None:
            postgres.stop()
        result["logs"] = _scan_logs(stack.logs)
        if args.logs_to:
            args.logs_to.mkdir(parents=True, exist_ok=True)
            for path in stack.logs.glob("*.log"):
                shutil.copy(path, args.logs_to / path.name)
    return result


def _verdict(result: dict) -> dict:
    """The pass/fail lines the issue asks for."""
    audit = result["audit"]
    checks_ = {
        "no accepted submission lost": not audit["lost"],
        "every submission has exactly one evaluation": audit["submissions_with_several_evaluations"] == 0
        and audit["submissions_without_evaluation"] == 0,
        "every evaluation final (done or failed)": audit["not_final"] == 0,
        "no duplicate artifact rows": audit["duplicate_artifact_rows"] == 0,
        "artifact files present with their sha256": audit["artifact_files_missing"] == 0
        and audit["artifact_sha256_mismatch"] == 0,
        "verdicts as expected for each kind of source": audit["verdict_not_as_expected_count"] == 0,
        "duplicate answers point at stored submissions": not audit["duplicate_answers_pointing_nowhere"],
        "invalid requests answered with their status": not result["all_requests"]["unexpected_status"],
    }
    return {"passed": all(checks_.values()), "checks": checks_}


def print_table(result: dict) -> None:
    def line(label: str, summary: dict) -> str:
        c = summary["counts"]
        lat = summary["latency_ms"]
        return (
            f"{label:<8} {summary['requests']:>6} req {summary['requests_per_second'] or 0:>6.1f}/s | "
            f"201 {c.get('accepted', 0):>4}  200dup {c.get('duplicate', 0):>4}  429 {c.get('rate_limited', 0):>5}  "
            f"4xx {c.get('invalid', 0):>4}  fail {c.get('failed', 0):>3}  read {c.get('read', 0):>4} | "
            f"p50 {lat['p50']} p95 {lat['p95']} p99 {lat['p99']} ms"
        )

    print()
    print(line("load", result["load"]))
    print(line("faults", result["faults_phase"]))
    for fault in result["faults"]:
        extra = {k: v for k, v in fault.items() if k not in ("fault", "evaluation_afterwards")}
        print(f"  {fault['fault']}: {extra}")
    audit = result["audit"]
    print(
        f"audit: accepted {audit['client_accepted']}, in db {audit['db_submissions']} "
        f"(stored without a 201: {audit['stored_without_201']}), lost {len(audit['lost'])}, "
        f"several evaluations {audit['submissions_with_several_evaluations']}, not final {audit['not_final']}, "
        f"states {audit['states']}, statuses {audit['statuses']}, attempts {audit['attempts']}, "
        f"requeued {audit['requeued_or_retried']}, duplicate artifacts {audit['duplicate_artifact_rows']}"
    )
    print(f"drain: {result['drain']}")
    for name, ok in result["verdict"]["checks"].items():
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")


def main() -> int:
    args = parse_args()
    root = Path(tempfile.mkdtemp(prefix="reliability-"))

    def on_alarm(signum, frame):  # noqa: ARG001
        raise SystemExit(f"--max-seconds {args.max_seconds} reached: stopping")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_alarm)
    signal.alarm(args.max_seconds)
    try:
        result = run(args, root)
    finally:
        signal.alarm(0)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print_table(result)
    print(f"result: {args.out}")
    return 0 if result["verdict"]["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
