"""Full-page screenshots of the main pages at 1400 px and 390 px into docs/screenshots/ (JPEG, Chromium's own encoder), from a running
portal loaded with the demo data (`seed_leaderboard --demo`, `import_reference_verdicts`) and a user to log in as.

    .venv/bin/python scripts/take_screenshots.py --base http://127.0.0.1:8000 --user NAME --password PW \
        --evaluation UUID --run ID
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.browser import CHROMIUM_ARGS  # noqa: E402

GEMM = "gemm_n7168_k5120"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--evaluation", required=True, help="an evaluation with SASS (a reference kernel's)")
    parser.add_argument("--run", required=True, help="a model run id")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--png-dir", type=Path, help="also write PNG copies here (for viewers without JPEG)")
    parser.add_argument("--only", nargs="*", help="page names to take (default: all)")
    args = parser.parse_args()
    pages = {
        "home": "/",
        "tasks": "/tasks/",
        "task": f"/tasks/{GEMM}/",
        "model-board": "/leaderboard/?arch=sm_90a&k=8",
        "model-board-task": f"/leaderboard/?arch=sm_90a&task={GEMM}&k=8",
        "kernel-board": f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}",
        "evaluation": f"/evidence/evaluations/{args.evaluation}/",
        "run": f"/runs/{args.run}/",
        "pack": "/packs/hopper/",
        "submit": f"/submit/?task={GEMM}&arch=sm_90a",
    }
    if args.only:
        pages = {k: v for k, v in pages.items() if k in args.only}
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        for width in (1400, 390):
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.set_default_timeout(120_000)
            page.goto(args.base + "/accounts/login/")
            page.fill("input[name=username]", args.user)
            page.fill("input[name=password]", args.password)
            page.click("button[type=submit]")
            for name, path in pages.items():
                page.goto(args.base + path)
                page.wait_for_load_state("networkidle")
                # leaderboard.js draws the charts after the load event, one at a time: shoot once all are drawn.
                page.wait_for_function(
                    "() => document.querySelectorAll('.chart[data-figure]').length"
                    " === document.querySelectorAll('.chart[data-drawn=\"1\"]').length"
                )
                if name == "evaluation":
                    page.click("#sass-view summary")
                    page.evaluate("document.querySelector('pre.sass .sass-target')?.scrollIntoView({block: 'center'})")
                jpg = args.out / f"{name}-{width}.jpg"
                # Long pages are cut at 5000 px: the top is what the screenshot is for. JPEG keeps the folder small.
                # A viewport as tall as the shot: Chromium's full-page capture of a 30,000 px page times out here.
                height = min(page.evaluate("document.documentElement.scrollHeight"), 5000)
                page.set_viewport_size({"width": width, "height": height})
                page.screenshot(path=str(jpg), type="jpeg", quality=60)
                if args.png_dir:
                    args.png_dir.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(args.png_dir / f"{name}-{width}.png"))
                page.set_viewport_size({"width": width, "height": 900})
                print(jpg.name, jpg.stat().st_size)
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
