"""Headless Chromium through Playwright, using Debian's /usr/bin/chromium (no browser downloads)."""

from __future__ import annotations

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


@contextmanager
def chromium_page():
    """A fresh page; collects console errors and page errors in `page.errors`."""
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is not installed: `make test` installs it")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.errors = []
        page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        try:
            yield page
        finally:
            browser.close()
