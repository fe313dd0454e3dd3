"""Candidate code never holds real root (evaluator/isolation/jail.py): whoever starts the evaluator, a sandboxed process has
no root id and no capability, and cannot open a host setting under /proc/sys for writing.

The tests start processes the way the stages do (`open_jail` + `run_group`); those that need root to mean anything
(the uid drop) skip, with the reason, where the suite does not run as root. CI runs as root.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from evaluator.isolation import jail as jail_mod
from evaluator.isolation.jail import Jail, Limits, SandboxUnavailable, open_jail
from evaluator.isolation.sandbox import run_group

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop is only exercised when the suite runs as root")

# Runs inside the sandbox: ids, capability sets, and every /proc/sys file that opens for writing.
PROBE = textwrap.dedent(
    """
    import json, os
    writable = []
    for here, dirs, files in os.walk("/proc/sys"):
        for name in files:
            path = os.path.join(here, name)
            try:
                os.close(os.open(path, os.O_WRONLY))
            except OSError:
                continue
            writable.append(path)
    caps = {l.split(":")[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}
    extra = {}
    for path in ("/proc/sysrq-trigger",):
        try:
            os.close(os.open(path, os.O_WRONLY))
            extra[path] = "opened"
        except OSError as exc:
            extra[path] = exc.strerror
    print(json.dumps({"uids": os.getresuid(), "gids": os.getresgid(), "groups": os.getgroups(),
                      "caps": caps, "writable": writable, "extra": extra}))
    """
)


def _jail() -> Jail:
    try:
        return open_jail(allow_unsandboxed=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap unavailable here: {exc}")


def _probe(jail: Jail, tmp_path: Path, *, toolchain: bool = False) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    # The compile sandbox shows /usr only; unsandboxed, the host's own folders (a Python under /root, say) are not
    # the sandbox user's to read.
    python = "/usr/bin/python3" if toolchain or jail.mode != "bubblewrap" else sys.executable
    run = run_group(
        [python, str(script)],
        timeout_s=120,
        jail=jail,
        env={"PATH": "/usr/bin:/bin"},
        readable=[tmp_path],
        writable=[tmp_path / "out"],
        toolchain=toolchain,
    )
    assert run.returncode == 0, run.output
    return json.loads(run.output.strip().splitlines()[-1])


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


@pytest.mark.parametrize("toolchain", [False, True], ids=["candidate", "compiler"])
def test_no_file_under_proc_sys_opens_for_writing(tmp_path, out, toolchain):
    seen = _probe(_jail(), tmp_path, toolchain=toolchain)
    assert seen["writable"] == []
    assert seen["extra"]["/proc/sysrq-trigger"] != "opened"


@ROOT_ONLY
@pytest.mark.parametrize("toolchain", [False, True], ids=["candidate", "compiler"])
def test_a_root_evaluator_runs_candidates_as_the_unprivileged_sandbox_user(tmp_path, out, toolchain):
    seen = _probe(_jail(), tmp_path, toolchain=toolchain)
    assert 0 not in seen["uids"] and 0 not in seen["gids"], seen
    assert seen["groups"] in ([], [seen["gids"][0]]), seen
    assert all(int(v, 16) == 0 for v in seen["caps"].values()), seen["caps"]


@ROOT_ONLY
def test_the_sandbox_user_can_write_what_it_is_lent_and_nothing_the_evaluator_keeps(tmp_path, out):
    jail = _jail()
    kept = tmp_path / "kept.txt"
    kept.write_text("the trusted side's")
    script = tmp_path / "write.py"
    script.write_text(
        textwrap.dedent(
            f"""
            open({str(out / "made.txt")!r}, "w").write("ok")
            try:
                open({str(kept)!r}, "a").write("changed")
                print("KEPT-WRITTEN")
            except OSError as exc:
                print("refused", exc.errno)
            """
        )
    )
    run = run_group([sys.executable, str(script)], timeout_s=60, jail=jail, readable=[tmp_path], writable=[out])
    assert run.returncode == 0, run.output
    assert (out / "made.txt").read_text() == "ok"
    assert "KEPT-WRITTEN" not in run.output and kept.read_text() == "the trusted side's"
    assert (out / "made.txt").stat().st_uid == jail.user.uid


@ROOT_ONLY
def test_unsandboxed_mode_drops_root_too(host_tmp):
    (host_tmp / "out").mkdir()
    jail = Jail("unsandboxed", "allowed for this test", Limits())
    seen = _probe(jail, host_tmp)
    assert 0 not in seen["uids"], seen


@ROOT_ONLY
def test_a_sandbox_identity_of_root_is_refused(monkeypatch):
    monkeypatch.setenv("EVALUATOR_SANDBOX_UID", "0")
    with pytest.raises(SandboxUnavailable, match="as root"):
        open_jail(allow_unsandboxed=True)
    monkeypatch.setenv("EVALUATOR_SANDBOX_UID", "nobody")
    with pytest.raises(SandboxUnavailable, match="not a numeric id"):
        open_jail(allow_unsandboxed=True)


@ROOT_ONLY
def test_a_configured_sandbox_identity_is_the_one_used(tmp_path, out, monkeypatch):
    monkeypatch.setenv("EVALUATOR_SANDBOX_UID", "64999")
    monkeypatch.setenv("EVALUATOR_SANDBOX_GID", "64998")
    seen = _probe(_jail(), tmp_path)
    assert seen["uids"] == [64999] * 3 and seen["gids"] == [64998] * 3


@ROOT_ONLY
def test_the_verdict_says_who_candidate_code_ran_as():
    assert "uid 65534" in _jail().record().user


@ROOT_ONLY
def test_hand_over_never_walks_what_the_sandbox_user_made(tmp_path, monkeypatch):
    user = jail_mod.SandboxUser(65534, 65534)
    lent = tmp_path / "lent"
    lent.mkdir()
    jail_mod.hand_over(user, writable=[lent], readable=[])
    made = lent / "made-by-candidate"
    made.mkdir()
    os.chown(made, 65534, 65534)
    for i in range(50):
        (made / f"d{i}").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("")
    os.symlink(victim, lent / "link")
    monkeypatch.setattr(jail_mod, "HAND_OVER_MAX_ENTRIES", 5)  # more than the evaluator's, fewer than the candidate's
    jail_mod.hand_over(user, writable=[lent], readable=[tmp_path])
    assert victim.stat().st_uid == 0 and (made / "d0").stat().st_uid == 0  # neither followed nor walked


@ROOT_ONLY
def test_an_unsandboxed_root_worker_says_when_the_sandbox_user_cannot_start_python(monkeypatch, tmp_path):
    jail = Jail("unsandboxed", "allowed for this test", Limits())
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    python = hidden / "python3"
    os.symlink(sys.executable, python)
    monkeypatch.setattr(jail_mod.sys, "executable", str(python))
    with pytest.raises(SandboxUnavailable, match="cannot start"):
        jail_mod.check_reachable(jail)
    monkeypatch.setattr(jail_mod.sys, "executable", "/usr/bin/python3")
    monkeypatch.setattr(jail_mod, "EVALUATOR_DIR", Path("/nonexistent/evaluator"))
    with pytest.raises(SandboxUnavailable, match="cannot start"):
        jail_mod.check_reachable(jail)  # the evaluator package unreadable: the same refusal


@ROOT_ONLY
def test_hand_over_changes_no_file_with_a_second_link(tmp_path):
    """A hard link in a lent folder could name a file elsewhere (the trusted side's, a system one): handing the
    folder over must not change that file's owner."""
    user = jail_mod.SandboxUser(65534, 65534)
    outside = tmp_path / "kept-by-the-evaluator"
    outside.write_text("mine")
    lent = tmp_path / "lent"
    lent.mkdir()
    os.link(outside, lent / "second-name")
    (lent / "plain").write_text("ok")
    jail_mod.hand_over(user, writable=[lent], readable=[])
    assert outside.stat().st_uid == 0
    assert (lent / "plain").stat().st_uid == 65534 and lent.stat().st_uid == 65534
