"""Chart pages to their load event in Chromium, cold and warm, on the demo data, served as `make run` serves them
(collected static files, gunicorn, the portal's own Redis).

Starts a throw-away portal in a fresh data folder: migrate, `seed_leaderboard --demo`, `import_reference_verdicts`,
collectstatic, then gunicorn on a free port with STATIC_FROM_FINDERS=0 (as scripts/run_portal.sh). Each page is
requested once first, so the server's boards and charts are computed and cached: the times are what a visitor's
browser spends (HTML, plotly.js, drawing every chart), not the first computation after new results.
- cold: a fresh browser context (empty cache), one load;
- warm: the same context, the page loaded again (plotly.js and the other static files from the browser's cache).
Two times per load, from the navigation's start: its `loadEventEnd` (the page and its scripts, the table usable),
and the `charts-drawn` mark static/js/leaderboard.js sets when the last chart is drawn (it draws them after the
load event, one per task). Median of --repeat runs per page and mode.

    .venv/bin/python bench/chart_pages.py --repeat 7 --out docs/runs/performance/chart-pages-<date>-<n>.json

Uses Debian's /usr/bin/chromium with the test suite's flags (tests/support/browser.py); never downloads a browser.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.browser import CHROMIUM_ARGS  # noqa: E402 - the one list of flags

PY = str(REPO / ".venv" / "bin" / "python")
GEMM = "gemm_n7168_k5120"
PAGES = [  # (label, path): every page that draws charts
    ("model board, all tasks", "/leaderboard/"),
    ("model board, one task", f"/leaderboard/?task={GEMM}"),
    ("kernel board", f"/leaderboard/kernels/?task={GEMM}"),
    ("compare two models", "/compare/"),
]
TARGETS_S = {"cold": 1.5, "warm": 0.5}
_LOAD = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const plotly = performance.getEntriesByType('resource').filter(r => r.name.includes('plotly'))[0];
  // Pages from before the mark existed: the moment the poll below saw every chart drawn.
  const drawn = performance.getEntriesByName('charts-drawn')[0] || {startTime: window.chartsSeenDrawn};
  return {load_ms: nav.loadEventEnd, dom_ms: nav.domContentLoadedEventEnd, html_bytes: nav.transferSize,
          drawn_ms: drawn ? drawn.startTime : null,
          plotly: plotly ? {url: plotly.name, transfer_bytes: plotly.transferSize, body_bytes: plotly.decodedBodySize}
                         : null,
          charts: document.querySelectorAll('.chart[data-figure]').length};
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manage(env: dict, *args: str) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)


def _wait(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()  # noqa: S310 - our own http://127.0.0.1 URL
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _load(page, url: str) -> dict:
    page.goto(url, wait_until="load")
    page.wait_for_function(
        """() => {
          const charts = document.querySelectorAll('.chart[data-figure]');
          const done = performance.getEntriesByName('charts-drawn').length > 0
            || (charts.length > 0 && document.querySelectorAll('.chart[data-drawn="1"]').length === charts.length);
          if (done && window.chartsSeenDrawn === undefined) window.chartsSeenDrawn = performance.now();
          return done;
        }""",
        polling="raf",
    )
    return page.evaluate(_LOAD)


def measure(base: str, repeat: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS
        )
        try:
            for label, path in PAGES:
                samples: dict[str, list[dict]] = {"cold": [], "warm": []}
                for _ in range(repeat):
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    samples["cold"].append(_load(page, base + path))
                    samples["warm"].append(_load(page, base + path))
                    context.close()
                entry: dict = {"page": label, "path": path, "charts": samples["cold"][0]["charts"]}
                for mode, runs in samples.items():
                    times = [r["load_ms"] / 1000 for r in runs]
                    drawn = [r["drawn_ms"] / 1000 for r in runs]
                    entry[mode] = {
                        "median_s": round(statistics.median(times), 3),
                        "min_s": round(min(times), 3),
                        "max_s": round(max(times), 3),
                        "samples_s": [round(t, 3) for t in times],
                        "charts_drawn_median_s": round(statistics.median(drawn), 3),
                        "charts_drawn_samples_s": [round(t, 3) for t in drawn],
                        "plotly": runs[0]["plotly"],
                        "html_bytes": runs[0]["html_bytes"],
                    }
                results.append(entry)
                print(
                    f"{label:24} load: cold {entry['cold']['median_s']:.3f} s, warm {entry['warm']['median_s']:.3f} s;"
                    f" every chart drawn: cold {entry['cold']['charts_drawn_median_s']:.3f} s,"
                    f" warm {entry['warm']['charts_drawn_median_s']:.3f} s"
                )
        finally:
            browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (one per core here)")
    parser.add_argument("--out", type=Path, help="the results JSON (default: only printed)")
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="chart-pages-"))
    env = {**os.environ, "PORTAL_DATA_DIR": str(data), "DEBUG": "1", "STATIC_FROM_FINDERS": "0"}
    env.pop("REDIS_URL", None)  # the throw-away portal's own Redis, never another portal's
    redis = subprocess.run(["bash", "scripts/ensure_redis.sh", "start"], cwd=REPO, env=env, check=True,
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    env["REDIS_URL"] = redis
    server = None
    try:
        t0 = time.monotonic()
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "sync_tasks")
        _manage(env, "import_reference_verdicts")
        _manage(env, "seed_leaderboard", "--demo")
        _manage(env, "collectstatic", "--noinput", "-v", "0")
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "gunicorn"), "portal.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", str(args.workers), "--log-level", "warning"],
            cwd=REPO, env=env,
        )  # fmt: skip
        for _, path in PAGES:  # every worker computes and caches the boards and charts (Redis shares them)
            for _ in range(args.workers * 2):
                _wait(base + path)
        print(f"portal ready in {time.monotonic() - t0:.0f} s on {base}; load average {os.getloadavg()}")
        load_before = os.getloadavg()
        results = measure(base, args.repeat)
        load_after = os.getloadavg()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        pid = data / "redis" / "redis.pid"
        if pid.is_file():
            subprocess.run(["kill", pid.read_text().strip()], check=False)
    chromium = subprocess.run([shutil.which("chromium") or "chromium", "--version"], capture_output=True, text=True)
    report = {
        "benchmark": "bench/chart_pages.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "chromium": chromium.stdout.strip(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
        },
        "method": "demo data; server caches warmed first; load event of the navigation; viewport 1400x900; "
        f"cold = fresh browser context, warm = same context second load; median of {args.repeat}; "
        f"gunicorn {args.workers} workers, collected static files (STATIC_FROM_FINDERS=0), DEBUG=1 as make run",
        "targets_s": TARGETS_S,
        "pages": results,
        "meets_targets": all(r[m]["median_s"] <= TARGETS_S[m] for r in results for m in TARGETS_S),
    }
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        print(f"wrote {args.out}")
    print(f"load average {load_before} -> {load_after}; meets targets: {report['meets_targets']}")
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
