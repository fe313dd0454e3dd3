"""The repository's scripts that are files, not package modules (bench/, scripts/), loaded as modules in a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def load_script(path: Path, name: str, monkeypatch: Any = None) -> ModuleType:
    """`path` run as module `name`. With `monkeypatch`, the module is in sys.modules for the test only, as a
    script defining dataclasses needs (they look their module up there while it runs)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:
        monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
