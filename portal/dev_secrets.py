"""Secrets for a development machine (DEBUG on) that was given none: random, made once, kept in the data folder
with mode 600, so no secret of this portal is ever a known default. Production (DEBUG off) must set them."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def stored_secret(path: Path, make: Callable[[], str] = lambda: secrets.token_urlsafe(50)) -> str:
    """The secret in `path`, made first if there is none (by one process: the file appears whole, at once)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(make() + "\n")
    try:
        os.link(temporary, path)  # fails if another process made it meanwhile: theirs is kept
    except FileExistsError:
        pass
    finally:
        temporary.unlink()
    return path.read_text().strip()
