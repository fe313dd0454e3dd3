"""Writes for accounts: tokens and bans."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from portal.accounts.models import ApiToken, Profile

TOKEN_PREFIX = "ptx_"  # noqa: S105 - a marker, not a secret


def digest_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class TokenRefused(Exception):
    """A token that authenticates no one; `message` says why, for the one who sent it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@transaction.atomic
def token_create(
    *, user: User, name: str, scope: str = ApiToken.Scope.WRITE, days: int | None = None
) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never stored and never shown again. It expires
    `days` days from now (API_TOKEN_DEFAULT_DAYS when None; ValueError above API_TOKEN_MAX_DAYS or below 1)."""
    days = settings.API_TOKEN_DEFAULT_DAYS if days is None else days
    if not 1 <= days <= settings.API_TOKEN_MAX_DAYS:
        raise ValueError(f"a token lasts 1 to {settings.API_TOKEN_MAX_DAYS} days")
    if scope not in ApiToken.Scope.values:
        raise ValueError(f"the scope is one of {', '.join(ApiToken.Scope.values)}")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name.strip()[:100] or "token",
        prefix=raw[:12],
        digest=digest_token(raw),
        scope=scope,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, raw


def token_revoke(*, user: User, token_id: int) -> bool:
    updated = ApiToken.objects.filter(id=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    return updated == 1


NOT_AUTHENTICATED = "invalid, revoked or banned API token"


def token_check(raw: str) -> ApiToken:
    """The live token `raw` is (its `user` active and unbanned), or TokenRefused. An expired token is told so (only
    its holder can ask); anything else gets one message, whatever was wrong."""
    if not raw.startswith(TOKEN_PREFIX):
        raise TokenRefused(NOT_AUTHENTICATED)
    token = (
        ApiToken.objects.select_related("user", "user__profile")
        .filter(digest=digest_token(raw), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active or user_is_banned(token.user):
        raise TokenRefused(NOT_AUTHENTICATED)
    if token.is_expired:
        raise TokenRefused(
            f"this API token expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; make a new one at /accounts/tokens/"
        )
    ApiToken.objects.filter(id=token.id).update(last_used_at=timezone.now())
    return token


def user_is_banned(user: User) -> bool:
    profile = getattr(user, "profile", None)
    return bool(profile and profile.is_banned)


@transaction.atomic
def user_ban(*, user: User, reason: str) -> None:
    """Ban a user: no login, no submissions, sessions ended, tokens revoked; their evidence stays but leaves
    public tables and pages (docs/visibility.md)."""
    profile, _ = Profile.objects.get_or_create(user=user)
    profile.is_banned = True
    profile.banned_reason = reason
    profile.banned_at = timezone.now()
    profile.save()
    ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    _sessions_end(user)


def _sessions_end(user: User) -> None:
    """Delete the user's stored sessions. Sessions hold the user id only inside their encoded data, so every
    live one is decoded: bans are rare. Other session engines rely on BannedUserLogoutMiddleware alone."""
    from django.conf import settings
    from django.contrib.sessions.models import Session

    if settings.SESSION_ENGINE not in (
        "django.contrib.sessions.backends.db",
        "django.contrib.sessions.backends.cached_db",
    ):
        return
    mine = [
        s.session_key
        for s in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if s.get_decoded().get("_auth_user_id") == str(user.pk)
    ]
    if settings.SESSION_ENGINE.endswith("cached_db"):
        from django.contrib.sessions.backends.cached_db import SessionStore

        for key in mine:
            SessionStore(session_key=key).delete()
    Session.objects.filter(session_key__in=mine).delete()


@transaction.atomic
def user_unban(*, user: User) -> None:
    Profile.objects.filter(user=user).update(is_banned=False, banned_reason="", banned_at=None)
