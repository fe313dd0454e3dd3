"""The admin login behind the same failed-login throttle as the site's; throttles per
address and per username that cannot lock anyone out by themselves; site-wide rates on failed logins and on
sign-ups; usernames normalised (NFKC) and refused when confusable with an existing one. Throttles
grouped by network (IPv4 /24, IPv6 /64) as well as by address; sign-up attempts counted (a refused name says it
is taken) and refused without revealing anything of the name; a busy site does not lock out a fresh network.
Real Redis."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from portal.accounts.throttle import network_of
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
    # The owner from a clean network gets in, at the admin too.
    ok = _login(client, "root", RIGHT, "10.0.10.2", "/admin/login/?next=/admin/")
    assert ok.status_code == 302 and ok["Location"] == "/admin/"


@override_settings(LOGIN_MAX_FAILURES=3, LOGIN_MAX_FAILURES_PER_USERNAME=5, LOGIN_MAX_FAILURES_PER_ADDRESS=100)
def test_nobody_can_lock_an_account_out(client):
    """Before: 10 failures locked the username for 15 minutes from the attacker's address, and behind a proxy
    (one address for everyone) for everyone. Now the owner's clean address always gets to try."""
    make_user("target", password=RIGHT)
    for i in range(12):  # from several networks, beyond every per-username limit
        _login(client, "TARGET" if i % 2 else "target", "wrong", f"10.1.{i % 4}.1")
    # A dirty network is refused for this username, even from an address with no failures of its own
    # (else each fresh address of the attacker's network gets a try)...
    assert _login(client, "target", RIGHT, "10.1.0.9").status_code == 429
    assert _login(client, "target", "wrong", "10.0.11.9").status_code == 200  # another network: clean until it fails
    assert _login(client, "target", RIGHT, "10.0.11.9").status_code == 429
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
    assert _login(client, "carol", RIGHT, "10.0.33.200").status_code == 302  # a clean network still gets in


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
    assert "Too many sign-up attempts" in refused.content.decode()
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
    response = client.post(
        "/accounts/login/", {"username": "dave", "password": RIGHT}, HTTP_X_FORWARDED_FOR="10.0.55.2"
    )
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


# --------------------------------------------------------------------------- networks, sign-up probing


