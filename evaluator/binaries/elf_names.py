"""The names a device ELF (cubin) carries, read from its bytes, and which of them are not plain identifiers.

`cuobjdump` prints kernel and section names as they are, newlines included, so a cubin patched after compiling
(a Triton file runs Python while it compiles) could smuggle whole lines into the SASS listing: fake target
instructions for the static count, or text that lands wherever the listing is written. The names are read here
from the ELF's own string tables instead of from the tool's text, and a binary with any name outside
`[A-Za-z0-9_.$]` is refused before a trusted tool prints it. Compilers emit only such names for kernels
(mangled C++ and Triton names are identifiers; sections are `.text.<name>`, `.nv.info.<name>`, ...). The file is
read strictly (evaluator/binaries/elf_layout.py): a form this reader could see differently from the tool is refused, so
no name can hide from the check and still reach the listing.

Pure functions over bytes; a malformed or not fully understood file is `ElfError`.
"""

from __future__ import annotations

import re

from evaluator.binaries.elf_layout import ElfError, read_layout

__all__ = ["ElfError", "names", "refusal", "unsafe_names"]

_SAFE = re.compile(rb"[A-Za-z0-9_.$]*")


def names(data: bytes) -> list[bytes]:
    """Every name a cubin can give: every string of its string tables. Section and symbol names are among them
    (their offsets are checked to fall inside those tables), and so is any name another table points to: any
    offset into a table of identifiers gives an identifier."""
    return list(read_layout(data).strings)


def unsafe_names(data: bytes) -> list[str]:
    """The names of `data` (a cubin) with any character outside `[A-Za-z0-9_.$]`, shown escaped (`ascii()`)."""
    return [ascii(n.decode("latin-1"))[1:-1] for n in names(data) if not _SAFE.fullmatch(n)]


def refusal(data: bytes) -> str | None:
    """Why a cubin is refused before any trusted tool reads it, in words for the verdict; None when it is not."""
    try:
        bad = unsafe_names(data)
    except ElfError as exc:
        return f"the compiled device code is not in the plain ELF form the evaluator reads in full: {exc}"
    if bad:
        return f"the compiled code has names that are not identifiers: {', '.join(bad)}"
    return None
