"""Pure: the first error lines of a compiler's output, for the submission page (the whole log is an artifact)."""

from __future__ import annotations

import re

from evaluator.both_sides.verdict import Verdict

# Work-folder paths in messages ("/tmp/…/eval-1/kernel.cu(12): error …") shortened to the file's own name.
_WORK_PATH = re.compile(r"(?:/[\w.\-]+)+/(kernel\.(?:cu|py))")
_ERROR = re.compile(r"\b(error|fatal|exception)\b", re.IGNORECASE)
MAX_LINES = 12
MAX_LINE_CHARS = 300


def first_error_lines(verdict: Verdict | None) -> list[str]:
    """Up to MAX_LINES lines of a failed compile: each error line with the two after it (nvcc prints the
    offending source line and a caret there); when no line says error (a Python traceback, a killed compiler),
    the last lines. Empty when the compile did not fail. Text as the compiler wrote it: the page escapes it."""
    compiled = verdict.compile if verdict else None
    if compiled is None or compiled.ok:
        return []
    lines = [_WORK_PATH.sub(r"\1", line.rstrip()) for line in str(compiled.output or "").splitlines()]
    lines = [line for line in lines if line.strip() and not line.startswith("ptxas info")]
    keep: list[int] = []
    for i, line in enumerate(lines):
        if _ERROR.search(line):
            keep.extend(range(i, min(i + 3, len(lines))))
    chosen = sorted(set(keep))[:MAX_LINES] or list(range(max(0, len(lines) - MAX_LINES), len(lines)))
    return [lines[i][:MAX_LINE_CHARS] for i in chosen]
