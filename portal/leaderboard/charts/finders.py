"""A staticfiles finder that serves plotly.js from the installed plotly package as vendor/plotly.min.js:
no CDN, no 4.8 MB copy in git, and always the plotly.js that matches the Python package building the figures.
collectstatic copies it like any other static file; runserver and the test live server find it directly."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "vendor/plotly.min.js"


def plotly_js_path() -> Path:
    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(plotly_js_path().parent))

    def check(self, **kwargs):
        from django.core.checks import Error

        if not plotly_js_path().is_file():
            return [Error(f"plotly.js is missing from the plotly package ({plotly_js_path()})", id="leaderboard.E001")]
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        # `all` was renamed `find_all` in Django 5.2; accept both.
        find_all = find_all or kwargs.get("all", False)
        if path != PLOTLY_JS:
            return [] if find_all else None
        found = str(plotly_js_path())
        return [found] if find_all else found

    def list(self, ignore_patterns):
        # (relative path inside the storage, storage): collectstatic writes it to STATIC_ROOT/vendor/plotly.min.js.
        yield "plotly.min.js", _PrefixedStorage(self.storage.location)


class _PrefixedStorage(FileSystemStorage):
    """Makes collectstatic place the file under vendor/ (it honours a storage's `prefix`)."""

    def __init__(self, location: str) -> None:
        super().__init__(location=location)
        self.prefix = "vendor"
