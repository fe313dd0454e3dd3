"""Numbers for reading on pages: significant digits, token counts. Exports and the API carry the raw values."""

from __future__ import annotations

import math


def significant(value: float | int | None, digits: int = 3) -> str:
    """A number for reading with `digits` significant digits, trailing zeros kept so a column lines up (1.11,
    0.910, 523, 0.000174); "—" for None. Pages use this; exports carry raw values."""
    if value is None:
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(number):
        return str(number)
    if number == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(number))))
    text = f"{number:.{decimals}f}"
    if decimals == 0 or len(text.replace("-", "").replace(".", "").lstrip("0")) <= digits:
        return text
    return f"{number:.{max(0, decimals - 1)}f}"  # 9.996 rounded up to 10.00: one decimal fewer


def human_count(value: float | int | None) -> str:
    """Token counts for people: 950, 12.3k, 1.2M, 3.4B."""
    if value is None:
        return "—"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            text = f"{value / size:.1f}".rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return str(int(round(value)))
