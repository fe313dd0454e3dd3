"""Bad input to the `ptxbench` client gives one line on stderr in the API's words and a non-zero exit: an unknown
task, a missing file, a bad token, a portal that is down, a bundle whose digests do not match. Hostile names
from the portal are shown, never obeyed, on the terminal; progress is one rewritten line on a terminal."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import time
import zipfile
from http.server import BaseHTTPRequestHandler

import pytest

from evaluator.both_sides.arches import ARCHES
from tests.support import leaderboard_factories as lf
from tests.support.cli_support import FakePortal, config_file, run_cli, serving
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog


def _one_line(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.returncode != 0
    return lines[0]


@pytest.mark.django_db(transaction=True)
def test_unknown_task_missing_file_and_bad_token_are_one_line_refusals(live_server, tmp_path):
    sync_catalog()
    token = make_token(make_user("kai"))
    url = live_server.url
    kernel = tmp_path / "k.cu"
    kernel.write_text(starter_source())

    unknown = run_cli(
        "submit", str(kernel), "--task", "nope", "--arch", "sm_90a", url=url, home=tmp_path, PTXBENCH_TOKEN=token
    )
    assert _one_line(unknown) == "ptxbench: unknown task 'nope' (HTTP 404)" and unknown.returncode == 1

    missing = run_cli("submit", str(tmp_path / "absent.cu"), "--task", GEMM, "--arch", "sm_90a", url=url, home=tmp_path)
    assert _one_line(missing).startswith("ptxbench: cannot read ") and missing.returncode == 1

    bad = run_cli("login", url=url, home=tmp_path, stdin="ptx_not-a-real-token\n")
    assert _one_line(bad) == "ptxbench: invalid, revoked or banned API token (HTTP 401)" and bad.returncode == 1
    assert not config_file(tmp_path).exists()  # a refused token is never stored
    bad_submit = run_cli(
        "submit", str(kernel), "--task", GEMM, "--arch", "sm_90a", url=url, home=tmp_path, PTXBENCH_TOKEN="ptx_nope"
    )
    assert _one_line(bad_submit) == "ptxbench: invalid, revoked or banned API token (HTTP 401)"
    no_token = run_cli("submit", str(kernel), "--task", GEMM, "--arch", "sm_90a", url=url, home=tmp_path)
    assert _one_line(no_token).startswith(f"ptxbench: no API token for {url}")

    bad_arch = run_cli("board", "--task", GEMM, "--arch", "sm_75", url=url, home=tmp_path)
    # Refused before the board is asked, naming every architecture the portal's registry lists.
    assert _one_line(bad_arch) == f"ptxbench: unknown architecture 'sm_75'; this portal has: {', '.join(ARCHES)}"
    assert bad_arch.returncode == 2

    no_such = run_cli("status", "999999", url=url, home=tmp_path)
    assert _one_line(no_such) == "ptxbench: no such submission (HTTP 404)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_portal_that_is_down_is_retried_with_backoff_then_one_line(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    down = run_cli("board", "--task", GEMM, "--arch", "sm_90a", url=url, home=tmp_path)
    elapsed = time.monotonic() - started
    line = _one_line(down)
    assert line.startswith(f"ptxbench: cannot reach {url} (") and line.endswith("after 4 attempts")
    assert elapsed >= 3.5  # 0.5 + 1 + 2 s between the four attempts
    once = run_cli("tasks", url=url, home=tmp_path, PTXBENCH_RETRIES="1")
    assert _one_line(once).endswith("after 1 attempt")


class _LyingPortal(FakePortal):
    """A portal whose bundle does not match what it announces (the edge of the world: a tampering proxy)."""

    bundle = b""
    announced = ""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/api/v2/submissions/7":  # the client asks for version 2 by its path
            body = json.dumps({"id": 7, "source_sha256": hashlib.sha256(b"// real\n").hexdigest()}).encode()
            self._send(200, body, "application/json")
        elif self.path == "/evidence/submissions/7/bundle.zip":
            self._send(200, self.bundle, "application/zip", {"X-Content-SHA256": self.announced})
        else:
            self._send(404, b'{"error": "no such thing"}', "application/json")


def _bundle(files: dict[str, bytes], manifest_files: list[dict]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr("MANIFEST.json", json.dumps({"files": manifest_files}))
    return buffer.getvalue()


@pytest.fixture
def lying_portal():
    with serving(_LyingPortal) as url:
        yield url


def _entry(path: str, data: bytes) -> dict:
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.mark.parametrize(
    ("files", "manifest", "announce", "says"),
    [
        # the bundle is not the one announced
        ({"kernel.cu": b"// real\n"}, [_entry("kernel.cu", b"// real\n")], "0" * 64, "the bundle's sha256 is"),
        # a file is not the one its manifest lists
        ({"kernel.cu": b"// real\n"}, [_entry("kernel.cu", b"// other\n")], None, "kernel.cu does not match"),
        # the kernel is consistent with its manifest but not the source the API describes
        ({"kernel.cu": b"// evil\n"}, [_entry("kernel.cu", b"// evil\n")], None, "not the source the API describes"),
        # a path that would leave the output folder
        ({"../escape.cu": b"x"}, [_entry("../escape.cu", b"x")], None, "unsafe path"),
    ],
)
def test_download_refuses_a_bundle_whose_digests_disagree_and_writes_nothing(
    lying_portal, tmp_path, files, manifest, announce, says
):
    bundle = _bundle(files, manifest)
    _LyingPortal.bundle = bundle
    _LyingPortal.announced = announce or hashlib.sha256(bundle).hexdigest()
    out = tmp_path / "out"
    result = run_cli("download", "7", "--what", "kernel,bundle", "-o", str(out), url=lying_portal, home=tmp_path)
    assert says in _one_line(result) and result.returncode == 1
    assert not out.exists()


@pytest.mark.django_db(transaction=True)
def test_hostile_names_are_shown_not_obeyed_on_the_terminal(live_server, tmp_path):
    sync_catalog()
    from portal.leaderboard.cache import clear_process_cache, leaderboard_changed

    evaluation = lf.evaluation(owner=make_user("mal"), name="\x1b]0;pwned\x07evil\x1b[2J.cu", speedup=1.2)
    leaderboard_changed()
    clear_process_cache()
    status = run_cli("status", str(evaluation.submission_id), url=live_server.url, home=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "\x1b" not in status.stdout and "\x07" not in status.stdout
    assert "\\x1b]0;pwned\\x07evil\\x1b[2J.cu" in status.stdout
    board = run_cli("board", "--task", GEMM, "--arch", "sm_90a", url=live_server.url, home=tmp_path)
    assert "\x1b" not in board.stdout and "\\x1b]0;pwned" in board.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_line_on_a_terminal_and_prints_lines_otherwise(monkeypatch):
    from ptxbench_cli import progress

    monkeypatch.setattr(progress, "POLL_S", 0.0)
    monkeypatch.setenv("TERM", "xterm")
    states = iter(
        [
            {"id": "e", "state": "queued", "queue": "gpu-sm90", "queue_position": 2, "final": False},
            {"id": "e", "state": "running", "stages": [{"label": "Compile", "state": "running", "message": "nvcc"}]},
            {"id": "e", "state": "running", "stages": [{"label": "Compile", "state": "running", "message": "nvcc"}]},
            {"id": "e", "state": "done", "final": True, "result": {"status": "PASSED"}},
        ]
    )
    terminal = _Terminal()
    progress.wait_for(lambda: next(states), timeout_s=60, watcher=progress.Watcher(terminal))
    assert terminal.getvalue() == (
        "\r\x1b[Kqueued on gpu-sm90, position 2\r\x1b[Krunning: Compile (nvcc)\r\x1b[Kdone\n"
    )


@pytest.mark.django_db(transaction=True)
def test_run_model_shows_the_apis_refusal_and_never_the_endpoint_key(live_server, tmp_path):
    sync_catalog()
    token = make_token(make_user("kai"))
    args = ("run-model", "--endpoint", "http://10.0.0.1/v1", "--model", "m", "--arch", "sm_90a", "--tasks", GEMM)
    unset = run_cli(*args, "--api-key-env", "ENDPOINT_KEY", url=live_server.url, home=tmp_path, PTXBENCH_TOKEN=token)
    assert _one_line(unset) == "ptxbench: --api-key-env names ENDPOINT_KEY, which is not set"
    refused = run_cli(
        *args,
        "--api-key-env",
        "ENDPOINT_KEY",
        url=live_server.url,
        home=tmp_path,
        PTXBENCH_TOKEN=token,
        ENDPOINT_KEY="sk-secret-endpoint-key",
    )
    line = _one_line(refused)
    assert "private address" in line and line.endswith("(HTTP 400)") and refused.returncode == 1
    assert "sk-secret-endpoint-key" not in refused.stdout + refused.stderr


def test_a_token_is_kept_per_portal_and_the_environment_overrides_it(tmp_path, monkeypatch):
    from ptxbench_cli import config

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("PTXBENCH_TOKEN", raising=False)
    monkeypatch.delenv("PTXBENCH_URL", raising=False)
    config.save_token("https://portal-a.test", "ptx_a")
    assert config.resolve().url == "https://portal-a.test" and config.resolve().token == "ptx_a"
    assert config.resolve("https://portal-b.test/").token == ""  # never sent to another portal
    monkeypatch.setenv("PTXBENCH_URL", "https://portal-b.test")
    assert config.resolve().token == ""
    monkeypatch.setenv("PTXBENCH_TOKEN", "ptx_env")
    assert config.resolve().token == "ptx_env"
    path = config.config_path()
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert config.forget_token("https://portal-a.test") and not config.forget_token("https://portal-a.test")
    with pytest.raises(ValueError, match="must start with http"):
        config.resolve("ftp://x")


_REGISTRY = {"arches": [{"name": "sm_90a"}], "languages": [{"name": "cuda", "suffix": ".cu"}]}


class _FlakyPortal(BaseHTTPRequestHandler):
    """Overloaded for a moment: 503 twice, then the board; a POST always meets an HTML 502 page."""

    calls: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path.startswith("/api/v2/registry"):  # what the portal evaluates: only the reads below are counted
            self._send(200, json.dumps(_REGISTRY).encode(), "application/json")
            return
        self.calls.append("GET")
        if self.calls.count("GET") <= 2:
            self._send(503, b'{"error": "busy"}', "application/json")
        else:
            self._send(200, b'{"rows": []}', "application/json")

    def do_POST(self):  # noqa: N802
        self.calls.append("POST")
        self._send(502, b"<!DOCTYPE html><html><body>Bad gateway</body></html>", "text/html")

    _send = _LyingPortal._send
    log_message = _LyingPortal.log_message


def test_reads_are_retried_after_a_503_and_writes_never_are(tmp_path):
    _FlakyPortal.calls = []
    with serving(_FlakyPortal) as url:
        board = run_cli("board", "--task", GEMM, "--arch", "sm_90a", url=url, home=tmp_path)
        assert board.returncode == 0 and _FlakyPortal.calls == ["GET", "GET", "GET"], board.stderr
        args = ("run-model", "--endpoint", "https://x.test/v1", "--model", "m", "--arch", "sm_90a", "--tasks", GEMM)
        run = run_cli(*args, url=url, home=tmp_path, PTXBENCH_TOKEN="ptx_x")
        assert _one_line(run) == "ptxbench: HTTP 502"  # an HTML page: only its status
        assert _FlakyPortal.calls.count("POST") == 1  # a second POST could start a second run


def test_every_command_has_help_and_bad_arguments_exit_2(capsys):
    from ptxbench_cli.main import build_parser, main

    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == {
        "login",
        "logout",
        "tasks",
        "submit",
        "status",
        "download",
        "board",
        "dataset",
        "run-model",
    }
    for name in ["", *commands]:
        with pytest.raises(SystemExit) as exited:
            main([name, "--help"] if name else ["--help"])
        assert exited.value.code == 0
        assert "usage: ptxbench" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["submit", "k.cu", "--arch", "sm_90a"])  # --task missing
    assert exited.value.code == 2 and "required: --task" in capsys.readouterr().err
    assert main(["download", "7", "--what", "everything"]) == 2
    assert capsys.readouterr().err.strip().startswith("ptxbench: --what takes a comma-separated list of:")


def test_the_language_is_told_by_the_suffix_unless_given():
    from pathlib import Path

    from ptxbench_cli.api import CliError
    from ptxbench_cli.main import _language
    from ptxbench_cli.registry import Registry

    known = Registry(("sm_90a",), {".cu": "cuda", ".py": "triton"})  # as the portal's registry lists them
    assert _language(Path("k.cu"), "auto", known) == "cuda" and _language(Path("k.PY"), "auto", known) == "triton"
    assert _language(Path("k.txt"), "triton", known) == "triton"
    with pytest.raises(CliError) as refused:
        _language(Path("k.txt"), "auto", known)
    assert refused.value.exit_code == 2 and "pass --language" in refused.value.message
    assert _language(Path("k.txt"), "auto", Registry(None, None)) is None  # an older portal tells by the name
