"""Full-page screenshots of the main pages at 1400 px and 390 px into docs/screenshots/ (JPEG, Chromium's own encoder), from a running
portal loaded with the demo data (`seed_leaderboard --demo`, `import_reference_verdicts`) and a user to log in as
(docs/screenshots/README.md says how to bring one up).

    .venv/bin/python scripts/take_screenshots.py --base http://127.0.0.1:8000 \
        --password-file "$PORTAL_DATA_DIR/admin_password.txt" --evaluation UUID --run ID

The pages are taken logged in; the script stops with an error when the login does not take effect.
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


def log_in(page, base: str, user: str, password: str) -> None:
    """Log in through the form, or exit: a failed login would otherwise give screenshots of the logged-out site."""
    page.goto(base + "/accounts/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    # Wait for the form's answer: a goto() right after the click may cancel the response that sets the session
    # cookie. Then check it: a login that did not take effect gave shots with "Log in / Sign up" in the header.
    with page.expect_navigation():
        page.click("form[method=post] button[type=submit]")
    if not page.locator("header.site button", has_text=f"Log out {user}").count():
        error = page.locator(".errorlist, .error").all_inner_texts()
        sys.exit(f"logging in as {user!r} did not take effect at {page.url}: {' '.join(error) or 'no session'}")


def task_with_held_rows(request, base: str, arch: str = "sm_90a") -> str | None:
    """The first task whose kernel board holds a row for review (the demo data holds a few), from the public API."""
    tasks = request.get(f"{base}/api/v1/leaderboard/summary?arch={arch}").json().get("tasks", [])
    for task in tasks:
        if request.get(f"{base}/api/v1/leaderboard/kernels?arch={arch}&task={task}").json().get("held"):
            return task
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--user", help="the account to log in as (default: the one in --password-file)")
    parser.add_argument("--password")
    parser.add_argument(
        "--password-file", type=Path, help="a file holding 'USER PASSWORD', as ensure_admin writes admin_password.txt"
    )
    parser.add_argument("--evaluation", required=True, help="an evaluation with SASS (a reference kernel's)")
    parser.add_argument("--run", required=True, help="a model run id")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--png-dir", type=Path, help="also write PNG copies here (for viewers without JPEG)")
    parser.add_argument("--only", nargs="*", help="page names to take (default: all)")
    args = parser.parse_args()
    if args.password_file:
        # ensure_admin writes "<username> <password>": taking the whole line as the password fails the login.
        file_user, file_password = args.password_file.read_text().split()
        args.user = args.user or file_user
        args.password = args.password or file_password
    if not args.user or not args.password:
        parser.error("give --user and --password, or --password-file")
    pages = {
        "home": "/",
        "tasks": "/tasks/",
        "task": f"/tasks/{GEMM}/",
        "model-board": "/leaderboard/?arch=sm_90a&k=8",
        "model-board-task": f"/leaderboard/?arch=sm_90a&task={GEMM}&k=8",
        "kernel-board": f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}",
        "kernel-board-held": "",  # a task with held rows, found once logged in
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
            log_in(page, args.base, args.user, args.password)
            if "kernel-board-held" in pages and not pages["kernel-board-held"]:
                held_task = task_with_held_rows(page.request, args.base)
                if not held_task:
                    sys.exit("no kernel board holds a row for review: load the demo data (README)")
                # The held rows greyed with their reasons, and the toggle that hides them, above the board.
                pages["kernel-board-held"] = f"/leaderboard/kernels/?arch=sm_90a&task={held_task}"
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
                # From the page's top (the verdict and its badges): scrolling the SASS line into view above moved
                # the window too, not only the listing's own scroll box.
                page.evaluate("window.scrollTo(0, 0)")
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
