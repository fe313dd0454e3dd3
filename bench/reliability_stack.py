"""The system under test for the reliability benchmark, as real processes on loopback: redis-server with AOF,
gunicorn, `manage.py gpu_worker --cpu-stages-only` workers and `manage.py reconcile --loop`.

Every process starts in its own session, so a fault can SIGKILL a whole process group (a worker together
with its RQ work horse) the way a crash or the OOM killer would."""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, grandchildren ...), whatever session or group they moved to."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class StackConfig:
    repo: Path  # source tree the processes run from (manage.py, tasks/)
    root: Path  # temp dir: database, Redis AOF, artifacts, logs
    web_workers: int = 3
    database_url: str = ""  # empty: SQLite in root/data
    reconcile_interval: int = 5
    stale_seconds: int = 20
    heartbeat_seconds: int = 5
    evaluation_timeout: int = 300
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. limits raised for the run


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (Debian's binaries) in its own folder on a free port, run as the `postgres`
    system user because initdb refuses root. Trust authentication on loopback only."""

    BIN = Path("/usr/lib/postgresql/15/bin")

    def __init__(self, root: Path) -> None:
        self.dir = root / "pg"
        self.port = free_port()

    def _as_postgres(self, *command: str) -> None:
        runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*runner, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> str:
        self.dir.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            os.chmod(self.dir.parent, 0o711)  # noqa: S103 - postgres must traverse the 0700 temp dir to its folder
        self._as_postgres(str(self.BIN / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "bench")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c max_connections=200 -c fsync=on"
        self._as_postgres(
            str(self.BIN / "pg_ctl"),
            "-D",
            str(self.dir / "data"),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )
        return f"postgres://bench@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self._as_postgres(str(self.BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError):
            pass


class Stack:
    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.repo = config.repo
        self.logs = config.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_dir = config.root / "redis"
        self.redis_dir.mkdir(exist_ok=True)
        self.redis_port = free_port()
        self.web_port = free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.python = sys.executable
        data = config.root / "data"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PORTAL_"))},
            # Production-like: DEBUG off, so the settings demand what a real deployment sets.
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(48),
            "AGENT_FERNET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "0",
            "BEHIND_TLS_PROXY": "0",
            "SECURE_HSTS_SECONDS": "0",
            "PORTAL_DATA_DIR": str(data),
            "DATABASE_URL": config.database_url or f"sqlite:///{data / 'portal.sqlite3'}",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "RECONCILE_INTERVAL": str(config.reconcile_interval),
            "EVALUATION_STALE_SECONDS": str(config.stale_seconds),
            "WORKER_HEARTBEAT_SECONDS": str(config.heartbeat_seconds),
            "EVALUATION_TIMEOUT": str(config.evaluation_timeout),
            "EVALUATOR_STAGES": "policy,compile,sass",
            "LOG_LEVEL": "WARNING",
            **config.extra_env,
        }

    @property
    def redis_url(self) -> str:
        return self.env["REDIS_URL"]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    # ------------------------------------------------------------------ generic process handling

    def _spawn(self, name: str, command: list[str], log_name: str | None = None) -> subprocess.Popen:
        log = (self.logs / f"{log_name or name}.log").open("ab")
        proc = subprocess.Popen(
            command, cwd=self.repo, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()  # the child holds its own descriptor
        self.procs[name] = proc
        return proc

    def manage(self, *args: str, timeout: float = 300) -> str:
        result = subprocess.run(
            [self.python, "manage.py", *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def kill_group(self, name: str, sig: int = signal.SIGKILL, wait: float = 30) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def kill_tree(self, name: str) -> list[int]:
        """SIGKILL the process and everything below it at once (a host loss, or systemd killing the cgroup):
        the RQ work horse (its own process group) and the evaluator (its own session) included."""
        proc = self.procs.pop(name)
        pids = [proc.pid, *descendants(proc.pid)]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)
        return pids

    def pid(self, name: str) -> int | None:
        proc = self.procs.get(name)
        return proc.pid if proc else None

    # ------------------------------------------------------------------ Redis

    def start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        command = [binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", str(self.redis_dir)]
        # AOF (fsync every second, flushed on SHUTDOWN) so a restart keeps queues and jobs; no RDB snapshots.
        command += ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
        self._spawn("redis", command)
        self._wait_redis()

    def _wait_redis(self, timeout: float = 20) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.exceptions.RedisError:  # connection refused, or still loading the AOF
                time.sleep(0.05)
        raise RuntimeError("redis-server did not come up")

    def stop_redis(self) -> None:
        """SHUTDOWN: Redis flushes the AOF and exits; its data dir stays for the next start."""
        import redis

        try:
            redis.Redis.from_url(self.redis_url).shutdown()
        except redis.exceptions.ConnectionError:
            pass  # the server closes the connection as it exits
        proc = self.procs.pop("redis", None)
        if proc is not None:
            proc.wait(timeout=30)

    # ------------------------------------------------------------------ web tier

    def start_web(self) -> float:
        """Start gunicorn and return the seconds until /healthz answered 200."""
        gunicorn = str(Path(self.python).with_name("gunicorn"))
        command = [gunicorn, "portal.wsgi:application", "--bind", f"127.0.0.1:{self.web_port}"]
        command += ["--workers", str(self.config.web_workers), "--log-level", "warning", "--timeout", "60"]
        # A deep listen backlog: 50 clients connect at once; the default (2048) is fine, keep it explicit.
        command += ["--backlog", "2048"]
        started = time.monotonic()
        self._spawn("web", command)
        deadline = started + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as response:  # noqa: S310 - loopback
                    if response.status == 200:
                        return time.monotonic() - started
            except (OSError, urllib.error.URLError):
                time.sleep(0.1)
        raise RuntimeError("gunicorn did not come up")

    # ------------------------------------------------------------------ workers and reconcile

    def start_worker(self, name: str) -> None:
        self._spawn(
            name,
            [self.python, "manage.py", "gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", name],
            log_name=f"worker-{name}",
        )

    def start_reconcile(self) -> None:
        self._spawn("reconcile", [self.python, "manage.py", "reconcile", "--loop"])

    def stop_all(self) -> None:
        """Workers get a warm shutdown (SIGTERM) first; everything is SIGKILLed if it lingers."""
        for name in [n for n in self.procs if n not in ("redis",)]:
            self.kill_group(name, signal.SIGTERM, wait=15)
        if "redis" in self.procs:
            try:
                self.stop_redis()
            except Exception:  # noqa: BLE001 - teardown must go on
                self.kill_group("redis")
