"""The bubblewrap sandbox (evaluator/isolation/jail.py): what candidate code can and cannot do inside it, the refusal
without it, the mode recorded in verdicts; the policy after macro expansion; hidden workloads and redaction.

Tests of the sandbox's properties skip (with the reason) where bubblewrap cannot start; the refusal and the
honest record of the mode are tested everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.isolation.jail import Cgroup, Limits, SandboxUnavailable, open_jail
from evaluator.isolation.sandbox import run_group
from evaluator.pipeline import Options, evaluate, select_workloads
from evaluator.source_policy.policy import check_preprocessed
from tests.support.factories import LIGHT_KERNEL

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TINY = HERE / "tasks" / "tiny_gemm"
SOURCE = (REPO / "tests" / "kernels" / "cpu_gemm_variants.cu").read_text()


def _jail_or_skip():
    try:
        return open_jail(allow_unsandboxed=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap unavailable here: {exc}")


def _inside(jail, code: str, **kwargs):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "SECRET_KEY": "do-not-leak"}
    return run_group([sys.executable, "-c", textwrap.dedent(code)], timeout_s=60, jail=jail, env=env, **kwargs)


# --------------------------------------------------------------------------- refusal and the recorded mode


def test_missing_bubblewrap_is_refused_unless_allowed(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALUATOR_BWRAP", str(tmp_path / "no-such-bwrap"))
    monkeypatch.delenv("EVALUATOR_ALLOW_UNSANDBOXED", raising=False)
    with pytest.raises(SandboxUnavailable, match="not installed"):
        open_jail(allow_unsandboxed=None)
    with pytest.raises(SandboxUnavailable):
        evaluate(LIGHT_KERNEL, load_task(TINY), "sm_90a", stages=["compile"], options=Options(device_type="cpu"))
    # Explicitly allowed: it runs, and the verdict says how and why.
    v = evaluate(
        LIGHT_KERNEL,
        load_task(TINY),
        "sm_90a",
        stages=["compile"],
        options=Options(device_type="cpu", allow_unsandboxed=True),
    )
    assert v.status == OverallStatus.STATIC_ONLY and v.compile.ok
    assert v.sandbox.mode == "unsandboxed" and "not installed" in v.sandbox.reason
    assert v.sandbox.network is True  # nothing claimed that was not enforced
    monkeypatch.setenv("EVALUATOR_ALLOW_UNSANDBOXED", "1")
    assert open_jail().mode == "unsandboxed"


def test_cli_exits_3_without_a_sandbox(monkeypatch, tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text(LIGHT_KERNEL)
    env = {**os.environ, "EVALUATOR_BWRAP": str(tmp_path / "none"), "PYTHONPATH": str(REPO)}
    env.pop("EVALUATOR_ALLOW_UNSANDBOXED", None)
    base = [sys.executable, "-m", "evaluator", "run", str(kernel), "--task", "tiny_gemm", "--arch", "sm_90a"]
    base += ["--tasks-root", str(HERE / "tasks"), "--stages", "compile"]
    refused = subprocess.run(base, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 3 and "--allow-unsandboxed" in refused.stderr
    allowed = subprocess.run([*base, "--allow-unsandboxed"], env=env, capture_output=True, text=True, timeout=300)
    assert allowed.returncode == 0 and "sandbox: unsandboxed" in allowed.stdout


def test_verdict_records_the_mode_actually_used():
    opts = Options(device_type="cpu")
    v = evaluate(SOURCE, load_task(TINY), "sm_90a", workloads="headline", stages=["correctness"], options=opts)
    assert v.status == OverallStatus.PASSED
    try:
        open_jail(allow_unsandboxed=False)
        works = True
    except SandboxUnavailable:
        works = False
    assert v.sandbox.mode == ("bubblewrap" if works else "unsandboxed")
    if works:
        assert v.sandbox.network is False and v.sandbox.reason == ""
        assert v.sandbox.limits["core_dumps"] == "off" and "open_files" in v.sandbox.limits
    else:
        assert v.sandbox.reason
    policy_only = evaluate(SOURCE, load_task(TINY), "sm_90a", stages=["policy"], options=Options(device_type="cpu"))
    assert policy_only.sandbox is None  # nothing ran


# --------------------------------------------------------------------------- inside the sandbox


def test_no_network_read_only_system_private_tmp(tmp_path):
    jail = _jail_or_skip()
    out = tmp_path / "out"
    out.mkdir()
    run = _inside(
        jail,
        f"""
        import os, socket
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2); print("NETWORK")
        except OSError as e:
            print("no network", e.errno)
        for p in ["/etc/x", "/usr/x", "{REPO}/evaluator/x", "/x", "/dev/x"]:
            try:
                open(p, "w"); print("WROTE", p)
            except OSError as e:
                print("read-only", p)
        open("/tmp/mine", "w").write("ok"); open("{out}/result", "w").write("ok")
        print("tmp ok", os.environ.get("HOME"), os.environ.get("SECRET_KEY"))
        """,
        writable=[out],
    )
    assert run.returncode == 0, run.output
    assert "NETWORK" not in run.output and "no network" in run.output
    assert "WROTE" not in run.output and run.output.count("read-only") == 5
    assert "tmp ok /tmp" in run.output
    assert (out / "result").read_text() == "ok"
    assert not Path("/tmp/mine").exists() or Path("/tmp/mine").read_text() != "ok"


def test_the_hosts_tmp_on_the_import_path_is_never_bound_over_the_private_one(tmp_path, monkeypatch):
    """A worker started from a script in /tmp has /tmp on sys.path. The jail bound the host's /tmp read-only over
    the sandbox's private tmpfs: every compile failed ("No usable temporary directory") and the candidate could list
    other evaluations' folders there. Mutation caught: /tmp kept in `visible_paths`."""
    from evaluator.isolation.jail import visible_paths

    jail = _jail_or_skip()
    monkeypatch.setattr(sys, "path", [*sys.path, "/tmp"])
    out = tmp_path / "out"
    out.mkdir()
    assert Path("/tmp") not in visible_paths([out])
    marker = Path(f"/tmp/ptxbench-host-marker-{uuid.uuid4().hex}")
    marker.write_text("host")
    try:
        run = _inside(
            jail,
            f"""
            import os
            open("/tmp/mine", "w").write("ok")
            print("sees host marker", os.path.exists("{marker}"))
            open("{out}/result", "w").write("ok")
            """,
            writable=[out],
        )
    finally:
        marker.unlink()
    assert run.returncode == 0, run.output
    assert "sees host marker False" in run.output
    assert (out / "result").read_text() == "ok"


