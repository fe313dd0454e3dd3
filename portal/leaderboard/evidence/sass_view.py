"""The SASS listing of an evaluation as the evaluation page shows it: lines of the stored SASS artifact, each
tagged with the target family its opcode belongs to (arches.FAMILY_OPCODES), so the page can mark them with a
CSS class. Pure over text; the page escapes every line (the SASS comes from a hostile kernel's binary)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evaluator.binaries.sass import instruction_family

SASS_LINES_SHOWN = 1500  # longer listings are cut here, with a link to the whole file
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")


@dataclass(frozen=True)
class SassLine:
    text: str
    family: str  # target family of the opcode ("gmma", "tma", "tcgen05"), "" otherwise


@dataclass(frozen=True)
class SassListing:
    lines: list[SassLine]
    total_lines: int
    family_lines: dict[str, int] = field(default_factory=dict)  # lines per family, over the whole listing

    @property
    def truncated(self) -> bool:
        return self.total_lines > len(self.lines)


def sass_listing(text: str, *, families: tuple[str, ...], limit: int | None = None) -> SassListing:
    """Tag each line whose opcode is in one of `families`; keep the first `limit` (SASS_LINES_SHOWN) lines."""
    limit = SASS_LINES_SHOWN if limit is None else limit
    all_lines = text.splitlines()
    shown: list[SassLine] = []
    counts: dict[str, int] = {f: 0 for f in families}
    for number, line in enumerate(all_lines):
        match = _INSTRUCTION.match(line)
        family = instruction_family(match.group(1)) if match else None
        if family not in families:
            family = None
        if family:
            counts[family] += 1
        if number < limit:
            shown.append(SassLine(line, family or ""))
    return SassListing(shown, len(all_lines), counts)
