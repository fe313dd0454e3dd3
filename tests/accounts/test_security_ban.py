"""A ban ends the user's existing sessions and API tokens at once, however it was set (the admin's ban action
or ticking "banned" on the profile), so a banned user can no longer create tokens or submit through a session."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session

from portal.accounts.models import Profile
from portal.accounts.services import user_ban, user_unban
from tests.support.factories import make_token, make_user

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"  # noqa: S105 - the factories' test password


def _logged_in(client, username: str):
    user = make_user(username)
    assert client.post("/accounts/login/", {"username": username, "password": PASSWORD}).status_code == 302
    assert client.get("/accounts/tokens/").status_code == 200
    return user


def _session_users() -> list[str]:
    return [s.get_decoded().get("_auth_user_id") for s in Session.objects.all()]


def test_the_ban_service_ends_sessions_and_tokens(client):
    user = _logged_in(client, "mallory")
    token = make_token(user)
    assert str(user.id) in _session_users()
    user_ban(user=user, reason="test")
    assert str(user.id) not in _session_users()  # the stored session is gone
    response = client.get("/accounts/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    response = client.post("/accounts/tokens/", {"name": "after the ban"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert user.api_tokens.count() == 1  # no token was created
    assert client.get("/api/v1/runs/1", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    user_unban(user=user)
    assert client.get("/api/v1/runs/1", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401  # stays revoked


def test_a_ban_set_on_the_profile_directly_ends_the_session_on_the_next_request(client):
    """The admin's profile inline saves is_banned without the ban service: the session must end anyway."""
    user = _logged_in(client, "eve")
    Profile.objects.update_or_create(user=user, defaults={"is_banned": True})
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert str(user.id) not in _session_users()
    assert client.get("/accounts/tokens/").status_code == 302


def test_other_users_sessions_survive_a_ban(client, django_user_model):
    from django.test import Client

    other = Client()
    kept = _logged_in(other, "alice")
    user = _logged_in(client, "mallory")
    user_ban(user=user, reason="test")
    assert str(kept.id) in _session_users()
    assert other.get("/accounts/tokens/").status_code == 200
