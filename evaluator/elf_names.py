"""The names a device ELF (cubin) carries, read from its bytes, and which of them are not plain identifiers.

`cuobjdump` prints kernel and section names as they are, newlines included, so a cubin patched after compiling
(a Triton file runs Python while it compiles) could smuggle whole lines into the SASS listing: fake target
instructions for the static count, or text that lands wherever the listing is written. The names are read here
from the ELF's own string tables instead of from the tool's text, and a binary with any name outside
`[A-Za-z0-9_.$]` is refused before a trusted tool prints it. Compilers emit only such names for kernels
(mangled C++ and Triton names are identifiers; sections are `.text.<name>`, `.nv.info.<name>`, ...).

Pure functions over bytes; a malformed file is `ElfError`.
"""

from __future__ import annotations

import re
import struct

__all__ = ["ElfError", "names", "unsafe_names"]

_SAFE = re.compile(rb"[A-Za-z0-9_.$]*")
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11


class ElfError(ValueError):
    """Not a well-formed 64-bit little-endian ELF file."""


def _cstr(table: bytes, offset: int) -> bytes:
    if offset >= len(table):
        raise ElfError(f"string offset {offset} past its table ({len(table)} bytes)")
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)]


def names(data: bytes) -> list[bytes]:
    """Every section name and every symbol name (symbol tables only) of a 64-bit little-endian ELF file."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shnum == 0:
        return []
    if shentsize < 64 or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise ElfError("section header table out of bounds")
    sections = []
    for i in range(shnum):
        name, kind, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize
        )
        if kind != 8 and offset + size > len(data):  # SHT_NOBITS has no bytes in the file
            raise ElfError(f"section {i} out of bounds")
        sections.append((name, kind, offset, size, link, entsize))
    _, _, str_off, str_size, _, _ = sections[shstrndx]
    shstr = data[str_off : str_off + str_size]
    found = [_cstr(shstr, s[0]) for s in sections]
    for _name, kind, offset, size, link, entsize in sections:
        if kind not in (_SHT_SYMTAB, _SHT_DYNSYM):
            continue
        if entsize < 24 or link >= len(sections):
            raise ElfError("malformed symbol table")
        _, _, t_off, t_size, _, _ = sections[link]
        strtab = data[t_off : t_off + t_size]
        for pos in range(offset, offset + size - entsize + 1, entsize):
            (st_name,) = struct.unpack_from("<I", data, pos)
            if st_name:
                found.append(_cstr(strtab, st_name))
    return found


def unsafe_names(data: bytes) -> list[str]:
    """The names of `data` (a cubin) with any character outside `[A-Za-z0-9_.$]`, shown escaped (`ascii()`)."""
    return [ascii(n.decode("latin-1"))[1:-1] for n in names(data) if not _SAFE.fullmatch(n)]