def test_secrets_and_the_rest_of_the_repository_are_not_visible():
    jail = _jail_or_skip()
    run = _inside(
        jail,
        f"""
        import os
        print("repo:", sorted(os.listdir("{REPO}")))
        for p in ["/etc/shadow", "/root", "/home", "/var"]:
            try:
                data = open(p).read() if os.path.isfile(p) else os.listdir(p)
                print("visible", p, bool(data))
            except OSError:
                print("hidden", p)
        print("caps", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
        print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit())[:5])
        """,
    )
    assert run.returncode == 0, run.output
    repo_line = next(line for line in run.output.splitlines() if line.startswith("repo:"))
    assert "'evaluator'" in repo_line and "'portal'" not in repo_line and "'data'" not in repo_line
    assert "visible /etc/shadow True" not in run.output
    assert "caps 0000000000000000" in run.output
    pids = json.loads(run.output.split("pids ")[1].splitlines()[0])
    assert max(pids) < 50  # its own PID namespace: none of the host's processes


def test_tmp_size_file_size_and_core_limits():
    jail = open_jail(allow_unsandboxed=False) if _jail_or_skip() else None
    small = type(jail)(jail.mode, jail.reason, Limits(tmp_bytes=4 * 1024**2, file_bytes=2 * 1024**2), jail.bwrap)
    run = _inside(
        small,
        """
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        print("core", resource.getrlimit(resource.RLIMIT_CORE))
        try:
            open("/tmp/big", "wb").write(b"x" * 3 * 1024**2); print("BIG FILE")
        except OSError as e:
            print("file too large", e.errno)
        try:
            for i in range(3):
                open(f"/tmp/part{i}", "wb").write(b"x" * (1536 * 1024))
            print("FILLED")
        except OSError as e:
            print("tmp full", e.errno)
        """,
    )
    assert "core (0, 0)" in run.output
    assert "file too large 27" in run.output  # EFBIG
    assert "tmp full 28" in run.output  # ENOSPC


def test_process_limit_holds_a_fork_bomb_and_everything_is_killed():
    jail = _jail_or_skip()
    cgroup, why = Cgroup.create(Limits())
    if cgroup is None:
        pytest.skip(f"no writable pids cgroup here: {why}")
    cgroup.remove()
    small = type(jail)(jail.mode, jail.reason, Limits(processes=64), jail.bwrap)
    # A mark of this run alone in the bomb's command line: other tests (another xdist worker, another checkout on
    # the same machine) run `time.sleep(600)` children of their own, which are not this sandbox's survivors.
    mark = f"fork-bomb-{uuid.uuid4().hex}"
    run = _inside(
        small,
        f"""
        import os, time
        n = 0  # {mark}
        while True:
            try:
                if os.fork() == 0:
                    time.sleep(600); os._exit(0)
                n += 1
            except OSError:
                print("stopped at", n, flush=True); break
        """,
    )
    assert "stopped at" in run.output
    assert int(run.output.split("stopped at")[1].split()[0]) < 64
    assert run.limit_events["pids_max_hit"] >= 1
    leftover = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout
    assert leftover.strip() == "", "processes of the sandbox survived"


