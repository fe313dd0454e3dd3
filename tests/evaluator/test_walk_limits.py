"""Every walk of a folder candidate code could write counts folders and files together and has a time limit
(evaluator/both_sides/hostile_files.py `TreeCaps`), and the Triton build folder is held to the cache's byte cap
(evaluator/build/triton_compile.py `BUILD_CAPS`).

200,000 empty folders in the Triton cache cost a walk that counts only files 22 s, and the build folder beside
the cache could otherwise hold 3 GiB. The trees here are smaller, with
the caps lowered to match. Mutation caught: the entry count or the deadline taken out of `_entries`, or the
measure of the build folder dropped from compile_triton (the corpus entries triton_escape_build_folder_bytes and
triton_escape_cache_empty_folders run the whole build)."""

from __future__ import annotations

import os
import time

import pytest

from evaluator.both_sides import hostile_files
from evaluator.both_sides.hostile_files import Refused, TreeCaps
from evaluator.build import triton_compile

WALKS = {
    "list_files": lambda root, caps: hostile_files.list_files(root, caps=caps),
    "copy_tree": lambda root, caps: hostile_files.copy_tree(root, root.parent / "copy", caps=caps),
    "measure_tree": lambda root, caps: hostile_files.measure_tree(root, caps=caps),
}


@pytest.fixture(scope="module")
def empty_folders(tmp_path_factory):
    """2,000 empty folders, beside one honest file: no file cap is ever reached."""
    root = tmp_path_factory.mktemp("cache")
    (root / "kernel.cubin").write_bytes(b"\0" * 16)
    for i in range(2000):
        os.mkdir(root / f"d{i}")
    return root


@pytest.mark.parametrize("walk", list(WALKS))
def test_empty_folders_count_against_the_entry_cap(empty_folders, walk):
    start = time.monotonic()
    with pytest.raises(Refused, match="more than 1000 entries"):
        WALKS[walk](empty_folders, TreeCaps(max_entries=1000))
    assert time.monotonic() - start < 2.0
    assert not (empty_folders.parent / "copy").exists()  # refused before anything was copied


@pytest.mark.parametrize("walk", list(WALKS))
def test_a_walk_that_takes_too_long_is_refused(empty_folders, walk):
    with pytest.raises(Refused, match="took longer than"):
        WALKS[walk](empty_folders, TreeCaps(max_entries=10_000, max_seconds=0.0))


def test_a_deep_chain_of_folders_is_refused_when_seen(tmp_path):
    path = tmp_path / "root"
    path.mkdir()
    deep = path
    for i in range(5):
        deep = deep / f"level{i}"
        deep.mkdir()
    with pytest.raises(Refused, match="deeper than 3 folders"):
        hostile_files.measure_tree(path, caps=TreeCaps(max_depth=3))


def test_within_the_caps_the_walks_see_the_whole_tree(empty_folders):
    caps = TreeCaps(max_entries=2001)
    assert hostile_files.list_files(empty_folders, caps=caps) == ["kernel.cubin"]
    assert hostile_files.measure_tree(empty_folders, caps=caps) == 16


def test_measure_counts_files_and_leaves_links_unfollowed(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * 4096)
    build = tmp_path / "build"
    (build / "sub").mkdir(parents=True)
    (build / "sub" / "a.bin").write_bytes(b"y" * 100)
    os.symlink(outside, build / "link.bin")
    os.symlink("/proc/self/environ", build / "environ.log")
    os.mkfifo(build / "fifo")
    assert hostile_files.measure_tree(build) == 100


def test_the_triton_build_folder_is_held_to_the_cache_s_byte_cap(tmp_path):
    """Sparse files beside the cache, each small enough, together above the cap (the issue wrote 3 GiB)."""
    assert triton_compile.BUILD_CAPS.max_bytes == triton_compile.CACHE_CAPS.max_bytes
    build = tmp_path / "build"
    (build / "triton-cache").mkdir(parents=True)
    for i in range(5):
        with open(build / f"filler{i}.bin", "wb") as fh:
            fh.truncate(60 << 20)
    with pytest.raises(Refused, match=f"more than {triton_compile.CACHE_CAPS.max_bytes} bytes in all"):
        hostile_files.measure_tree(build, caps=triton_compile.BUILD_CAPS)
    assert "268435456 bytes (256 MiB) in all" in triton_compile.build_caps_text()


def test_the_triton_cache_counts_its_folders():
    caps = triton_compile.CACHE_CAPS
    assert caps.max_entries <= 2 * caps.max_files and caps.max_seconds <= 10
