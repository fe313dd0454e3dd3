"""The two size caps of evaluator/both_sides/hostile_files.py, told apart: a file above the cap is refused from its size,
before a byte of it is read; a file that yields more than its size said is refused once the read passes the cap,
and nothing beyond the cap is returned."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from evaluator.both_sides import hostile_files
from evaluator.both_sides.hostile_files import Refused

IN_ACCESS = 0x00000001  # inotify(7): a read of the watched file
IN_NONBLOCK = 0o4000


class _Reads:
    """Counts reads of one file through inotify: the kernel reports each read, whoever made it."""

    def __init__(self, path: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(IN_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        assert self._libc.inotify_add_watch(self.fd, os.fsencode(path), IN_ACCESS) >= 0

    def seen(self) -> bool:
        try:
            return bool(os.read(self.fd, 4096))
        except BlockingIOError:
            return False

    def close(self) -> None:
        os.close(self.fd)


@pytest.mark.parametrize("reader", ["read_bytes", "sha256", "copy_file"])
def test_a_file_above_the_cap_is_refused_before_any_byte_is_read(tmp_path, reader):
    """Mutation caught: the size check before the read removed from `open_regular` (the read cap alone then
    refuses, after reading cap + 1 bytes, with its "grew" message)."""
    root = tmp_path / "exchange"
    root.mkdir()
    with open(root / "out.bin", "wb") as fh:
        fh.truncate(8 << 20)  # sparse: free to plant
    reads = _Reads(root / "out.bin")
    try:
        with pytest.raises(Refused) as refused:
            if reader == "copy_file":
                hostile_files.copy_file(root, "out.bin", tmp_path / "copy.bin", max_bytes=1 << 20)
            else:
                getattr(hostile_files, reader)(root, "out.bin", max_bytes=1 << 20)
        assert str(refused.value) == f"'out.bin' is {8 << 20} bytes, above the {1 << 20}-byte cap"
        assert not reads.seen(), "the file was read before it was refused"
    finally:
        reads.close()
    assert not (tmp_path / "copy.bin").exists()


def test_a_file_that_yields_more_than_its_size_is_cut_at_the_cap(tmp_path):
    """A file that grows between the size check and the end of the read: /proc reports its files as 0 bytes and
    then yields their text, which is that case without a race (a folder of plain files, opened as a candidate's
    folder is). Mutation caught: the cap applied during the read (`_read_fd`) removed (every byte is returned)."""
    proc = Path(f"/proc/{os.getpid()}")
    assert (proc / "status").stat().st_size == 0 and len((proc / "status").read_bytes()) > 64
    with pytest.raises(Refused, match=r"^'status' grew above the 64-byte cap while being read$"):
        hostile_files.read_bytes(proc, "status", max_bytes=64)
    with pytest.raises(Refused, match="grew above the 64-byte cap"):
        hostile_files.sha256(proc, "status", max_bytes=64)
    assert hostile_files.read_bytes(proc, "status", max_bytes=1 << 20).startswith(b"Name:")  # under the cap: read
