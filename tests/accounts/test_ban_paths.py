"""However a ban reaches the database, a banned user's API token authenticates no one: the ban service and the
admin's change form revoke the tokens and end the sessions, and the token check refuses a banned owner even where
a ban was written without the service (a bulk update, a restored backup), leaving the token unrevoked."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.sessions.models import Session

from portal.accounts.models import ApiToken, Profile
from portal.accounts.services import NOT_AUTHENTICATED
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"  # noqa: S105 - the factories' test password


class _FormFields(HTMLParser):
    """The fields a browser would post from the page's `<form id=form_id>`: inputs (checked boxes only), selected
    options, text areas."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id, self.inside = form_id, False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside or "name" not in a and tag != "option":
            return
        if tag == "input" and a.get("type") not in ("submit", "button", "file"):
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            self.fields.append((a["name"], a.get("value") or ("on" if a.get("type") == "checkbox" else "")))
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self.fields.append((self._select, a.get("value", "")))
        elif tag == "textarea":
            self._textarea = a["name"]
            self.fields.append((a["name"], ""))

    def handle_data(self, data):
        if self._textarea is not None:
            name, _ = self.fields[-1]
            self.fields[-1] = (name, data.lstrip("\n"))

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self.inside = False


def _change_form(admin_client, user) -> dict[str, list[str]]:
    page = admin_client.get(f"/admin/auth/user/{user.id}/change/")
    assert page.status_code == 200
    parser = _FormFields("user_form")
    parser.feed(page.content.decode())
    data: dict[str, list[str]] = {}
    for name, value in parser.fields:
        data.setdefault(name, []).append(value)
    return data


def _session_users() -> list[str]:
    return [s.get_decoded().get("_auth_user_id") for s in Session.objects.all()]


def _submit_with(client, raw: str):
    return client.post(
        "/api/v1/submissions",
        {"task": GEMM, "arch": "sm_90a", "source": starter_source()},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )


def test_a_ban_ticked_in_the_admins_change_form_revokes_tokens_and_ends_sessions(admin_client, client):
    """The form the admin really posts (every field of the user's change page, the profile inline's box ticked).
    Mutation caught: `PortalUserAdmin.save_formset` not calling the ban service (the inline then stores the flag
    only: the token stays unrevoked and the stored session stays)."""
    sync_catalog()
    user = make_user("mallory")
    assert client.post("/accounts/login/", {"username": "mallory", "password": PASSWORD}).status_code == 302
    raw = make_token(user)
    data = _change_form(admin_client, user)
    assert "profile-0-is_banned" not in data  # not banned yet: the box is unticked
    data["profile-0-is_banned"] = ["on"]
    data["profile-0-banned_reason"] = ["timer tampering"]
    response = admin_client.post(f"/admin/auth/user/{user.id}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ApiToken.objects.get(user=user).revoked_at is not None
    assert str(user.id) not in _session_users()
    profile = Profile.objects.get(user=user)
    assert profile.is_banned and profile.banned_reason == "timer tampering" and profile.banned_at is not None
    response = _submit_with(client, raw)
    assert (response.status_code, response.json()) == (401, {"error": NOT_AUTHENTICATED})


def test_a_banned_users_unrevoked_token_is_refused(client):
    """A ban written without the service leaves the token unrevoked: the token check itself must refuse it, with
    the message every unusable token gets (not the submit service's 403 for a banned account).
    Mutation caught: `user_is_banned` dropped from `token_check` (portal/accounts/services.py)."""
    sync_catalog()
    user = make_user("eve")
    raw = make_token(user)
    before = _submit_with(client, raw)
    assert before.status_code == 201  # the token works before the ban
    Profile.objects.update_or_create(user=user, defaults={"is_banned": True})
    assert ApiToken.objects.get(user=user).revoked_at is None  # only the token check stands in the way
    for response in (
        _submit_with(client, raw),
        client.get(f"/api/v1/submissions/{before.json()['id']}", HTTP_AUTHORIZATION=f"Bearer {raw}"),
    ):
        assert (response.status_code, response.json()) == (401, {"error": NOT_AUTHENTICATED})
    assert user.submissions.count() == 1  # the one from before the ban
