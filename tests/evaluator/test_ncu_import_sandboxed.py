"""Nsight Compute's import of the profile report runs in the profile's sandbox unless told not to
(evaluator/arch_check/ncu.py `read_report(jail=...)`, `Options.sandbox_report_import`): the report is a file the
profiled process could write, and the reader that parses it is a large program.

A stand-in named ncu (a shell script, the edge of the world here) reports what it can reach from where the evaluator
starts it, and which page it was asked for. Mutation caught: `read_report` ignoring its jail (the sibling file is
seen, the report writable, the host's network interfaces listed)."""

from __future__ import annotations

import pytest

from evaluator import pipeline
from evaluator.arch_check import ncu as ncu_mod
from evaluator.binaries.binary_tools import ToolFailed
from evaluator.isolation.jail import open_jail
from tests.support.sandbox import sandbox_problem
from tests.support.tool_probe import plant, reach

needs_bwrap = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no bubblewrap here: {sandbox_problem()}")


def _planted(tmp_path, fail: str = ""):
    """A checked copy of a report in the trusted side's folder with a secret beside it, and a probe named ncu that
    says which page it was asked for."""
    return plant(
        tmp_path,
        folder="profile-trusted",
        name="arch-profile.ncu-rep",
        content=b"NVIDIA Nsight Compute report",
        tool="ncu",
        before='echo "page: $2"\n',
        after=fail,
    )


@needs_bwrap
def test_both_pages_are_imported_in_the_sandbox_alone(tmp_path):
    report, probe = _planted(tmp_path)
    before = report.read_bytes()
    source, raw = ncu_mod.read_report(str(probe), report, arch="sm_90a", jail=open_jail(allow_unsandboxed=False))
    for page, printed in (("source", source), ("raw", raw)):
        seen = reach(printed)
        assert seen["page"] == page
        assert seen["sibling"] == "hidden"
        assert seen["write"] == "refused"
        assert seen["net"].split() == ["lo"]
    assert report.read_bytes() == before


@needs_bwrap
def test_an_import_that_fails_in_the_sandbox_is_a_reason_without_host_paths(tmp_path):
    report, probe = _planted(tmp_path, fail=f"echo 'cannot open {tmp_path}/profile-trusted/x' >&2; exit 3")
    with pytest.raises(ToolFailed) as failed:
        ncu_mod.read_report(str(probe), report, raw=False, jail=open_jail(allow_unsandboxed=False))
    message = str(failed.value)
    assert message.startswith("ncu could not read the profile report (exit status 3)")
    assert str(tmp_path) not in message


def test_without_a_jail_the_import_runs_here_as_before(tmp_path, monkeypatch):
    """The developer scripts' path (and EVALUATOR_NCU_IMPORT_SANDBOX=0): the tool runs unsandboxed."""
    monkeypatch.chdir(tmp_path)  # the probe writes to its last argument, a relative name on this path
    report, probe = _planted(tmp_path)
    source, raw = ncu_mod.read_report(str(probe), report, raw=False)
    assert raw == ""
    assert reach(source)["sibling"] == "seen"


@pytest.mark.parametrize(
    ("option", "variable", "sandboxed"),
    [
        (None, None, True),
        (None, "", True),
        (None, "0", False),
        (None, "1", True),
        (False, None, False),
        (True, "0", True),
    ],
)
def test_the_evaluator_imports_in_the_sandbox_unless_told_not_to(monkeypatch, option, variable, sandboxed):
    """Checked on an H200 (docs/threat-model.md): the import in the sandbox is the default; the option wins over
    the environment variable."""
    if variable is None:
        monkeypatch.delenv("EVALUATOR_NCU_IMPORT_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("EVALUATOR_NCU_IMPORT_SANDBOX", variable)
    assert pipeline.report_import_sandboxed(pipeline.Options(sandbox_report_import=option)) is sandboxed
