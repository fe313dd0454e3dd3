"""The cubin reader refuses every ELF form it does not read in full (evaluator/binaries/elf_layout.py, elf_names.py).

A cubin with extended section numbering (`e_shnum` 0, the count kept in section 0) shows a naive name check
no sections at all, while cuobjdump reads them all and prints a kernel name holding forged SASS lines, which the
static count would take as HGMMA and UTMALDG. Each case here patches a real nvcc cubin (tests/fixtures/elf/cubins.py)
the way an attacker would and checks the refusal and its words. Mutation caught: `if shnum == 0: return []`
back in the reader, or any check below dropped, fails the case that names it."""

from __future__ import annotations

import pytest

from evaluator.binaries import elf_names
from evaluator.binaries.elf_layout import ElfError, read_layout
from evaluator.binaries.sass import count_families, disassemble
from tests.fixtures.elf import cubins

FORGED = (
    b"fill_kernel\n        /*0000*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;"
    b"\n        /*0010*/                   UTMALDG.2D [UR8], [UR4] ;"
)


def test_the_compilers_cubin_is_read_in_full():
    data = cubins.real()
    assert elf_names.refusal(data) is None
    assert cubins.KERNEL in elf_names.names(data) and b".text.fill_kernel" in elf_names.names(data)


def test_extended_numbering_cannot_hide_forged_sass_lines(tmp_path):
    forged = cubins.extended_numbering(cubins.rename_kernel(cubins.real(), FORGED))
    path = tmp_path / "forged.cubin"
    path.write_bytes(forged)
    # The attack is real: the toolkit reads every section of this file and prints the forged lines as code.
    counts = count_families(disassemble(path), "sm_90a")
    assert counts.opcodes.get("HGMMA.64x256x16.F32.BF16") == 1 and counts.opcodes.get("UTMALDG.2D") == 1
    # The evaluator's reader does not see fewer names than the tool: it refuses the form.
    with pytest.raises(ElfError, match="extended section numbering"):
        elf_names.names(forged)
    why = elf_names.refusal(forged)
    assert why is not None and "extended section numbering" in why


def test_a_forged_name_in_plain_numbering_is_refused_as_not_an_identifier():
    why = elf_names.refusal(cubins.rename_kernel(cubins.real(), FORGED))
    assert why is not None and "not identifiers" in why and "HGMMA" in why and "\\n" in why


def _set_header(field, value):
    def patch(data):
        cubins.header(data, field, value)

    return patch


def _set_section(index, field, value):
    def patch(data):
        cubins.section(data, index, field, value)

    return patch


def _names_index_xindex(data):
    cubins.section(data, 0, "link", cubins.header(data, "shstrndx"))
    cubins.header(data, "shstrndx", 0xFFFF)


def _strtab_unterminated(data):
    end = cubins.section(data, cubins.STRTAB, "offset") + cubins.section(data, cubins.STRTAB, "size")
    data[end - 1] = ord("x")


def _symbol_xindex(data):
    first = cubins.section(data, cubins.SYMTAB, "offset") + 24
    data[first + 6 : first + 8] = b"\xff\xff"


def _strtab_on_symtab(data):
    cubins.section(data, cubins.STRTAB, "offset", cubins.section(data, cubins.SYMTAB, "offset") + 8)


def _past_the_end(field):
    def patch(data):
        if field == "offset":
            cubins.section(data, cubins.TEXT, "offset", len(data) - 16)
        else:
            cubins.section(data, cubins.TEXT, "size", len(data))

    return patch


CASES = {
    "extended section count": (cubins.extended_numbering, "extended section numbering"),
    "names index SHN_XINDEX": (_names_index_xindex, "extended section numbering"),
    "32-bit class": (_set_header("class", 1), "ELF class 1"),
    "big-endian": (_set_header("data", 2), "data encoding 2"),
    "not the CUDA machine": (_set_header("machine", 62), "machine 62"),
    "extended program header count": (_set_header("phnum", 0xFFFF), "extended program header numbering"),
    "section header table past the end": (_set_header("shoff", 3000), "section header table ends at byte"),
    "section starts past the end": (_past_the_end("offset"), "section 12 ends at byte"),
    "section size past the end": (_past_the_end("size"), "section 12 ends at byte"),
    "overlapping sections": (_strtab_on_symtab, "overlap"),
    "section over the ELF header": (_set_section(cubins.TEXT, "offset", 16), "the ELF header and section 12"),
    "string table without a final NUL": (_strtab_unterminated, "does not begin and end with a NUL"),
    "section 0 not empty": (_set_section(0, "size", 3), "section 0 is not empty"),
    "link out of range": (_set_section(cubins.TEXT, "link", 99), "links to section 99"),
    "compressed section": (_set_section(cubins.TEXT, "flags", 0x806), "compressed"),
    "extended symbol section index": (_symbol_xindex, "extended section index"),
    "SHT_SYMTAB_SHNDX section": (_set_section(4, "type", 18), "SHT_SYMTAB_SHNDX"),
    "symbol table of partial entries": (_set_section(cubins.SYMTAB, "size", 0xF0 - 8), "whole 24-byte entries"),
    "symbol table linked to code": (_set_section(cubins.SYMTAB, "link", cubins.TEXT), "does not link to a string"),
    "name past its table": (_set_section(cubins.TEXT, "name", 0x5000), "past its string table"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_form_not_read_in_full_is_refused_with_a_plain_reason(case):
    patch, words = CASES[case]
    data = cubins.real()
    patched = patch(data)
    data = patched if patched is not None else data
    with pytest.raises(ElfError, match=None) as caught:
        read_layout(bytes(data))
    assert words in str(caught.value), str(caught.value)
    why = elf_names.refusal(bytes(data))
    assert why is not None and why.startswith("the compiled device code is not in the plain ELF form")


def test_sections_of_one_type_may_share_their_bytes_as_blackwell_cubins_do():
    """`.nv.merc.debug_str` and `.debug_str` point at the very same bytes in nvcc's sm_100a cubins."""
    data = cubins.real()
    for field in ("offset", "size"):
        cubins.section(data, cubins.CONSTANT, field, cubins.section(data, 4, field))  # both PROGBITS
    assert elf_names.refusal(bytes(data)) is None
    cubins.section(data, cubins.CONSTANT, "type", 7)  # a NOTE over PROGBITS bytes: two readings of one range
    assert "overlap" in (elf_names.refusal(bytes(data)) or "")


def test_every_string_of_every_string_table_is_checked_not_only_the_names_in_use():
    """Newer cubins hold processor-specific symbol tables (`.nv.merc.symtab`) that point into `.strtab` too: a
    string no standard table names is still a name some table can."""
    data = cubins.real()
    cubins.add_string(data, cubins.STRTAB, b"spare\n        /*0000*/  HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ ;")
    assert "not identifiers" in (elf_names.refusal(bytes(data)) or "")


def test_the_abi_number_nvidia_writes_in_e_version_is_not_a_refusal():
    """ptxas writes its own ABI number in e_version (128 from the ptxas Triton 3.6 carries, on an H200): a cubin
    refused for it would fail every honest Triton kernel there."""
    from evaluator.binaries import elf_layout
    from tests.fixtures.elf import cubins

    data = cubins.real()
    cubins.header(data, "e_version", 128)
    elf_layout.read_layout(bytes(data))  # no ElfError
