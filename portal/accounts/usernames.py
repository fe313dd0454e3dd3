"""Usernames that look alike are one username: `аlice` (Cyrillic а), `ɑlice` (Latin alpha), `Alice` and `ａｌｉｃｅ`
are refused once `alice` exists, as `rn` is once `m` exists.

The rule is the skeleton of Unicode Technical Standard #39 (section 4, "Confusable Detection"): decompose (NFD),
drop default-ignorable code points, replace every character by its prototype from Unicode's confusables table,
decompose again; two strings with the same skeleton are confusable. The table is Unicode's own data file,
vendored unchanged but for its comments (`data/confusables.txt`, Unicode 13.0.0; its header says where it came
from), so Armenian, Cherokee, Malayalam and the rest are covered as Latin, Cyrillic and Greek are.

A username also counts as taken when it differs only in case or accents: each name has two keys, its skeleton
as typed (`Ian` against `lan`: TR39 maps capital I to l) and its folded skeleton (case-folded, combining marks
dropped, repeated until stable, since a prototype may be a capital: 0 → O → o). Two names clash when either
key matches. The usernames are stored as typed, in NFKC form; skeletons are compared only, never shown."""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path

from django.contrib.auth.models import User

CONFUSABLES = Path(__file__).resolve().parent / "data" / "confusables.txt"
# Default-ignorable code points (TR39 drops them) that are not format characters (category Cf, dropped by
# category): the Hangul fillers, Khmer inherent vowels, Mongolian and other variation selectors, the combining
# grapheme joiner. They draw as nothing, so `alice` with one of them inside is `alice`.
_IGNORABLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810), *range(0xFE00, 0xFE10)]
    + list(range(0xE0100, 0xE01F0))
)
_MAX_FOLDS = 4  # folding then mapping settles within three rounds on every character of the table


@functools.cache
def _prototypes() -> dict[int, str]:
    """Unicode's confusables table: code point → its prototype (one or more characters)."""
    table: dict[int, str] = {}
    for line in CONFUSABLES.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        source, target, _kind = (field.strip() for field in line.split(";"))
        table[int(source, 16)] = "".join(chr(int(code, 16)) for code in target.split())
    return table


def _ignorable(char: str) -> bool:
    return ord(char) in _IGNORABLE or unicodedata.category(char) == "Cf"


def tr39_skeleton(text: str) -> str:
    """The UTS #39 skeleton of `text`: NFD, default-ignorables dropped, each character mapped to its
    prototype, NFD again."""
    table = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFD", "".join(c for c in decomposed if not _ignorable(c)).translate(table))


def _unmarked(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def normalize(name: str) -> str:
    """The stored form of a username: NFKC, surrounding space removed (case kept, as typed)."""
    return unicodedata.normalize("NFKC", name).strip()


def skeleton(name: str) -> str:
    """The folded skeleton: what `Alice`, `ALICE`, `аlice` and `álice` share. Compared only, never shown or stored
    (the login throttle counts failures per account by it)."""
    key = unicodedata.normalize("NFKC", name)
    for _ in range(_MAX_FOLDS):
        folded = tr39_skeleton(_unmarked(key.casefold()))
        if folded == key:
            break
        key = folded
    return key


def _keys(name: str) -> tuple[str, str]:
    """(skeleton as typed, folded skeleton)."""
    return tr39_skeleton(_unmarked(unicodedata.normalize("NFKC", name))), skeleton(name)


def confusable_with(name: str, *, exclude_id: int | None = None) -> str | None:
    """An existing username that `name` could be mistaken for, or None. Reads every username, and all of them
    whatever it finds, so the answer takes as long for a name that exists as for one that does not; fine for the
    thousands of accounts a benchmark portal has (a stored skeleton column would be the next step)."""
    typed, folded = _keys(name)
    users = User.objects.all()
    if exclude_id is not None:
        users = users.exclude(id=exclude_id)
    found = None
    for existing in users.values_list("username", flat=True).iterator():
        existing_typed, existing_folded = _keys(existing)
        if found is None and (existing_typed == typed or existing_folded == folded):
            found = existing
    return found
