"""Where the portal's address and API tokens are kept: one JSON file in the user's config folder, mode 600.

A token is stored per portal address, so a token saved for one portal is never sent to another one that a
`--url` or `PTXBENCH_URL` points at. `PTXBENCH_TOKEN` and `PTXBENCH_URL` override the file."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


def config_path() -> Path:
    """$XDG_CONFIG_HOME/ptxbench/config.json (~/.config when unset); %APPDATA% on Windows."""
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        base = Path(os.environ["APPDATA"])
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "ptxbench" / "config.json"


def normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the portal address must start with http:// or https:// (got {url[:80]!r})")
    return url


def _read() -> dict:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def _write(data: dict) -> Path:
    """Written to a new file created with mode 600, then renamed over the old one: the token is never readable
    by others, not even for a moment."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.chmod(tmp, 0o600)  # whatever the umask was
    os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class Settings:
    url: str
    token: str  # "" when there is none
    token_source: str  # "PTXBENCH_TOKEN", the config file's path, or ""


def resolve(url_flag: str | None = None) -> Settings:
    """The portal address (--url, PTXBENCH_URL, the file's default, then http://127.0.0.1:8000) and its token
    (PTXBENCH_TOKEN, else the one stored for that address)."""
    data = _read()
    url = normalise_url(url_flag or os.environ.get("PTXBENCH_URL") or data.get("default_url") or DEFAULT_URL)
    env_token = os.environ.get("PTXBENCH_TOKEN", "").strip()
    if env_token:
        return Settings(url, env_token, "PTXBENCH_TOKEN")
    stored = (data.get("tokens") or {}).get(url, "")
    return Settings(url, stored if isinstance(stored, str) else "", str(config_path()) if stored else "")


def save_token(url: str, token: str) -> Path:
    data = _read()
    tokens = data.get("tokens") if isinstance(data.get("tokens"), dict) else {}
    tokens[url] = token
    data["tokens"] = tokens
    data["default_url"] = url
    return _write(data)


def forget_token(url: str) -> bool:
    data = _read()
    tokens = data.get("tokens") if isinstance(data.get("tokens"), dict) else {}
    if url not in tokens:
        return False
    del tokens[url]
    data["tokens"] = tokens
    _write(data)
    return True
