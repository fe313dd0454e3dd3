"""Operator entry points: `manage.py run_model` and the replay server's command line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from portal.agent.models import ModelRun, Turn
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, NO_CODE, drain, replay  # noqa: F401
from tests.support.factories import GEMM, REPO, sync_catalog


@pytest.mark.django_db(transaction=True)
@override_settings(**LOOP_SETTINGS)
def test_run_model_starts_a_run_with_the_key_from_the_environment(replay, monkeypatch, capsys):  # noqa: F811
    sync_catalog()
    server = replay({"turns": [NO_CODE]})
    monkeypatch.setenv("REPLAY_KEY", API_KEY)
    args = ["--endpoint", server.base_url, "--model", "replay-model", "--arch", "sm_90a", "--tasks", GEMM]
    call_command(
        "run_model", *args, "--turns", "2", "--trajectories", "2", "--pack", "none", "--api-key-env", "REPLAY_KEY"
    )
    run = ModelRun.objects.get()
    assert (run.turns, run.trajectories_per_task, run.pack_variant, run.api_key_last4) == (2, 2, "none", "WXYZ")
    assert run.user.username == "operator" and not run.user.has_usable_password()
    system = run.trajectories.first().messages[0]["content"]
    assert "# Knowledge pack" in system and "wgmma.mma_async" not in system  # the no-knowledge pack
    drain()
    assert Turn.objects.filter(trajectory__run=run, outcome=Turn.Outcome.NO_KERNEL).count() == 4
    assert {r["token_last4"] for r in server.requests} == {"WXYZ"}
    assert API_KEY not in capsys.readouterr().out
    monkeypatch.delenv("REPLAY_KEY")
    with pytest.raises(CommandError, match="REPLAY_KEY is empty or unset"):
        call_command("run_model", *args, "--api-key-env", "REPLAY_KEY")
    with pytest.raises(CommandError, match="private address"):
        call_command(
            "run_model", "--endpoint", "http://10.1.1.1/v1", "--model", "m", "--arch", "sm_90a", "--tasks", GEMM
        )


def test_replay_server_command_line_serves_scripted_replies_and_logs_requests(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"content": "hello from the script"}, {"status": 503}]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "portal.agent.replay_server", "--replay", str(script), "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert b"replaying" in proc.stdout.readline()
        base = f"http://127.0.0.1:{port}/v1"

        def post(messages):
            request = urllib.request.Request(
                base + "/chat/completions",
                data=json.dumps({"model": "x", "messages": messages}).encode(),
                headers={"Content-Type": "application/json", "Authorization": "Bearer sk-abc-1234"},
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        status, body = post([{"role": "user", "content": "task"}])
        assert status == 200 and body["choices"][0]["message"]["content"] == "hello from the script"
        assert body["usage"]["completion_tokens"] >= 1
        status, body = post([{"role": "user", "content": "task"}, {"role": "assistant", "content": "x"}])
        assert status == 503 and body["error"]["type"] == "server_error"
        with urllib.request.urlopen(base + "/_log", timeout=10) as response:
            log = json.loads(response.read())
        assert [(e["turn"], e["outcome"], e["token_last4"]) for e in log] == [(0, "200", "1234"), (1, "503", "1234")]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        time.sleep(0)
