"""Usernames that look alike are one username: `аlice` (Cyrillic а) and `Alice` are refused once `alice` exists.

A name's skeleton is its NFKC form, case-folded, with Cyrillic and Greek letters that look like Latin ones
mapped to those, and the digits 0 and 1 read as o and l. Two names with the same
skeleton are confusable. The limit: this covers Latin, Cyrillic and Greek look-alikes and the digits only, not
the whole Unicode confusables table (UTS #39): mixed scripts elsewhere (Armenian, Cherokee, mathematical
letters that NFKC leaves alone) are not caught, nor is capital I against lower-case l ("Ian"/"lan")."""

from __future__ import annotations

import unicodedata

from django.contrib.auth.models import User

# Cyrillic and Greek letters (lower case: the skeleton is case-folded first) drawn like Latin ones.
_LOOKALIKES = {
    # Cyrillic
    "а": "a",
    "в": "b",
    "ь": "b",
    "с": "c",
    "ԁ": "d",
    "е": "e",
    "ё": "e",
    "һ": "h",
    "н": "h",
    "і": "i",
    "ӏ": "l",
    "ј": "j",
    "к": "k",
    "м": "m",
    "п": "n",
    "о": "o",
    "р": "p",
    "ԛ": "q",
    "г": "r",
    "ѕ": "s",
    "т": "t",
    "џ": "u",
    "ѵ": "v",
    "ԝ": "w",
    "х": "x",
    "у": "y",
    "з": "3",
    # Greek
    "α": "a",
    "β": "b",
    "ϲ": "c",
    "ε": "e",
    "η": "n",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "γ": "y",
    "ω": "w",
    "ζ": "z",
    # Digits and letters drawn alike in most fonts
    "0": "o",
    "1": "l",
    "ı": "i",
}
_TABLE = str.maketrans(_LOOKALIKES)


def normalize(name: str) -> str:
    """The stored form of a username: NFKC, surrounding space removed (case kept, as typed)."""
    return unicodedata.normalize("NFKC", name).strip()


def skeleton(name: str) -> str:
    """The form two confusable names share. Used for comparison only, never shown or stored."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    # Drop combining marks NFKC keeps apart (a + U+0301 and á look alike), then map look-alikes.
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))
    return bare.translate(_TABLE)


def confusable_with(name: str, *, exclude_id: int | None = None) -> str | None:
    """An existing username that `name` could be mistaken for, or None. Reads every username: fine for the
    thousands of accounts a benchmark portal has; a stored skeleton column would be the next step."""
    target = skeleton(name)
    users = User.objects.all()
    if exclude_id is not None:
        users = users.exclude(id=exclude_id)
    for existing in users.values_list("username", flat=True).iterator():
        if skeleton(existing) == target:
            return existing
    return None
