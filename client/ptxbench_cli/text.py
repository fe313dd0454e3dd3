"""Text from the portal printed on a terminal: names, messages and errors are other people's words, so control
characters (escape sequences that could move the cursor or retitle the window) are shown, never obeyed."""

from __future__ import annotations

MAX_LINE = 500


def clean(value: object) -> str:
    """Printable text: control characters (C0, DEL, C1) shown as \\xNN, tabs and newlines as spaces."""
    text = "" if value is None else str(value)
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\t\n\r":
            out.append(" ")
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "".join(out)


def one_line(value: object, limit: int = MAX_LINE) -> str:
    text = " ".join(clean(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(rows: list[list[object]], header: list[str]) -> str:
    """Left-aligned columns, every cell cleaned."""
    cells = [[one_line(h, 60) for h in header]] + [[one_line(c, 60) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def number(value: object, fmt: str = "{:.3g}") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return fmt.format(value)
    return one_line(value, 60)
