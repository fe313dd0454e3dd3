"""One worker per GPU: detects the GPU (nvidia-smi, no CUDA in this process), pins it with
CUDA_VISIBLE_DEVICES, registers itself, heartbeats, and serves only its architecture's queue."""

from __future__ import annotations

import logging
import os
import socket
import threading

import django_rq
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connections
from django.db.models import Q
from django.utils import timezone

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import CPU_STAGES
from evaluator.isolation.jail import SandboxUnavailable, check_reachable, open_jail
from portal.submissions.envfile import EnvFileUnsafe, env_file_check
from portal.submissions.gpu import detect_gpus
from portal.submissions.models import GpuWorker
from portal.submissions.rq_worker import RequeueOnStopWorker
from portal.submissions.selectors import live_workers_on_gpu

log = logging.getLogger(__name__)

HEARTBEAT_RETRY_SECONDS = 1.0  # first retry after a failed beat; doubles up to the heartbeat interval


class Command(BaseCommand):
    help = "Serve the evaluation queue of this host's GPU architecture (one worker per GPU)."

    def add_arguments(self, parser):
        parser.add_argument("--gpu", default=None, help="GPU index (default: 0, or CUDA_VISIBLE_DEVICES)")
        parser.add_argument("--arch", choices=sorted(ARCHES), help="required with --cpu-stages-only; else detected")
        parser.add_argument(
            "--cpu-stages-only",
            action="store_true",
            help="no GPU here: run only policy/compile/SASS (verdicts say STATIC_ONLY). For development and CI.",
        )
        parser.add_argument(
            "--allow-unsandboxed",
            action="store_true",
            help="serve even where bubblewrap cannot run (candidates then run unsandboxed; every verdict says so). "
            "Also EVALUATOR_ALLOW_UNSANDBOXED=1. Never for public submissions.",
        )
        parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
        parser.add_argument("--name", default=None, help="worker name (default host:gpu:pid)")
        parser.add_argument(
            "--env-file",
            default=None,
            help="the file holding this host's secrets (the unit's EnvironmentFile=); default PTXBENCH_ENV_FILE. "
            "The worker refuses to start when it is readable or writable by every user.",
        )

    def handle(
        self,
        *args,
        gpu=None,
        arch=None,
        cpu_stages_only=False,
        allow_unsandboxed=False,
        burst=False,
        name=None,
        env_file=None,
        **options,
    ):
        env_file = env_file or os.environ.get("PTXBENCH_ENV_FILE")
        if env_file:
            try:
                env_file_check(env_file)
            except EnvFileUnsafe as exc:
                raise CommandError(f"not serving: {exc}") from None
        host = socket.gethostname()
        sandbox = _sandbox_mode(allow_unsandboxed)
        info = None
        if cpu_stages_only:
            if not arch:
                raise CommandError("--cpu-stages-only needs --arch (which queue to serve)")
            os.environ["PTXBENCH_WORKER_STAGES"] = ",".join(CPU_STAGES)
            mode = "cpu-stages-only"
        else:
            index = gpu or os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            info = next((g for g in detect_gpus() if g.index == index or g.uuid == index), None)
            if info is None:
                raise CommandError(
                    f"no NVIDIA GPU {index!r} found (nvidia-smi); use --cpu-stages-only on machines without one"
                )
            if info.arch is None:
                raise CommandError(
                    f"{info.name} (compute capability {info.compute_capability}) is not a PTXBench target"
                )
            if arch and arch != info.arch.name:
                raise CommandError(f"--arch {arch} does not match the GPU ({info.name} is {info.arch.name})")
            arch = info.arch.name
            # Children (the evaluator and its candidates) see exactly this one GPU.
            os.environ["CUDA_VISIBLE_DEVICES"] = info.uuid
            os.environ.pop("PTXBENCH_WORKER_STAGES", None)
            mode = "gpu"
        if settings.EVALUATOR_COMPILE_CACHE:
            os.environ["EVALUATOR_COMPILE_CACHE"] = settings.EVALUATOR_COMPILE_CACHE  # the evaluator children read it
        queue = ARCHES[arch].queue
        name = name or f"{host}:{info.index if info else 'cpu'}:{os.getpid()}"
        if info is not None:
            _refuse_a_served_gpu(host, info.uuid, name)
        now = timezone.now()
        GpuWorker.objects.update_or_create(
            name=name,
            defaults={
                "host": host,
                "pid": os.getpid(),
                "arch": arch,
                "queues": queue,
                "gpu_index": info.index if info else "",
                "gpu_name": info.name if info else "",
                "gpu_uuid": info.uuid if info else "",
                "driver_version": info.driver_version if info else "",
                "mode": f"{mode}, {sandbox}"[:40],
                "started_at": now,  # a restart under the same name is a new start (see _refuse_a_served_gpu)
                "heartbeat_at": now,
                "stopped_at": None,
            },
        )
        if info is not None:
            _refuse_a_served_gpu(host, info.uuid, name, registered=True)
        self.stdout.write(
            f"worker {name}: {mode}, {sandbox}, queue {queue}" + (f", {info.name} ({info.uuid})" if info else "")
        )

        stop = threading.Event()
        beat = threading.Thread(target=_heartbeat, args=(name, stop), daemon=True)
        beat.start()
        connections.close_all()  # RQ forks a work horse per job; it must not share this process's connection
        try:
            worker = django_rq.get_worker(queue, name=name, worker_class=RequeueOnStopWorker)
            worker.work(burst=burst, with_scheduler=False)
        finally:
            stop.set()
            beat.join(timeout=5)
            GpuWorker.objects.filter(name=name).update(stopped_at=timezone.now())


