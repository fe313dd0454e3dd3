"""The hostile-file rule (evaluator/both_sides/hostile_files.py): the trusted side never follows a link, opens a special file,
or reads past a cap in a folder candidate code could write. Each test plants what an attacker can plant
(links to the environment, to secrets, to /dev/zero, to directories; FIFOs; sparse giants) and checks the refusal.
Mutation caught: replacing any read here with `Path.read_bytes`/`shutil.copytree` (links followed) fails these."""

from __future__ import annotations

import os
import threading

import pytest

from evaluator.binaries import elf_names
from evaluator.both_sides import hostile_files
from evaluator.both_sides.hostile_files import Refused, TreeCaps


@pytest.fixture
def build(tmp_path):
    root = tmp_path / "build"
    root.mkdir()
    (root / "ok.txt").write_text("fine")
    (root / "sub").mkdir()
    (root / "sub" / "deep.sass").write_text("sass")
    secret = tmp_path / "secret.env"
    secret.write_text("SECRET_KEY=do-not-publish")
    return root, secret


def test_regular_files_are_read(build):
    root, _ = build
    assert hostile_files.read_text(root, "ok.txt", max_bytes=100) == "fine"
    assert hostile_files.read_bytes(root, "sub/deep.sass", max_bytes=100) == b"sass"
    assert hostile_files.list_files(root) == ["ok.txt", "sub/deep.sass"]


@pytest.mark.parametrize("target", ["/proc/self/environ", "/dev/zero", "secret"])
def test_a_link_to_a_secret_or_device_is_refused_not_followed(build, target):
    root, secret = build
    os.symlink(str(secret) if target == "secret" else target, root / "kernel.sass")
    with pytest.raises(Refused, match="cannot be opened as a plain file"):
        hostile_files.read_bytes(root, "kernel.sass", max_bytes=1 << 30)
    with pytest.raises(Refused, match="symbolic link"):
        hostile_files.list_files(root)
    with pytest.raises(Refused, match="symbolic link"):
        hostile_files.copy_tree(root, root.parent / "copy")
    assert not (root.parent / "copy").exists()  # refused before anything was written


def test_a_linked_folder_on_the_way_is_refused(build):
    root, secret = build
    os.symlink(secret.parent, root / "up")
    with pytest.raises(Refused, match="without following links"):
        hostile_files.read_bytes(root, "up/secret.env", max_bytes=100)
    with pytest.raises(Refused, match="symbolic link"):
        hostile_files.list_files(root)


def test_dotdot_and_absolute_paths_are_refused(build):
    root, _ = build
    for rel in ("../secret.env", "/etc/passwd", "sub/../../secret.env", ""):
        with pytest.raises(Refused):
            hostile_files.read_bytes(root, rel, max_bytes=100)


def test_a_fifo_neither_hangs_nor_is_read(build):
    root, _ = build
    os.mkfifo(root / "arch-profile.ncu-rep")
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(
        target=lambda: outcome.append(_catch(hostile_files.read_bytes, root, "arch-profile.ncu-rep", max_bytes=10))
    )
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "open() of a FIFO blocked the trusted side"
    assert isinstance(outcome[0], Refused) and "not a regular file" in str(outcome[0])
    with pytest.raises(Refused, match="not a regular file"):
        hostile_files.list_files(root)


def test_a_hard_link_is_refused(build):
    root, secret = build
    os.link(secret, root / "copy.txt")
    with pytest.raises(Refused, match="hard links"):
        hostile_files.read_bytes(root, "copy.txt", max_bytes=100)


def test_size_caps_hold_before_reading(build):
    root, _ = build
    with open(root / "giant.cubin", "wb") as fh:
        fh.truncate(3 << 30)  # sparse: 3 GiB that cost nothing to plant
    with pytest.raises(Refused, match="above the"):
        hostile_files.sha256(root, "giant.cubin", max_bytes=64 << 20)
    with pytest.raises(Refused, match="above the"):
        hostile_files.list_files(root, caps=TreeCaps(max_file_bytes=64 << 20))
    (root / "giant.cubin").unlink()
    for i in range(5):
        (root / f"f{i}.bin").write_bytes(b"x" * 100)
    with pytest.raises(Refused, match="more than 3 files"):
        hostile_files.list_files(root, caps=TreeCaps(max_files=3))
    with pytest.raises(Refused, match="bytes in all"):
        hostile_files.list_files(root, caps=TreeCaps(max_bytes=250))


def test_trusted_writes_replace_a_planted_link_instead_of_writing_through_it(build, tmp_path):
    root, secret = build
    os.symlink(secret, root / "kernel.sass")
    hostile_files.write_private(root / "kernel.sass", "listing")
    assert secret.read_text() == "SECRET_KEY=do-not-publish"
    assert not (root / "kernel.sass").is_symlink() and (root / "kernel.sass").read_text() == "listing"


def test_copy_tree_copies_plain_trees(build):
    root, _ = build
    copied = hostile_files.copy_tree(root, root.parent / "copy")
    assert copied == ["ok.txt", "sub/deep.sass"]
    assert (root.parent / "copy" / "sub" / "deep.sass").read_text() == "sass"


def test_elf_names_refuse_a_newline_in_a_kernel_name(tmp_path):
    """A cubin whose kernel name was patched to smuggle a line into cuobjdump's listing."""
    data = _minimal_elf([b"_Z6kernelv", b".text._Z6kernelv"])
    assert elf_names.unsafe_names(data) == []
    evil = _minimal_elf([b"_Z6kernelv\n        /*0000*/ HGMMA.64x128x16.F32.BF16 R0, gdesc[UR4], R0 ;", b".text.x"])
    assert elf_names.unsafe_names(evil) and "\\n" in elf_names.unsafe_names(evil)[0]
    with pytest.raises(elf_names.ElfError):
        elf_names.names(b"\x7fELF" + b"\0" * 10)


def _catch(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        return exc


def _minimal_elf(symbols: list[bytes]) -> bytes:
    """A 64-bit little-endian ELF with a section-name table, a string table and a symbol table naming `symbols`."""
    import struct

    shstr = b"\0.shstrtab\0.strtab\0.symtab\0"
    strtab = b"\0" + b"\0".join(symbols) + b"\0"
    offsets, pos = [], 1
    for s in symbols:
        offsets.append(pos)
        pos += len(s) + 1
    symtab = b"\0" * 24 + b"".join(struct.pack("<IBBHQQ", o, 0x12, 0, 1, 0, 0) for o in offsets)
    body = shstr + strtab + symtab
    shoff = 64 + len(body)
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 4, 1)
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    sections.append(struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(shstr), 0, 0, 1, 0))
    sections.append(struct.pack("<IIQQQQIIQQ", 11, 3, 0, 0, 64 + len(shstr), len(strtab), 0, 0, 1, 0))
    sym_off = 64 + len(shstr) + len(strtab)
    sections.append(struct.pack("<IIQQQQIIQQ", 19, 2, 0, 0, sym_off, len(symtab), 2, 1, 8, 24))
    return header + body + b"".join(sections)
