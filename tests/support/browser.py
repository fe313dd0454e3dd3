"""Headless Chromium through Playwright, using Debian's /usr/bin/chromium (no browser downloads).

One Playwright driver and one Chromium per test process, started by the first browser test and closed when the
session ends (`close_shared_browser`, from tests/conftest.py); each test gets a browser context of its own
(cookies, storage, cache and viewport start empty). On the 2-core CI machine a new context and page take about
0.25 s, a driver and a Chromium started and closed about 1.4 s of CPU; `tests/browser/` went from 72 s to 58-61 s.

Playwright's sync API marks its event loop as running in the calling thread between its calls, and Django's ORM
refuses to run in a thread with a running loop (SynchronousOnlyOperation). The loop is marked only while a page
is open, and unmarked when it closes, so the tests that run after a browser test in the same process see no loop.
"""

from __future__ import annotations

import asyncio
import shutil
from contextlib import contextmanager

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

_shared: dict = {}  # "playwright", "browser", "loop" once started


def _browser():
    """The process's Chromium, (re)started when there is none or it went away; its loop marked running."""
    if _shared.get("browser") is not None and _shared["browser"].is_connected():
        asyncio._set_running_loop(_shared["loop"])
        return _shared["browser"]
    close_shared_browser()
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is not installed: `make test` installs it")
    playwright = sync_playwright().start()
    _shared.update(playwright=playwright, loop=asyncio.get_running_loop())
    _shared["browser"] = playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
    return _shared["browser"]


@contextmanager
def chromium_page():
    """A fresh page in a fresh browser context; collects console errors and page errors in `page.errors`."""
    try:
        context = _browser().new_context()
        page = context.new_page()
        page.errors = []
        page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        try:
            yield page
        finally:
            context.close()
    finally:
        asyncio._set_running_loop(None)


def close_shared_browser() -> None:
    """Close the process's Chromium and Playwright driver, if started (at the end of the session)."""
    if "playwright" not in _shared:
        return
    asyncio._set_running_loop(_shared["loop"])
    try:
        if _shared.get("browser") is not None and _shared["browser"].is_connected():
            _shared["browser"].close()
        _shared["playwright"].stop()
    finally:
        asyncio._set_running_loop(None)
        _shared.clear()