def _refuse_a_served_gpu(host: str, uuid: str, name: str, *, registered: bool = False) -> None:
    """Two workers timing on one GPU would each time the other's kernels: a GPU another live worker of this host
    serves is refused. Checked before registering, and again after, for two workers that started together and
    both passed the first check: the later check of the two sees both rows, and the worker that registered later
    (then the name that sorts later) gives way, so exactly one serves."""
    others = live_workers_on_gpu(host, uuid).exclude(name=name)
    if registered:
        mine = GpuWorker.objects.get(name=name).started_at
        others = others.filter(Q(started_at__lt=mine) | Q(started_at=mine, name__lt=name))
    other = others.order_by("started_at", "name").first()
    if other is None:
        return
    if registered:
        GpuWorker.objects.filter(name=name).update(stopped_at=timezone.now())
    raise CommandError(
        f"not serving: GPU {uuid} of {host} is already served by worker {other.name} (pid {other.pid}, "
        f"last heartbeat {other.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC); one worker per GPU"
    )


def _sandbox_mode(allow_unsandboxed: bool) -> str:
    """Refuse to serve submissions unless candidates can be sandboxed or an operator said otherwise."""
    if allow_unsandboxed:
        os.environ["EVALUATOR_ALLOW_UNSANDBOXED"] = "1"  # the evaluator children read it
    try:
        jail = open_jail(allow_unsandboxed=allow_unsandboxed or None)
        check_reachable(jail)
    except SandboxUnavailable as exc:
        raise CommandError(f"not serving: {exc}") from None
    return "sandbox: bubblewrap" if jail.mode == "bubblewrap" else "UNSANDBOXED"


def _heartbeat(name: str, stop: threading.Event, interval: float | None = None) -> None:
    """Beat every `interval` seconds until stopped. A failed beat (a database locked by a long write, a
    dropped connection) is logged and retried with backoff; the thread never dies while the worker serves,
    or /workers/ would say "no GPU worker" for a worker that is working."""
    interval = interval or settings.WORKER_HEARTBEAT_SECONDS
    delay, failures = interval, 0
    while not stop.wait(delay):
        try:
            close_old_connections()
            GpuWorker.objects.filter(name=name).update(heartbeat_at=timezone.now())
        except Exception as exc:  # noqa: BLE001 - any failure: log, retry, keep beating
            failures += 1
            delay = min(interval, HEARTBEAT_RETRY_SECONDS * 2 ** (failures - 1))
            log.warning(
                "worker %s: heartbeat failed (%s: %s), attempt %d; retrying in %.1f s",
                name,
                type(exc).__name__,
                exc,
                failures,
                delay,
            )
            try:
                connections["default"].close()  # a fresh connection for the next attempt
            except Exception:  # noqa: BLE001
                log.debug("closing the broken connection failed", exc_info=True)
        else:
            if failures:
                log.warning("worker %s: heartbeat recovered after %d failed attempts", name, failures)
            delay, failures = interval, 0
    connections.close_all()
