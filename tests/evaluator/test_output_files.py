"""The output files between the candidate process and the parent: written in place by the child, read by the
parent only as a regular file of exactly the expected size (the candidate process may write that folder)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from evaluator.candidate_process.child import OutputFiles
from evaluator.correctness import Checker
from evaluator.inputs import torch_dtype
from evaluator.taskdata import load_task
from evaluator.verdict import Status

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")


def _checker(exchange: Path) -> Checker:
    return Checker.for_task(TASK, torch.device("cpu"), exchange)


def test_a_reused_file_holds_only_the_latest_save(tmp_path):
    files = OutputFiles(torch, pinned=False)
    path = tmp_path / "call_C.bin"
    files.save(torch.arange(8, dtype=torch.float32), path)
    info = files.save(torch.full((2, 2), 7.0), path)
    assert info["shape"] == [2, 2] and info["dtype"] == "float32"
    assert torch.equal(torch.from_file(str(path), size=4, dtype=torch.float32), torch.full((4,), 7.0))
    assert path.stat().st_size == 16  # truncated to the new size, no bytes of the earlier save left


def test_the_parent_reads_exact_regular_files_only(tmp_path):
    checker = _checker(tmp_path)
    good = tmp_path / "call_C.bin"
    OutputFiles(torch, pinned=False).save(torch.arange(4, dtype=torch.float32), good)
    assert torch.equal(checker._read(good, 16).view(torch.float32), torch.arange(4, dtype=torch.float32))
    assert checker._read(good, 12) is None  # not the expected size
    secret = tmp_path / "secret"
    secret.write_bytes(b"x" * 16)
    link = tmp_path / "link_C.bin"
    link.symlink_to(secret)
    assert checker._read(link, 16) is None  # a link is never followed
    fifo = tmp_path / "fifo_C.bin"
    os.mkfifo(fifo)
    assert checker._read(fifo, 16) is None  # returns at once instead of waiting for a writer


def test_a_link_in_place_of_an_output_is_a_shape_failure_not_a_read(tmp_path):
    checker = _checker(tmp_path)
    workload = TASK.workloads[0]
    secret = tmp_path / "secret"
    link = tmp_path / "call_C.bin"
    link.symlink_to(secret)
    spec = TASK.definition.outputs[0]
    shape = TASK.definition.shape_of(spec, workload.axes)
    dtype = torch_dtype(spec.dtype)
    nbytes = torch.empty(shape, dtype=dtype).nbytes
    secret.write_bytes(b"\0" * nbytes)  # the right size: only the link is wrong
    assert checker._read(secret, nbytes) is not None
    refs = checker.reference_outputs(workload, 1)
    files = [{"path": str(link), "shape": list(shape), "dtype": str(dtype).removeprefix("torch.")}]
    comparison = checker.compare(workload, files, refs)
    assert comparison.status == Status.INCORRECT_SHAPE
