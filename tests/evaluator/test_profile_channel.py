"""What the parent reads of a profiled run is Nsight Compute's own: the profiled process leaves the profiler's
stdout and stderr before candidate code runs, and a report counts only when the profiler said it wrote it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evaluator.arch_check.arch_stage import _failure_reason, report_announced
from evaluator.both_sides import protocol
from evaluator.isolation.sandbox import GroupResult
from evaluator.measure.candidate import CHILD_MODULE, REPO_ROOT

NCU_OUTPUT = """==WARNING== Note: Running with unmodified GPU clocks.
==PROF== Connected to process 971 (/usr/bin/python3.12)
==PROF== Profiling "gemm_tma_wgmma_kernel" - 0: 0%....50%....100% - 5 passes
==PROF== Disconnected from process 971
==PROF== Report: {report}
"""


def test_the_profiled_process_writes_nothing_on_the_profilers_channel(tmp_path):
    """The profiled process fails at once (its result channel is a closed descriptor) and Python prints the
    traceback: it lands in the process's own output file, and the pipe it inherited (the profiler's stdout and
    stderr, which the parent reads) stays empty.
    Mutation caught: `child.main` not calling `leave_profiler_channel` (the traceback reaches the pipe, and with
    it anything a candidate prints, such as a forged `ERR_NVGPUCTRPERM` or `==PROF== Report:` line)."""
    output, result = tmp_path / "profiled-output.log", tmp_path / "result.jsonl"
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "mode": "profile",
                "task_dir": str(tmp_path / "no-such-task"),
                "workload": "w",
                "exchange_dir": str(tmp_path),
                "device_type": "cpu",
                "result_path": str(result),
                "output_path": str(output),
                "profile_seed": 1,
            }
        )
    )
    proc = subprocess.run(  # noqa: S603 - this interpreter, the evaluator's own module
        [sys.executable, "-m", CHILD_MODULE, str(job), "--fd-out", "987"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert (proc.stdout, proc.stderr) == ("", "")
    assert "Traceback" in output.read_text() and "Bad file descriptor" in output.read_text()


def _done(tmp_path: Path) -> Path:
    result = tmp_path / "result.jsonl"
    result.write_bytes(protocol.encode(protocol.done_event()))
    return result


def test_a_report_the_profiler_did_not_announce_is_refused(tmp_path):
    """A file at the report's path that Nsight Compute never said it wrote (the profiler killed early, the file
    planted by a process that outlived the profiled call) is no report. Mutation caught: `_failure_reason` taking
    any file at the report's path."""
    report = tmp_path / "arch-profile.ncu-rep"
    report.write_bytes(b"planted")
    silent = NCU_OUTPUT.replace("==PROF== Report: {report}\n", "")
    reason = _failure_reason(GroupResult(0, False, silent, 1.0), _done(tmp_path), report)
    assert reason is not None and "no report of its own" in reason
    announced = NCU_OUTPUT.format(report=report)
    assert _failure_reason(GroupResult(0, False, announced, 1.0), _done(tmp_path), report) is None


def test_the_announcement_names_the_report_file():
    report = Path("/w/profile/arch-profile.ncu-rep")
    assert report_announced(NCU_OUTPUT.format(report=report), report)
    assert report_announced(NCU_OUTPUT.format(report="profile/arch-profile.ncu-rep"), report)
    assert not report_announced(NCU_OUTPUT.format(report="/w/profile/other.ncu-rep"), report)
    assert not report_announced("candidate says ==PROF== Report: /w/profile/arch-profile.ncu-rep\n", report)
