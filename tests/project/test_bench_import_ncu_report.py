"""bench/import_ncu_report.sh asks Nsight Compute for the pages the arch stage reads, with the registry's counters;
here against a stand-in `ncu` that prints the arguments it was given (the real one runs on a GPU host)."""

from __future__ import annotations

import gzip
import os
import subprocess

from evaluator.arch_check.ncu import _metrics
from tests.support.factories import REPO

FAKE_NCU = """#!/bin/sh
if [ "$1" = --version ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0"; exit 0; fi
printf '%s\\n' "$@"
"""


def test_each_page_is_imported_with_the_architectures_counters_from_relative_paths(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(FAKE_NCU)
    (bin_dir / "ncu").chmod(0o755)
    (tmp_path / "capture.ncu-rep").write_bytes(b"NVR\0")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(
        ["bash", str(REPO / "bench" / "import_ncu_report.sh"), "capture.ncu-rep", "sm_100a", "out"],
        cwd=tmp_path,
        env=env,
        check=True,
        timeout=60,
    )
    out = tmp_path / "out"

    def args(page: str) -> list[str]:
        return gzip.decompress((out / f"capture-{page}.csv.gz").read_bytes()).decode().splitlines()

    report = str(tmp_path / "capture.ncu-rep")
    assert args("session") == ["--import", report, "--page", "session", "--csv"]
    assert args("raw-all")[:4] == ["--import", report, "--page", "raw"]
    rule = args("raw-rule")
    assert rule[rule.index("--metrics") + 1] == _metrics("sm_100a")
    assert args("source")[2:6] == ["--page", "source", "--print-source", "sass"]
    assert "Version 2025.3.1.0" in (out / "capture-import.log").read_text()
