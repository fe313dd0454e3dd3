"""API keys of model endpoints, encrypted at rest with Fernet.

The key comes from AGENT_FERNET_KEY (urlsafe base64 of 32 bytes; several comma-separated keys allow
rotation: the first encrypts, all decrypt). With DEBUG on and no key set, a random key is made once and kept in
the data folder (`dev-agent-fernet-key`, mode 600) so a fresh clone works; it is never derived from SECRET_KEY.
Production (DEBUG off) refuses to store or read a key without AGENT_FERNET_KEY.
Only the `agent` queue's model-call job decrypts (see jobs.py); nothing else needs the plain key.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from portal.dev_secrets import stored_secret


class ApiKeyUnreadable(Exception):
    """The stored token does not decrypt with the configured keys (rotated away, or corrupted)."""


def _fernet() -> MultiFernet:
    raw = [k.strip() for k in (settings.AGENT_FERNET_KEY or "").split(",") if k.strip()]
    if not raw:
        if not settings.DEBUG:
            raise ImproperlyConfigured(
                "AGENT_FERNET_KEY is required when DEBUG is off: generate one with "
                "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`"
            )
        stored = stored_secret(Path(settings.DATA_DIR) / "dev-agent-fernet-key", lambda: Fernet.generate_key().decode())
        raw = [stored]
    try:
        return MultiFernet([Fernet(k.encode()) for k in raw])
    except ValueError:
        raise ImproperlyConfigured("AGENT_FERNET_KEY must be urlsafe base64 of 32 bytes (Fernet.generate_key())")


def api_key_encrypt(plain: str) -> str:
    """The Fernet token for `plain` ("" for no key)."""
    if not plain:
        return ""
    return _fernet().encrypt(plain.encode("utf-8")).decode("ascii")


def api_key_decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        raise ApiKeyUnreadable("the stored API key cannot be decrypted with the configured AGENT_FERNET_KEY")


def api_key_last4(plain: str) -> str:
    """What pages show of a key. Short keys show nothing, so the hint never reveals most of a key."""
    return plain[-4:] if len(plain) >= 12 else ""
