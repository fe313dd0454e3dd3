"""Issue 15, findings 4 and 7: the admin login behind the same failed-login throttle as the site's; throttles per
address and per username that cannot lock anyone out by themselves; site-wide rates on failed logins and on
sign-ups; usernames normalised (NFKC) and refused when confusable with an existing one. Real Redis."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from portal.accounts.usernames import skeleton
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db
RIGHT = "the-right-passphrase-99"


def _login(client, username: str, password: str, address: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


@override_settings(LOGIN_MAX_FAILURES=3)
def test_the_admin_login_is_throttled_like_the_site_login(client):
    """Before: 30 wrong passwords at /admin/login/, all 200, then the right one worked."""
    make_user("root", password=RIGHT, is_staff=True, is_superuser=True)
    for _ in range(3):
        assert _login(client, "root", "wrong", "10.0.0.1", "/admin/login/").status_code == 200
    blocked = _login(client, "root", RIGHT, "10.0.0.1", "/admin/login/")
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 0
    assert "Too many failed logins" in blocked.content.decode()
    # The site login shares the count: the same pair is blocked there too.
    assert _login(client, "root", RIGHT, "10.0.0.1").status_code == 429
    # The owner from a clean address gets in, at the admin too.
    ok = _login(client, "root", RIGHT, "10.0.0.2", "/admin/login/?next=/admin/")
    assert ok.status_code == 302 and ok["Location"] == "/admin/"


@override_settings(LOGIN_MAX_FAILURES=3, LOGIN_MAX_FAILURES_PER_USERNAME=5, LOGIN_MAX_FAILURES_PER_ADDRESS=100)
def test_nobody_can_lock_an_account_out(client):
    """Before: 10 failures locked the username for 15 minutes from the attacker's address, and behind a proxy
    (one address for everyone) for everyone. Now the owner's clean address always gets to try."""
    make_user("target", password=RIGHT)
    for i in range(12):  # from several addresses, beyond every per-username limit
        _login(client, "TARGET" if i % 2 else "target", "wrong", f"10.0.1.{i % 4}")
    # A dirty address is refused for this username, even with a pair count below its own limit...
    assert _login(client, "target", "wrong", "10.0.1.9").status_code == 200  # clean until it fails once
    assert _login(client, "target", RIGHT, "10.0.1.9").status_code == 429
    # ... and the owner, from an address with no recent failures, logs in.
    assert _login(client, "target", RIGHT, "192.0.2.7").status_code == 302


@override_settings(LOGIN_MAX_FAILURES=3, LOGIN_MAX_FAILURES_PER_ADDRESS=5)
def test_spraying_one_password_over_many_usernames_is_limited_per_address(client):
    for i in range(6):
        make_user(f"user{i}", password=RIGHT)
    for i in range(5):
        assert _login(client, f"user{i}", "Summer2026!", "10.0.2.1").status_code == 200
    assert _login(client, "user5", RIGHT, "10.0.2.1").status_code == 429
    assert _login(client, "user5", RIGHT, "10.0.2.2").status_code == 302


@override_settings(LOGIN_MAX_FAILURES_GLOBAL=5)
def test_a_site_wide_rate_on_failed_logins(client):
    make_user("carol", password=RIGHT)
    for i in range(5):  # a botnet: one guess per address, one username each
        assert _login(client, f"nobody{i}", "guess", f"10.0.3.{i}").status_code == 200
    assert _login(client, "carol", RIGHT, "10.0.3.0").status_code == 429  # a dirty address, site over its rate
    assert _login(client, "carol", RIGHT, "10.0.3.200").status_code == 302  # a clean one still gets in


@override_settings(SIGNUPS_PER_ADDRESS_PER_HOUR=2, SIGNUPS_PER_HOUR=3)
def test_signups_are_rate_limited_per_address_and_site_wide(client):
    """Before: 20 accounts in 12 s, multiplying every per-user quota."""

    def signup(name: str, address: str):
        client.logout()
        password = "a-long-enough-passphrase-42"
        return client.post(
            "/accounts/signup/",
            {"username": name, "email": "", "password1": password, "password2": password},
            REMOTE_ADDR=address,
        )

    assert signup("sock1", "10.0.4.1").status_code == 302
    assert signup("sock2", "10.0.4.1").status_code == 302
    refused = signup("sock3", "10.0.4.1")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many new accounts" in refused.content.decode()
    assert signup("sock4", "10.0.4.2").status_code == 302
    assert signup("sock5", "10.0.4.3").status_code == 429  # the site's hourly rate
    assert sorted(User.objects.values_list("username", flat=True)) == ["sock1", "sock2", "sock4"]


@override_settings(CLIENT_ADDRESS_HEADER="HTTP_X_FORWARDED_FOR", LOGIN_MAX_FAILURES=2)
def test_behind_a_proxy_the_configured_header_gives_the_address(client):
    make_user("dave", password=RIGHT)
    for _ in range(2):  # the client forges a first entry; the proxy appends the real address
        client.post("/accounts/login/", {"username": "dave", "password": "x"}, HTTP_X_FORWARDED_FOR="1.2.3.4, 10.0.5.1")
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    response = client.post(
        "/accounts/login/", {"username": "dave", "password": RIGHT}, HTTP_X_FORWARDED_FOR="9.9.9.9, 10.0.5.1", **proxy
    )
    assert response.status_code == 429
    response = client.post("/accounts/login/", {"username": "dave", "password": RIGHT}, HTTP_X_FORWARDED_FOR="10.0.5.2")
    assert response.status_code == 302


@pytest.mark.parametrize(
    "lookalike",
    [
        "\u0430lice",  # Cyrillic а
        "ALICE",
        "\uff41\uff4c\uff49\uff43\uff45",  # full-width, NFKC makes it alice
        "\u0391lice",  # Greek capital alpha
        "alic\u0435",  # Cyrillic е
        "al\u0131ce",  # dotless ı
        "ali\u0301ce",  # a combining accent
    ],
)
def test_a_username_confusable_with_an_existing_one_is_refused(client, lookalike):
    """Before: a Cyrillic а made аlice look like alice on the boards."""
    make_user("alice")
    password = "a-long-enough-passphrase-42"
    response = client.post(
        "/accounts/signup/", {"username": lookalike, "email": "", "password1": password, "password2": password}
    )
    assert response.status_code == 200 and "looks like one that is" in response.content.decode()
    assert User.objects.count() == 1


def test_usernames_are_stored_nfkc_and_distinct_names_pass(client):
    make_user("alice")
    password = "a-long-enough-passphrase-42"
    response = client.post(
        "/accounts/signup/",
        {"username": "\uff42\uff4f\uff42\uff42\uff59", "email": "", "password1": password, "password2": password},
    )
    assert response.status_code == 302
    assert User.objects.filter(username="bobby").exists()
    assert skeleton("b0bby") == skeleton("bobby") and skeleton("alice") != skeleton("alicia")
