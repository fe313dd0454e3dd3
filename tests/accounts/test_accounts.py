"""Accounts: sign-up and login, API tokens shown once and stored hashed, revocation, bans."""

from __future__ import annotations

import hashlib

import pytest

from portal.accounts.models import ApiToken
from portal.accounts.services import TokenRefused, token_check, user_ban
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db


def test_signup_logs_in_and_login_page_works(client):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "bob",
            "email": "",
            "password1": "a-long-enough-passphrase-42",
            "password2": "a-long-enough-passphrase-42",
        },
    )
    assert response.status_code == 302
    assert "Log out bob" in client.get("/").content.decode()
    client.post("/accounts/logout/")
    response = client.post("/accounts/login/", {"username": "bob", "password": "a-long-enough-passphrase-42"})
    assert response.status_code == 302


def test_token_is_shown_once_and_stored_only_as_a_hash(client):
    user = make_user()
    client.force_login(user)
    page = client.post("/accounts/tokens/", {"name": "ci"})
    assert page["Cache-Control"] == "no-store"
    html = page.content.decode()
    token = ApiToken.objects.get(user=user)
    raw = html.split('<pre id="new-token">')[1].split("</pre>")[0]
    assert raw.startswith("ptx_") and len(raw) > 40
    assert token.digest == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(ApiToken.objects.values().get())  # nothing stored holds the token itself
    assert raw not in client.get("/accounts/tokens/").content.decode()  # and it is never shown again
    assert token_check(raw).user == user


def test_revoked_token_no_longer_authenticates(client):
    user = make_user()
    raw = make_token(user)
    client.force_login(user)
    token = ApiToken.objects.get(user=user)
    client.post(f"/accounts/tokens/{token.id}/revoke")
    with pytest.raises(TokenRefused):
        token_check(raw)
    other = make_user("mallory")
    raw2 = make_token(other)
    client.post(f"/accounts/tokens/{ApiToken.objects.get(user=other).id}/revoke")  # not alice's to revoke
    assert token_check(raw2).user == other


def test_banned_user_cannot_log_in_submit_or_use_tokens(client):
    sync_catalog()
    user = make_user("eve")
    raw = make_token(user)
    user_ban(user=user, reason="gaming the timer")
    response = client.post("/accounts/login/", {"username": "eve", "password": "correct horse battery staple"})
    assert response.status_code == 200 and "This account is banned." in response.content.decode()
    with pytest.raises(TokenRefused):
        token_check(raw)
    response = client.post(
        "/api/v1/submissions",
        {"task": GEMM, "arch": "sm_90a", "source": starter_source()},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 401
    client.force_login(user)  # a session that predates the ban ends at its next request
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "source": starter_source()})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_admin_ban_action(admin_client):
    user = make_user("spammer")
    response = admin_client.post(
        "/admin/auth/user/", {"action": "ban_users", "_selected_action": [user.id]}, follow=True
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.profile.is_banned