@pytest.mark.parametrize(
    ("address", "network"),
    [
        ("203.0.113.77", "203.0.113.0/24"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.9", "203.0.113.0/24"),  # an IPv4 client seen through a dual-stack socket
        ("fe80::1%eth0", "fe80::/64"),
        ("not an address", "other:not an address"),
    ],
)
def test_addresses_are_grouped_by_network(address, network):
    assert network_of(address) == network


def _rotating(prefix: str, n: int) -> list[str]:
    """n distinct addresses of one network: an IPv6 /64 holds 2**64 of them, an IPv4 /24 254."""
    return [f"{prefix}{i + 1:x}" if ":" in prefix else f"{prefix}{i + 1}" for i in range(n)]


@pytest.mark.parametrize("prefix", ["2001:db8:7:7::", "198.51.100."])
@override_settings(LOGIN_MAX_FAILURES=3, LOGIN_MAX_FAILURES_PER_USERNAME=1000, LOGIN_MAX_FAILURES_PER_ADDRESS=1000)
def test_rotating_addresses_of_one_network_does_not_reset_the_guesses_at_one_username(client, prefix):
    """Counted per address and username, 30 addresses would each get their own LOGIN_MAX_FAILURES tries at one
    username, and an IPv6 /64 gives a client 2**64 addresses. So the (network, username) pair has the same limit,
    and the owner from another network still gets in."""
    make_user("target", password=RIGHT)
    answers = [_login(client, "target", "guess", address).status_code for address in _rotating(prefix, 30)]
    assert answers[:3] == [200] * 3 and set(answers[3:]) == {429}
    assert _login(client, "target", RIGHT, _rotating(prefix, 40)[-1]).status_code == 429
    elsewhere = "2001:db8:8:8::1" if ":" in prefix else "192.0.2.1"
    assert _login(client, "target", RIGHT, elsewhere).status_code == 302


@override_settings(LOGIN_MAX_FAILURES=1000, LOGIN_MAX_FAILURES_PER_ADDRESS=1000, LOGIN_MAX_FAILURES_PER_NETWORK=5)
def test_spraying_from_one_network_is_limited_per_network(client):
    """Before: the per-address limit alone, so each new address of a /64 sprayed afresh."""
    make_user("victim", password=RIGHT)
    for i, address in enumerate(_rotating("2001:db8:9:9::", 5)):
        assert _login(client, f"user{i}", "Summer2026!", address).status_code == 200
    assert _login(client, "victim", RIGHT, "2001:db8:9:9::ffff").status_code == 429
    assert _login(client, "victim", RIGHT, "2001:db8:9:a::1").status_code == 302  # the next /64 is another network


def _signup(client, name: str, address: str, *, confirm: str | None = None):
    client.logout()
    password = "a-long-enough-passphrase-42"
    return client.post(
        "/accounts/signup/",
        {"username": name, "email": "", "password1": password, "password2": confirm or password},
        REMOTE_ADDR=address,
    )


@override_settings(SIGNUPS_PER_HOUR=3, SIGNUPS_PER_ADDRESS_PER_HOUR=1)
def test_a_busy_site_does_not_lock_out_a_newcomer_from_a_fresh_network(client):
    """30 sign-ups from 10 addresses (the site-wide hourly rate) must not lock every new address out for an
    hour: the site's rate refuses only networks that already made an account this hour."""
    for i in range(3):  # sock puppets from three networks fill the site's rate
        assert _signup(client, f"sock{i}", f"10.9.{i}.1").status_code == 302
    assert _signup(client, "sock3", "10.9.0.2").status_code == 429  # a fresh address of a network that signed up
    assert _signup(client, "newcomer", "192.0.2.50").status_code == 302  # a fresh network
    assert User.objects.filter(username="newcomer").exists()


@override_settings(SIGNUPS_PER_NETWORK_PER_HOUR=2, SIGNUPS_PER_ADDRESS_PER_HOUR=100, SIGNUPS_PER_HOUR=100)
def test_sign_ups_are_limited_per_network(client):
    """Before: a new address of the same /64 made accounts afresh."""
    addresses = _rotating("2001:db8:5:5::", 3)
    assert _signup(client, "puppet1", addresses[0]).status_code == 302
    assert _signup(client, "puppet2", addresses[1]).status_code == 302
    assert _signup(client, "puppet3", addresses[2]).status_code == 429


@override_settings(SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR=4, SIGNUP_ATTEMPTS_PER_NETWORK_PER_HOUR=6)
def test_probing_names_through_the_sign_up_form_is_bounded(client):
    """Counting only accounts made would let a form that fails on purpose (passwords that do not match) ask
    "is this name taken?" without limit: every posted form counts, per address and network."""
    make_user("alice")
    probes = [_signup(client, name, "10.8.0.1", confirm="mismatch") for name in ("alice", "bob", "carol", "dave")]
    assert [r.status_code for r in probes] == [200] * 4
    assert "taken" in probes[0].content.decode() and "taken" not in probes[1].content.decode()
    assert _signup(client, "erin", "10.8.0.1", confirm="mismatch").status_code == 429
    assert [_signup(client, n, "10.8.0.2", confirm="x").status_code for n in ("f", "g", "h")] == [200, 200, 429]
    assert User.objects.count() == 1


@override_settings(SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR=1)
def test_a_throttled_sign_up_says_nothing_of_the_name_asked_for(client):
    """A 429 page that rendered the bound form would still say "This username is taken", so a throttled
    client could enumerate names without limit: the refusal is decided before the form is read and is the same
    page for a taken name and a free one."""
    make_user("alice")
    _signup(client, "warmup", "10.7.0.1", confirm="mismatch")
    taken = _signup(client, "alice", "10.7.0.1")
    free = _signup(client, "nobody-has-this", "10.7.0.1")
    assert taken.status_code == free.status_code == 429

    def page(response) -> str:
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())

    assert page(taken) == page(free)
    assert "taken" not in page(taken) and "alice" not in page(taken)
    assert not User.objects.filter(username="nobody-has-this").exists()
