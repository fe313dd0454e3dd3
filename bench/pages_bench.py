"""Uncached page times at demo size: each page rendered N times in this process, every cache emptied before each
request (a new results generation, the shared Redis store, this process's memory and rendered fragments), so
every request computes its boards and charts from the database. Prints p50/p95 per page and writes JSON.

    PORTAL_DATA_DIR=/tmp/demo .venv/bin/python manage.py migrate
    PORTAL_DATA_DIR=/tmp/demo .venv/bin/python manage.py seed_leaderboard --demo
    PORTAL_DATA_DIR=/tmp/demo .venv/bin/python manage.py import_reference_verdicts
    PORTAL_DATA_DIR=/tmp/demo .venv/bin/python bench/pages_bench.py --repeat 20 --out /tmp/pages.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

PAGES = [
    ("model board, all tasks (sm_90a, k=8)", "/leaderboard/?arch=sm_90a&k=8"),
    ("model board, one task (gemm, sm_90a, k=8)", "/leaderboard/?arch=sm_90a&task=gemm_n7168_k5120&k=8"),
    ("model board, Blackwell (k=4)", "/leaderboard/?arch=sm_100a&k=4"),
    ("kernel board (gemm, sm_90a)", "/leaderboard/kernels/?arch=sm_90a&task=gemm_n7168_k5120"),
    ("kernel board, show all (gemm, sm_90a)", "/leaderboard/kernels/?arch=sm_90a&task=gemm_n7168_k5120&show=all"),
    ("task page (gemm)", "/tasks/gemm_n7168_k5120/"),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from portal.leaderboard.cache import clear_process_cache, leaderboard_changed, shared_store

    client = Client(HTTP_HOST="127.0.0.1")
    client.get(PAGES[0][1])  # import plotly, load templates once, outside the timings
    results = []
    for label, url in PAGES:
        times, queries, status = [], 0, 0
        for _ in range(args.repeat):
            leaderboard_changed()
            with contextlib.suppress(Exception):  # no Redis: each process computes for itself anyway
                shared_store().clear()
            clear_process_cache()
            cache.clear()
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                times.append(1000 * (time.perf_counter() - started))
            queries, status = len(captured), response.status_code
        row = {
            "page": label,
            "url": url,
            "status": status,
            "queries": queries,
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(percentile(times, 0.95), 1),
            "max_ms": round(max(times), 1),
            "samples_ms": [round(t, 1) for t in times],
        }
        results.append(row)
        print(f"{label:48s} {status}  p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  {queries} queries")
    report = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "database": connection.vendor,
        "repeat": args.repeat,
        "pages": results,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
