"""bench/sandbox_table.py on rows in the form bench/sandbox_commands.sh's wrapper writes (wall seconds, the bwrap
command line, the hashed files), with command lines as the evaluator builds them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JAIL = "--die-with-parent --unshare-pid --tmpfs /tmp --bind {d} {d} --remount-ro / --chdir /tmp -- /usr/bin/setpriv "
JAIL += "--reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "
NVCC = (
    "/usr/local/bin/nvcc -shared -Xcompiler -fPIC -O3 -gencode arch=compute_90a,code=sm_90a {d}/kernel.cu -o {d}/k.so"
)
TRITON = "/work/.venv/bin/python -m evaluator.candidate_process.triton_aot {d}/triton-job.json"
SASS = "/work/.venv/cu13/bin/cuobjdump --dump-sass {d}/kernel.so"


def _row(seconds: float, inner: str, folder: str, files: str = "") -> str:
    return f"{seconds}\t{(JAIL + inner).format(d=folder)}\t{files}\n"


def test_the_table_groups_by_inner_command_and_finds_a_compile_repeated_in_other_folders(tmp_path):
    runs = tmp_path / "runs.tsv"
    runs.write_text(
        _row(3.0, TRITON, "/tmp/ptxbench-eval-a")
        + _row(2.0, NVCC, "/tmp/ptxbench-eval-a", " kernel.cu:aaaaaaaaaaaa")
        + _row(0.5, NVCC, "/tmp/ptxbench-eval-b", " kernel.cu:aaaaaaaaaaaa")  # the same source and flags again
        + _row(4.0, NVCC, "/tmp/ptxbench-eval-c", " kernel.cu:bbbbbbbbbbbb")
        + _row(1.0, SASS, "/tmp/ptxbench-eval-a")
        + "not a row\n"
    )
    table = subprocess.run(
        [sys.executable, "bench/sandbox_table.py", str(runs)], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    lines = table.splitlines()
    assert lines[1].split() == ["6.5", "3", "61.9%", "nvcc", "-shared"]
    assert lines[2].split()[:2] == ["3.0", "1"] and lines[2].endswith(
        "python -m evaluator.candidate_process.triton_aot"
    )
    assert lines[3].split()[:2] == ["1.0", "1"] and lines[3].endswith("cuobjdump --dump-sass")
    assert "3 runs of 2 distinct (source, flags); 1 repeats, 0.5 s" in table
    assert "2 x kernel.cu:aaaaaaaaaaaa: 2.0, 0.5 s" in table
    assert "bbbbbbbbbbbb" not in table
