"""Warm-up: compute a new results generation's common tables and charts on the CPU worker (`default` queue)
right after results change, so web workers find them in the shared store instead of computing them.

Purely an optimisation: without a worker, or with Redis down, pages compute on first read as before. Bursts of
results coalesce: while one warm-up waits in the queue no other is enqueued, and the one that runs reads the
newest tokens when it starts."""

from __future__ import annotations

import logging
import time

import django_rq
from django.db import transaction

log = logging.getLogger(__name__)
QUEUE = "default"
PENDING_KEY = "warm-up:pending"
PENDING_SECONDS = 60  # a warm-up not started by then is dropped from the queue (RQ ttl), and may be enqueued again


def schedule_warm_up() -> None:
    """Enqueue `warm_up` once the current transaction commits, unless one is already waiting. Never raises."""
    transaction.on_commit(_enqueue)


def _enqueue() -> None:
    from portal.leaderboard.cache import shared_store

    store = shared_store()
    if store is None or not getattr(store, "available", True):
        return  # no shared store to warm: web workers compute for themselves
    try:
        if not store.add(PENDING_KEY, 1, PENDING_SECONDS):
            return
        django_rq.get_queue(QUEUE).enqueue(
            warm_up, job_timeout=600, ttl=PENDING_SECONDS, result_ttl=600, failure_ttl=24 * 3600
        )
    except Exception as exc:  # Redis unreachable: a warm-up is an optimisation, never fail the caller
        log.warning("leaderboard warm-up not enqueued: %s", exc)
        store.delete(PENDING_KEY)


def warm_up() -> dict:
    """Fill the shared store for the current generation: every kernel board, the model summaries at every turn
    limit and each architecture's summary-page charts. Returns what it computed, in seconds."""
    from evaluator.arches import ARCHES
    from portal.leaderboard import charts, ranking, selectors
    from portal.leaderboard.cache import Generation, shared_store

    store = shared_store()
    if store is not None:
        store.delete(PENDING_KEY)  # results landing from now on enqueue a follow-up warm-up
    started = time.perf_counter()
    gen = Generation()
    selectors.active_task_slugs(gen)
    for arch in ARCHES:
        for task in selectors.tasks_for_arch(gen, arch):
            selectors.kernel_board(gen, task=task, arch=arch)
        if selectors.models_available():
            for k in ranking.TURN_LIMITS:
                selectors.model_summary(gen, selectors.BoardQuery(arch, "", k, "", ranking.DEFAULT_SORT))
        page = selectors.BoardQuery(arch, "", ranking.TURN_LIMITS[-1], "", ranking.DEFAULT_SORT)
        for name, (_, _, needs_models) in charts.CHARTS.items():
            if not needs_models or selectors.models_available():
                charts.chart(gen, name, page)
    seconds = round(time.perf_counter() - started, 3)
    log.info("leaderboard generation %s warmed in %.2f s", gen.token, seconds)
    return {"generation": gen.token, "seconds": seconds}
