"""The client reports what the portal answered, in words a user reads once: a 413 sent before the upload ended is
the server's 413 (not a broken pipe), a failed compile shows the compiler's lines, an empty file is named as
such, and no line says the same word twice."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.cli_support import run_cli
from tests.support.factories import GEMM, make_user, sync_catalog

TOO_LARGE = {"error": "the request is 16777500 bytes; the limit is 1310720 bytes (kernel sources: 1048576 bytes)"}


def _answer_before_reading(server: socket.socket) -> None:
    """What gunicorn does with an oversized body: read the headers, answer 413 at once and close, leaving the
    rest unread (the edge of the world: a real front server's behaviour, which the test server does not have)."""
    while True:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        with connection:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                head += chunk
            body = json.dumps(TOO_LARGE).encode()
            connection.sendall(
                b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )


@pytest.fixture
def refusing_portal():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    thread = threading.Thread(target=_answer_before_reading, args=(server,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_an_upload_refused_before_it_was_read_reports_the_servers_413(refusing_portal, tmp_path):
    kernel = tmp_path / "big.cu"
    kernel.write_bytes(b"// padding\n" * 1_600_000)  # 17.6 MB: far more than the socket buffers hold
    result = run_cli(
        "submit", str(kernel), "--task", GEMM, "--arch", "sm_90a", url=refusing_portal, home=tmp_path,
        PTXBENCH_TOKEN="ptx_test", PTXBENCH_RETRIES="1",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == f"ptxbench: {TOO_LARGE['error']} (HTTP 413)"


@pytest.mark.parametrize("content", [b"", b"  \n\t\n"])
def test_an_empty_file_is_named_as_such(tmp_path, content):
    kernel = tmp_path / "empty.cu"
    kernel.write_bytes(content)
    result = run_cli(
        "submit", str(kernel), "--task", GEMM, "--arch", "sm_90a", url="http://127.0.0.1:9", home=tmp_path,
        PTXBENCH_TOKEN="ptx_test",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == f"ptxbench: {kernel} is empty: there is no kernel to submit"


@pytest.mark.django_db(transaction=True)
def test_a_failed_compile_shows_the_compilers_lines_and_the_ranked_check_is_one_phrase(live_server, tmp_path):
    sync_catalog()
    owner = make_user("kai")
    failed = lf.evaluation(
        owner=owner,
        status="COMPILE_ERROR",
        arch_status="not_requested",
        speedup=None,
        compile_output='/tmp/w/eval-1/kernel.cu(3): error: identifier "undefined_thing" is undefined\n  x = 1;\n  ^\n',
    )
    shown = run_cli("status", str(failed.id), url=live_server.url, home=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "  compiler:" in lines
    assert '    kernel.cu(3): error: identifier "undefined_thing" is undefined' in lines

    passed = lf.evaluation(owner=owner, ranked_check="PASSED")
    status = run_cli("status", str(passed.submission_id), url=live_server.url, home=tmp_path)
    assert status.returncode == 0, status.stderr
    check = next(line for line in status.stdout.splitlines() if line.startswith("ranked check:"))
    assert check == "ranked check: passed on fresh inputs from a secret seed: eligible to rank"

    static = lf.evaluation(owner=owner, status="STATIC_ONLY", arch_status="not_requested", speedup=None)
    status = run_cli("status", str(static.submission_id), url=live_server.url, home=tmp_path)
    check = next(line for line in status.stdout.splitlines() if line.startswith("ranked check:"))
    assert "once the evaluation passes" not in check and "without a GPU" in check


def test_a_running_stage_is_not_named_twice():
    from ptxbench_cli import progress

    starting = {"state": "running", "stage": "starting", "message": "starting", "stages": []}
    assert progress.describe(starting) == "running: starting"
    compiling = {"state": "running", "stages": [{"stage": "compile", "label": "Compiling", "state": "running",
                                                 "message": "compile"}]}  # fmt: skip
    assert progress.describe(compiling) == "running: Compiling"
    nvcc = {"state": "running", "stages": [{"label": "Compile", "state": "running", "message": "nvcc"}]}
    assert progress.describe(nvcc) == "running: Compile (nvcc)"
