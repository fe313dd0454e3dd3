"""CSV files served for download with no cell a spreadsheet would run as a formula.

A spreadsheet opening a CSV runs a cell that starts with `=`, `+`, `-` or `@` (and, in some, a tab or carriage
return before one of them) as a formula: `=HYPERLINK(...)` or a DDE call in a kernel name or a planted file is
then code on the reader's machine. Such a cell gets a leading `'`, which spreadsheets show as text; a plain decimal
number (`-1.5`, `+3e-2`) is left as it is, since it is read as a number and nothing else. A file without such a
cell is returned byte for byte, so neutralising is idempotent and a clean file keeps its sha256. Pure."""

from __future__ import annotations

import csv
import io
import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class UnreadableCsv(ValueError):
    """The bytes do not parse as CSV: serve them as no spreadsheet's input, or not at all."""


def is_formula(cell: str) -> bool:
    return cell.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(cell) is None


def neutralise(data: bytes) -> bytes:
    """`data` with every formula-like cell prefixed by `'` (rewritten as CSV); unchanged when it has none."""
    text = data.decode("utf-8", errors="replace")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise UnreadableCsv(f"not readable as CSV: {exc}") from None
    if not any(is_formula(cell) for row in rows for cell in row):
        return data
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow(["'" + cell if is_formula(cell) else cell for cell in row])
    return out.getvalue().encode("utf-8")