def test_compiler_runs_sandboxed_with_a_clean_environment(tmp_path, monkeypatch):
    from evaluator.build.compile import compile_kernel

    jail = _jail_or_skip()
    monkeypatch.setenv("DATABASE_URL", "postgres://secret")
    source = "#ifdef DATABASE_URL\n#error leaked\n#endif\n" + LIGHT_KERNEL
    compiled = compile_kernel(source, "sm_90a", tmp_path / "build", jail=jail)
    assert compiled.result.ok, compiled.result.output
    assert compiled.preprocessed is not None and "run_impl" in compiled.preprocessed
    assert list((tmp_path / "build").glob("kernel.so"))


# --------------------------------------------------------------------------- policy after macro expansion


def test_policy_on_preprocessed_output_sees_pasted_names_but_not_headers():
    text = textwrap.dedent(
        """\
        # 1 "/usr/include/dlfcn.h" 1 3 4
        extern void *dlopen (const char *__file, int __mode);
        # 10 "/tmp/build/kernel.cu" 2
        void run_impl() {
          void* lib = dlopen("x", 2);
        # 20 "/tmp/build/kernel.cu"
          int f() asm("cublasGemmEx");
          printf("faster than cublas");
        }
        """
    )
    findings = check_preprocessed(text)
    assert [(f.rule, f.line) for f in findings] == [("dynamic-loading", 11), ("forbidden-library", 20)]
    assert all("after macro expansion" in f.message for f in findings)


# --------------------------------------------------------------------------- hidden workloads and redaction


def _task_with_hidden(tmp_path):
    task_dir = tmp_path / "tiny_gemm"
    shutil.copytree(TINY, task_dir)
    lines = [
        {"uuid": "00000000-0000-4000-8000-0000000000a8", "axes": {"M": 24}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}},
        {"uuid": "00000000-0000-4000-8000-0000000000b9", "axes": {"M": 57}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}},
    ]  # fmt: skip
    (task_dir / "hidden_workloads.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return load_task(task_dir)


def test_hidden_workloads_load_and_select(tmp_path):
    task = _task_with_hidden(tmp_path)
    assert [w.axes["M"] for w in task.hidden_workloads] == [24, 57]
    assert [w.axes["M"] for w in select_workloads(task, "hidden")] == [24, 57]
    assert [w.axes["M"] for w in select_workloads(task, "ranked")] == [24, 57]
    assert [w.axes["M"] for w in select_workloads(load_task(TINY), "ranked")] == [16, 40]
    with pytest.raises(ValueError, match="no hidden workloads"):
        select_workloads(load_task(TINY), "hidden")
    with pytest.raises(ValueError) as err:
        select_workloads(task, "nonsense")
    assert "a8" not in str(err.value)  # hidden uuids are never listed in errors


def test_hidden_run_passes_stages_only_the_evaluated_workload_and_redacts(tmp_path):
    task = _task_with_hidden(tmp_path)
    work = tmp_path / "work"
    opts = Options(device_type="cpu", timeout_s=30, workdir=work, keep_workdir=True)
    v = evaluate(
        SOURCE, task, "sm_90a", workloads="00000000-0000-4000-8000-0000000000a8", stages=["correctness"], options=opts
    )
    assert v.status == OverallStatus.PASSED and v.workload_set == "hidden"
    staged = (work / "task" / "tiny_gemm" / "hidden_workloads.jsonl").read_text()
    assert "0000000000a8" in staged and "0000000000b9" not in staged  # the candidate never sees the other one
    red = vm.redact(v)
    text = vm.to_json(red)
    assert red.redacted and red.status == OverallStatus.PASSED
    assert [w.status.value for w in red.workloads] == ["PASSED"]
    assert "0000000000a8" not in text and '"M"' not in text
    (w,) = red.workloads
    assert w.axes == {} and w.correctness is None and w.performance is None and w.message == ""
    assert red.notes == [] and all(s.message == "" for s in red.stages)
    assert vm.from_json(text).redacted


def test_files_under_etc_that_others_may_not_read_are_empty_inside(tmp_path):
    """The operator's env file (SECRET_KEY, DATABASE_URL) is 0600 root: a worker running as root still owns it, so
    without the mask candidate code could read it even with every capability dropped."""
    import secrets

    from evaluator.isolation.jail import private_paths

    jail = _jail_or_skip()
    if os.geteuid() != 0:
        pytest.skip("needs root to write a file under /etc")
    env_file = Path(f"/etc/ptxbench-test-{secrets.token_hex(4)}.env")
    env_file.write_text("SECRET_KEY=etc-secret-marker-5d1e\n")
    env_file.chmod(0o600)
    private_paths.cache_clear()
    try:
        run = _inside(
            jail,
            f"""
            try:
                print("content:", repr(open("{env_file}").read()))
            except OSError as exc:
                print("refused:", exc.errno)
            """,
        )
    finally:
        env_file.unlink()
        private_paths.cache_clear()
    assert run.returncode == 0, run.output
    # masked with the null device: it reads as nothing, or the open is refused (nodev mount); never the content
    assert "etc-secret-marker-5d1e" not in run.output
    assert "content: ''" in run.output or "refused: 13" in run.output, run.output
