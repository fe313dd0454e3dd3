"""The verdict's sandbox record says what this evaluation's processes actually got, not what was intended.

The evaluation test makes cgroup creation fail for real (the cgroup root pointed at an empty folder, as on a host
without a writable hierarchy) and checks that the verdict no longer claims pids.max or a memory limit.
"""

from __future__ import annotations

from pathlib import Path

from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.isolation import cgroups
from evaluator.isolation.jail import Jail, Limits, SandboxLedger
from evaluator.pipeline import Options, evaluate

HERE = Path(__file__).resolve().parent
TINY = load_task(HERE / "tasks" / "tiny_gemm")
SOURCE = (HERE.parent / "kernels" / "cpu_gemm_variants.cu").read_text()


def test_failed_cgroup_creation_is_recorded_as_not_enforced(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path)  # no cgroup.controllers, no v1 hierarchies
    opts = Options(device_type="cpu", timeout_s=30, seed=b"fixed-test-seed!")
    v = evaluate(SOURCE, TINY, "sm_90a", stages=["correctness"], options=opts)
    assert v.status == OverallStatus.PASSED
    limits = v.sandbox.limits
    memory = limits["memory_bytes"]
    assert memory.startswith("not enforced: no cgroup for ") and "no writable v1 'pids' hierarchy" in memory
    n = int(memory.split("no cgroup for ")[1].split()[0])
    assert n >= 2 and f"{n} of {n} processes" in memory  # the compiler's processes and the candidate's
    assert "pids.max" not in limits["processes"]
    if v.sandbox.mode == "bubblewrap":  # the sandbox user is never root, so RLIMIT_NPROC counts
        assert limits["processes"].startswith(f"{Limits().processes} (RLIMIT_NPROC, per user; no cgroup for")
    else:  # unsandboxed mode does not set it
        assert limits["processes"].startswith("not enforced: no cgroup for")
    assert v.sandbox.limit_events == {}  # no cgroup, so no cgroup events to report


def test_record_from_a_ledger_names_how_each_limit_was_enforced():
    ledger = SandboxLedger()
    jail = Jail("bubblewrap", "", Limits(), bwrap="/usr/bin/bwrap", ledger=ledger)
    assert jail.record().limits["processes"] == "not enforced: no sandboxed process ran"

    ledger.started(_cgroup(2), "")
    ledger.add_events({"pids_max_hit": 2, "oom_kill": 0})
    ledger.add_events({"pids_max_hit": 1, "oom_kill": 1})
    info = jail.record()
    assert info.limits["processes"] == "1024 (cgroup pids.max)"
    assert info.limits["memory_bytes"] == f"{Limits().memory_bytes} (cgroup memory.max)"
    assert info.limits["open_files"] == "4096 (RLIMIT_NOFILE)" and info.limits["core_dumps"] == "off"
    assert info.limits["tmp_bytes"] == f"{Limits().tmp_bytes} (private tmpfs size)"
    assert info.limit_events == {"pids_max_hit": 3, "oom_kill": 1}

    ledger.started(None, "cgroup v1: Permission denied")
    ledger.overrides["profile"] = "outside bubblewrap: counters need CAP_SYS_ADMIN"
    info = jail.record()
    assert info.limits["memory_bytes"] == "not enforced: no cgroup for 1 of 2 processes (cgroup v1: Permission denied)"
    assert info.limits["profile"] == "outside bubblewrap: counters need CAP_SYS_ADMIN"

    unsandboxed = Jail("unsandboxed", "bubblewrap is not installed", Limits(), ledger=ledger).record()
    assert unsandboxed.network is True and unsandboxed.limits["open_files"] == "not enforced: unsandboxed"
    assert unsandboxed.limits["processes"].startswith("not enforced: no cgroup for 1 of 2 processes")


def _cgroup(version: int) -> cgroups.Cgroup:
    return cgroups.Cgroup(version, {})
