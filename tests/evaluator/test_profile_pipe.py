"""The profiled run end to end with a stand-in for Nsight Compute (this machine has no GPU and no ncu): the raw page
(kernel time, launches, counters) is taken from what the profiler printed on its own output, never from the
report file the profiled process could rewrite, and a report whose launches differ from that page is refused."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest

from evaluator.arch_check import arch_stage
from evaluator.arch_check import ncu as ncu_mod
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import SassCounts
from evaluator.measure.candidate import REPO_ROOT, CandidateSetup

TINY = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
# The reference GEMM's source and raw pages of one H200 run (tests/fixtures/ncu/README.md): 0.823648 ms.
SOURCE = gzip.decompress((FIXTURES / "gpu-hopper_gemm-M8192-source.csv.gz").read_bytes()).decode()
RAW = (FIXTURES / "gpu-hopper_gemm-M8192-raw.csv").read_text()
KERNEL = "_Z21gemm_tma_wgmma_kernel14CUtensorMap_stS_P13__nv_bfloat16iii"

# Profiles as Nsight Compute does with `--export R --page raw --csv`: it writes R, the profiled process's result
# event, its ==PROF== lines and then the page in printed.csv (when there is one); `--import R --page P` prints
# report-P.csv. Each call's arguments are logged.
FAKE_NCU = """#!{python}
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from evaluator.both_sides import protocol
args, data = sys.argv[1:], Path({data!r})
with open(data / "calls.log", "a") as log:
    log.write(" ".join(args) + "\\n")
if "--import" in args:
    sys.stdout.write((data / ("report-" + args[args.index("--page") + 1] + ".csv")).read_text())
    sys.exit(0)
report = Path(args[args.index("--export") + 1])
report.write_text("the report")
(report.parent / "arch-profile-result.jsonl").write_bytes(protocol.encode(protocol.done_event()))
print("==PROF== Connected to process 4242 (/usr/bin/python3.12)")
print("==PROF== Disconnected from process 4242")
print("==PROF== Report: " + str(report))
if (data / "printed.csv").exists():
    sys.stdout.write((data / "printed.csv").read_text())
"""


def _profile(tmp_path: Path, monkeypatch, *, printed: str | None, source: str = SOURCE) -> tuple:
    data = tmp_path / "ncu-data"
    data.mkdir()
    (data / "report-source.csv").write_text(source)
    (data / "report-raw.csv").write_text(RAW)  # the report's own raw page: 0.823648 ms
    if printed is not None:
        (data / "printed.csv").write_text(printed)
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, repo=str(REPO_ROOT), data=str(data)))
    fake.chmod(0o755)
    monkeypatch.setattr(ncu_mod, "find_ncu", lambda: str(fake))
    workdir = tmp_path / "eval"
    workdir.mkdir()
    setup = CandidateSetup(TINY, list(TINY.workloads), workdir / "kernel.so", workdir, workdir / "x", None)
    sass = SassCounts("sm_90a", {"gmma": 4, "tma": 14}, {}, ["gmma", "tma"], 18, [KERNEL], 10)
    outcome = arch_stage.profile_workload(
        setup,
        TINY.workloads[0],
        arch="sm_90a",
        sass=sass,
        profile_seed=7,
        timeout_s=60,
        allow_unsandboxed_profile=False,
    )
    return outcome, (data / "calls.log").read_text().splitlines()


def test_the_kernel_time_and_launches_are_the_printed_pages(tmp_path, monkeypatch):
    """The report's raw page says 0.823648 ms; the page the profiler printed says 0.5 ms, and that is the figure
    the verdict holds against the ranked latency; the report's raw page is not even imported. Mutation caught:
    arch_stage reading the raw page from the report whatever was printed (0.823648 ms)."""
    printed = RAW.replace('"823.648000"', '"500.000000"')
    assert printed != RAW
    outcome, calls = _profile(tmp_path, monkeypatch, printed=printed)
    assert outcome.failure is None, outcome.failure
    assert outcome.check.ncu_gpu_time_ms == pytest.approx(0.5)
    assert [launch.grid for launch in outcome.launches] == [(132, 1, 1)]
    assert not [n for n in outcome.notes if "printed no raw page" in n]
    # No sandbox here: the profiled process keeps this evaluator's uid and could write to the profiler's output.
    assert [n for n in outcome.notes if "could reopen the profiler's output" in n]
    assert "--page raw --csv" in calls[0]  # the profile asked for the page on its output
    assert [c for c in calls if "--import" in c and "--page raw" in c] == []


def test_a_report_with_a_kernel_the_profiler_did_not_print_is_refused(tmp_path, monkeypatch):
    """The report names a second kernel launch the profiled run never made (a payload rewriting the file after
    the profiler): refused, and on the candidate's side (a `profile_failed` hold). Mutation caught: the
    `report_not_of_run` check dropped from arch_stage (the forged report is read and decided on)."""
    block = SOURCE[SOURCE.index('"Kernel Name"') :].replace("gemm_tma_wgmma_kernel(", "forged_kernel(", 1)
    outcome, _ = _profile(tmp_path, monkeypatch, printed=RAW, source=SOURCE + "\n" + block)
    assert outcome.failure is not None and "in the report only: forged_kernel(" in outcome.failure
    assert outcome.failure_by_candidate is True


def test_a_block_the_page_repeats_is_read_once(tmp_path, monkeypatch):
    """Nsight Compute repeats the blocks of kernels of one library (tests/evaluator/test_ncu_repeated_blocks.py):
    the same block twice for the one printed launch is neither refused nor counted twice. Mutation caught:
    arch_stage without `one_block_per_launch` (refused as not of its run, the honest two-kernel control's hold)."""
    (tmp_path / "once").mkdir()
    (tmp_path / "twice").mkdir()
    once, _ = _profile(tmp_path / "once", monkeypatch, printed=RAW)
    block = SOURCE[SOURCE.index('"Kernel Name"') :]
    twice, _ = _profile(tmp_path / "twice", monkeypatch, printed=RAW, source=SOURCE + "\n" + block)
    assert once.failure is None and twice.failure is None, twice.failure
    assert twice.check.families == once.check.families and once.check.families["gmma"].executed > 0


def test_without_a_printed_page_the_report_is_read_and_the_verdict_says_so(tmp_path, monkeypatch):
    outcome, calls = _profile(tmp_path, monkeypatch, printed=None)
    assert outcome.failure is None, outcome.failure
    assert outcome.check.ncu_gpu_time_ms == pytest.approx(0.823648)
    assert [n for n in outcome.notes if "printed no raw page" in n]
    assert [c for c in calls if "--import" in c and "--page raw" in c]


def test_the_profilers_output_is_private_only_to_a_sandbox_of_another_user():
    """The pipe belongs to the parent's user (mode 0600): a root evaluator's sandbox user cannot reopen it through
    /proc, a sandbox that keeps the evaluator's own uid (an unprivileged worker) or no sandbox at all can."""
    from evaluator.isolation.jail import Jail, SandboxUser

    assert arch_stage.profiler_output_private(Jail("bubblewrap", "test", user=SandboxUser(65534, 65534)))
    assert arch_stage.profiler_output_private(Jail("unsandboxed", "test", user=SandboxUser(65534, 65534)))
    assert not arch_stage.profiler_output_private(Jail("bubblewrap", "test", user=None))
    assert not arch_stage.profiler_output_private(None)
