"""The layout of a device ELF file (cubin), read strictly from its bytes: what is not fully understood is refused.

The trusted side's checks read a cubin here, and a trusted tool (`cuobjdump`) reads it again to print the SASS.
Wherever the two could read the same bytes differently, a candidate can show one thing to the checks and another
to the tool: with extended section numbering (`e_shnum` 0, the real count kept in section 0) a lenient reader
saw no sections, so no names to check, while cuobjdump printed every name, forged SASS lines included. So this
reader accepts only the plain form the CUDA compilers emit and refuses every other form with a reason in words:

- a 64-bit little-endian ELF file (identification version 1) for the CUDA machine, with the header, section header and
  program header sizes the format defines;
- no extended numbering anywhere (`e_shnum` 0 or in the reserved range, `e_shstrndx` SHN_XINDEX, `e_phnum`
  PN_XNUM, a SHT_SYMTAB_SHNDX section, a symbol whose section is SHN_XINDEX) and a section 0 of zeros;
- the section header table, the program header table and every section's bytes inside the file, and none of
  them overlapping another or the ELF header (a segment may cover sections: that is what segments do; two
  sections of one type may share the very same bytes, as Blackwell cubins' `.nv.merc.*` copies of debug sections
  do, since both are then read alike);
- every section link naming a section; string tables that begin and end with NUL (so every name ends inside
  its table); symbol tables of whole 24-byte entries linked to a string table; no compressed sections.

Pure functions over bytes; a refusal is `ElfError`, whose message can go into a verdict as it is.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["ElfError", "ElfLayout", "Section", "read_layout"]

EM_CUDA = 190
EHDR_BYTES, SHDR_BYTES, PHDR_BYTES, SYM_BYTES = 64, 64, 56, 24
SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS, SHT_DYNSYM, SHT_SYMTAB_SHNDX = 2, 3, 8, 11, 18
SHF_COMPRESSED = 0x800
SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0xFF00, 0xFFF1, 0xFFF2, 0xFFFF
PN_XNUM = 0xFFFF
# Far above what a compiler emits (a few hundred); reading more would only cost the trusted side time.
MAX_SYMBOLS = 1 << 18


class ElfError(ValueError):
    """Not an ELF file of the one plain form the evaluator reads in full (the message says what is not)."""


@dataclass(frozen=True)
class Section:
    index: int
    name: bytes
    kind: int  # sh_type
    flags: int
    offset: int
    size: int
    link: int
    entsize: int

    @property
    def in_file(self) -> bool:
        """Whether the section has bytes in the file (SHT_NOBITS and empty sections have none)."""
        return self.kind != SHT_NOBITS and self.size > 0


@dataclass(frozen=True)
class ElfLayout:
    sections: tuple[Section, ...]
    symbol_names: tuple[bytes, ...]  # of every symbol table, in file order (the null symbols' empty names left out)
    # Every NUL-terminated string of every string table: whatever any table (the processor-specific symbol tables
    # of newer cubins too) names through a string table is one of these or a suffix of one.
    strings: tuple[bytes, ...]


def read_layout(data: bytes) -> ElfLayout:
    """The sections and symbol names of a cubin, or ElfError with the first thing not understood."""
    if len(data) < EHDR_BYTES or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2:
        raise ElfError(f"ELF class {data[4]} (only 64-bit files are read)")
    if data[5] != 1:
        raise ElfError(f"ELF data encoding {data[5]} (only little-endian files are read)")
    if data[6] != 1:
        raise ElfError(f"ELF identification version {data[6]} (only version 1 is read)")
    # e_version is not checked: NVIDIA's tools write their own ABI number there (1 from nvcc 13.0's ptxas, 128 from
    # the ptxas Triton 3.6 carries, seen on an H200 on 2026-12-04), and it changes nothing about the layout read here.
    (_type, machine, _version, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum, shstrndx) = (
        struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    )
    if machine != EM_CUDA:
        raise ElfError(f"machine {machine} (only CUDA device code is read)")
    if ehsize != EHDR_BYTES or shentsize != SHDR_BYTES or (phnum and phentsize != PHDR_BYTES):
        raise ElfError("header sizes other than the ELF format's own")
    if shnum == 0 or shnum >= SHN_LORESERVE or shstrndx == SHN_XINDEX:
        raise ElfError("extended section numbering (the section count or names index kept in section 0)")
    if phnum == PN_XNUM:
        raise ElfError("extended program header numbering")
    if shstrndx == 0 or shstrndx >= shnum:
        raise ElfError(f"section names index {shstrndx} of {shnum} sections")
    regions = [("the ELF header", 0, EHDR_BYTES), ("the section header table", shoff, shnum * SHDR_BYTES)]
    if phnum:
        regions.append(("the program header table", phoff, phnum * PHDR_BYTES))
    for what, start, size in regions:
        _inside(data, start, size, what)
    _segments_inside(data, phoff, phnum)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * SHDR_BYTES) for i in range(shnum)]
    aliased: set[tuple[int, int, int]] = set()
    if any(headers[0]):
        raise ElfError("section 0 is not empty (extended numbering keeps counts there)")
    for i, (_name, kind, flags, _addr, offset, size, link, _info, _align, _entsize) in enumerate(headers):
        if kind == SHT_SYMTAB_SHNDX:
            raise ElfError(f"section {i} holds extended section indexes (SHT_SYMTAB_SHNDX)")
        if flags & SHF_COMPRESSED:
            raise ElfError(f"section {i} is compressed")
        if link >= shnum:
            raise ElfError(f"section {i} links to section {link} of {shnum}")
        if kind != SHT_NOBITS and size:
            _inside(data, offset, size, f"section {i}")
            if (kind, offset, size) not in aliased:
                regions.append((f"section {i}", offset, size))
            aliased.add((kind, offset, size))
    _no_overlap(regions)
    names_header = headers[shstrndx]
    if names_header[1] != SHT_STRTAB:
        raise ElfError(f"the section names index {shstrndx} is not a string table")
    for i, header in enumerate(headers):
        if header[1] == SHT_STRTAB:
            _check_strtab(data, header[4], header[5], i)
    names = data[names_header[4] : names_header[4] + names_header[5]]
    sections = tuple(
        Section(i, _cstr(names, h[0], f"the name of section {i}"), h[1], h[2], h[4], h[5], h[6], h[9])
        for i, h in enumerate(headers)
    )
    strings = tuple(
        text for s in sections if s.kind == SHT_STRTAB for text in data[s.offset : s.offset + s.size - 1].split(b"\0")
    )
    return ElfLayout(sections, _symbol_names(data, sections), strings)


def _inside(data: bytes, start: int, size: int, what: str) -> None:
    if start + size > len(data):
        raise ElfError(f"{what} ends at byte {start + size}, past the end of the file ({len(data)} bytes)")


def _segments_inside(data: bytes, phoff: int, phnum: int) -> None:
    for i in range(phnum):
        _kind, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * PHDR_BYTES
        )
        _inside(data, offset, filesz, f"segment {i}")


def _no_overlap(regions: list[tuple[str, int, int]]) -> None:
    ordered = sorted(regions, key=lambda r: (r[1], r[1] + r[2]))
    for (what, start, size), (other, o_start, _) in zip(ordered, ordered[1:], strict=False):
        if o_start < start + size:
            raise ElfError(f"{what} and {other} overlap")


def _check_strtab(data: bytes, offset: int, size: int, index: int) -> None:
    if size == 0 or data[offset] != 0 or data[offset + size - 1] != 0:
        raise ElfError(f"string table {index} does not begin and end with a NUL byte")


def _cstr(table: bytes, offset: int, what: str) -> bytes:
    if offset >= len(table):
        raise ElfError(f"{what} starts at {offset}, past its string table ({len(table)} bytes)")
    return table[offset : table.index(b"\0", offset)]  # the table ends with NUL (checked)


def _symbol_names(data: bytes, sections: tuple[Section, ...]) -> tuple[bytes, ...]:
    found: list[bytes] = []
    for s in sections:
        if s.kind not in (SHT_SYMTAB, SHT_DYNSYM):
            continue
        if s.entsize != SYM_BYTES or s.size % SYM_BYTES:
            raise ElfError(f"symbol table {s.index} is not made of whole {SYM_BYTES}-byte entries")
        strings = sections[s.link]
        if strings.kind != SHT_STRTAB or not strings.in_file:
            raise ElfError(f"symbol table {s.index} does not link to a string table")
        if len(found) + s.size // SYM_BYTES > MAX_SYMBOLS:
            raise ElfError(f"more than {MAX_SYMBOLS} symbols")
        table = data[strings.offset : strings.offset + strings.size]
        for pos in range(s.offset, s.offset + s.size, SYM_BYTES):
            st_name, _info, _other, shndx = struct.unpack_from("<IBBH", data, pos)
            if shndx == SHN_XINDEX:
                raise ElfError(f"a symbol of table {s.index} uses an extended section index")
            if len(sections) <= shndx < SHN_LORESERVE or (
                shndx >= SHN_LORESERVE and shndx not in (SHN_ABS, SHN_COMMON)
            ):
                raise ElfError(f"a symbol of table {s.index} names section {shndx} of {len(sections)}")
            if st_name:
                found.append(_cstr(table, st_name, f"a symbol name of table {s.index}"))
    return tuple(found)
