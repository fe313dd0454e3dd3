"""The confusable-username check is the Unicode TR39 skeleton over Unicode's own confusables table, not a
hand-made list. Before: `ɑlice` (U+0251 LATIN SMALL LETTER ALPHA) was accepted beside `alice`, and so were
`rn` beside `m`, `Ian` beside `lan`, and look-alikes from every script the list did not name (Armenian օ,
Cherokee Ꭺ, Malayalam ഠ). Of the sign-up cases below the old list missed ɑlice, the five-script alice, rn/m,
com/corn, Ian/lan and һеllօ; the other four are kept as guards."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from portal.accounts import usernames
from portal.accounts.usernames import confusable_with, skeleton, tr39_skeleton
from tests.support.factories import make_user

PASSWORD = "a-long-enough-passphrase-42"


def test_the_table_is_unicodes_whole_confusables_file():
    """The vendored data is the whole UTS #39 table (6311 mappings in 13.0.0), not a few dozen letters."""
    table = usernames._prototypes()
    assert len(table) == 6311
    assert table[ord("m")] == "rn" and table[ord("0")] == "O" and table[ord("I")] == "l"
    assert "Version: 13.0.0" in usernames.CONFUSABLES.read_text(encoding="utf-8")[:600]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u0430", "a"),  # CYRILLIC SMALL LETTER A
        ("\u0251", "a"),  # LATIN SMALL LETTER ALPHA (as in ɑlice)
        ("m", "rn"),  # TR39 maps m to r + n, so `rn` and `m` share a skeleton
        ("rn", "rn"),
        ("\u0585", "o"),  # ARMENIAN SMALL LETTER OH
        ("\u13aa", "A"),  # CHEROKEE LETTER GO
        ("\u0d20", "o"),  # MALAYALAM LETTER TTHA
        ("I", "l"),  # capital I and small l
        ("1", "l"),
        ("a\u200bb", "ab"),  # ZERO WIDTH SPACE is default-ignorable
        ("a\u3164b", "ab"),  # HANGUL FILLER, a letter that draws as nothing
    ],
)
def test_tr39_skeleton(text, expected):
    assert tr39_skeleton(text) == expected


@pytest.mark.parametrize(
    ("existing", "lookalike"),
    [
        ("alice", "\u0251lice"),  # the finding: Latin alpha
        ("alice", "\u0430lice"),  # Cyrillic а
        ("alice", "\uff41\uff4c\uff49\uff43\uff45"),  # full-width
        ("alice", "ALICE"),  # case
        ("alice", "\u0251\u0406\u0269\u1d04\u0435"),  # ɑ, Cyrillic І, ɩ, small capital c, Cyrillic е
        ("m", "rn"),
        ("corn", "com"),
        ("lan", "Ian"),  # capital I, drawn as small l in most sans-serif fonts
        ("hello", "\u04bb\u0435ll\u0585"),  # Cyrillic һ, е and Armenian օ
        ("bobby", "b0bby"),  # 0 → O, then folded to o
    ],
)
@pytest.mark.django_db
def test_a_lookalike_of_an_existing_name_is_refused_at_sign_up(client, existing, lookalike):
    make_user(existing)
    response = client.post(
        "/accounts/signup/", {"username": lookalike, "email": "", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 200 and "looks like one that is" in response.content.decode()
    assert User.objects.count() == 1


@pytest.mark.parametrize(("one", "other"), [("alice", "alicia"), ("bob", "rob"), ("ml", "rnl1x"), ("dave", "dove")])
@pytest.mark.django_db
def test_distinct_names_are_not_confused(one, other):
    make_user(one)
    assert confusable_with(other) is None and skeleton(one) != skeleton(other)


@pytest.mark.django_db
def test_the_check_reads_every_name_whatever_it_finds(django_assert_num_queries):
    """One query and a full pass whether the name exists or not: no early answer to time."""
    for name in ("alice", "bob", "carol"):
        make_user(name)
    with django_assert_num_queries(1):
        assert confusable_with("\u0430lice") == "alice"
    with django_assert_num_queries(1):
        assert confusable_with("zed") is None
