"""Nsight Compute's import of the profile report runs in the profile's sandbox when asked
(evaluator/arch_check/ncu.py `read_report(jail=...)`, `Options.sandbox_report_import`): the report is a file the
profiled process could write, and the reader that parses it is a large program.

A stand-in named ncu (a shell script, the edge of the world here) reports what it can reach from where the evaluator
starts it, and which page it was asked for. Mutation caught: `read_report` ignoring its jail (the sibling file is
seen, the report writable, the host's network interfaces listed)."""

from __future__ import annotations

import stat

import pytest

from evaluator.arch_check import ncu as ncu_mod
from evaluator.binaries.binary_tools import ToolFailed
from evaluator.isolation.jail import open_jail
from tests.support.sandbox import sandbox_problem

needs_bwrap = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no bubblewrap here: {sandbox_problem()}")

PROBE = """#!/bin/sh
for last; do :; done
echo "page: $2"
if cat {secret} >/dev/null 2>&1; then echo "sibling: seen"; else echo "sibling: hidden"; fi
if (echo tampered >> "$last") 2>/dev/null; then echo "write: done"; else echo "write: refused"; fi
echo "net: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' ')"
{fail}
"""


def _planted(tmp_path, fail: str = ""):
    """A checked copy of a report in the trusted side's folder with a secret beside it, and a probe named ncu."""
    folder = tmp_path / "profile-trusted"
    folder.mkdir()
    report = folder / "arch-profile.ncu-rep"
    report.write_bytes(b"NVIDIA Nsight Compute report")
    secret = folder / "secret.env"
    secret.write_text("SECRET_KEY=not-for-tools")
    tools = tmp_path / "nsight-compute"
    tools.mkdir()
    probe = tools / "ncu"
    probe.write_text(PROBE.format(secret=secret, fail=fail))
    probe.chmod(probe.stat().st_mode | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return report, probe


def _seen(printed: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in printed.splitlines() if ": " in line)


@needs_bwrap
def test_both_pages_are_imported_in_the_sandbox_alone(tmp_path):
    report, probe = _planted(tmp_path)
    before = report.read_bytes()
    source, raw = ncu_mod.read_report(str(probe), report, arch="sm_90a", jail=open_jail(allow_unsandboxed=False))
    for page, printed in (("source", source), ("raw", raw)):
        seen = _seen(printed)
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


def test_without_a_jail_the_import_runs_here_as_before(tmp_path):
    """The developer scripts' path (and the default until checked on a GPU host): the tool runs unsandboxed."""
    report, probe = _planted(tmp_path)
    source, raw = ncu_mod.read_report(str(probe), report, raw=False)
    assert raw == ""
    assert _seen(source)["sibling"] == "seen"
