"""Model runs on the web and the API: the form (login, write-only key, SSRF refusal), the API (token auth,
public read, 429 on the concurrent-run limit), run and trajectory pages (escaped conversation, live-refresh
script), the mini-swe-agent export, and the API key absent from every page, response and log line."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import override_settings

from portal.agent.models import ModelRun, Trajectory
from portal.agent.trajectories import TRAJECTORY_FORMAT
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, NO_CODE, drain, fenced, replay  # noqa: F401
from tests.support.factories import BROKEN_KERNEL, GEMM, make_token, make_user, sync_catalog

pytestmark = pytest.mark.django_db(transaction=True)
HOSTILE = "<script>alert('pwned')</script>"


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _form(server, **extra) -> dict:
    return {
        "base_url": server.base_url.replace("/v1", "/secret-path-part/v1"),
        "model": "replay-model",
        "display_name": "Replay " + HOSTILE,
        "api_key": API_KEY,
        "arch": "sm_90a",
        "tasks": [GEMM],
        "pack_variant": "arch",
        "turns": 2,
        "trajectories_per_task": 1,
        "target_speedup": 1.2,
        "temperature": 0.0,
        "max_output_tokens": 1024,
        "request_timeout": 5,
        "max_retries": 0,
        **extra,
    }


def test_the_form_needs_a_login(client):
    response = client.get("/runs/new/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@override_settings(**LOOP_SETTINGS)
def test_a_private_endpoint_is_refused_on_the_form_and_the_key_is_not_rendered_back(client, alice):
    client.force_login(alice)
    data = {
        **_form(type("S", (), {"base_url": "http://169.254.169.254/v1"})()),
        "base_url": "http://169.254.169.254/v1",
    }
    response = client.post("/runs/new/", data)
    html = response.content.decode()
    assert response.status_code == 400
    assert "Endpoint refused" in html and "link-local" in html
    assert API_KEY not in html and "WXYZ" not in html
    assert ModelRun.objects.count() == 0


@override_settings(**LOOP_SETTINGS)
def test_form_to_finished_run_pages_show_results_safely_and_never_the_key(client, alice, replay, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)
    server = replay({"turns": [{"content": "Try this " + HOSTILE + "\n" + fenced(BROKEN_KERNEL)}, NO_CODE]})
    client.force_login(alice)
    response = client.post("/runs/new/", _form(server))
    assert response.status_code == 302
    run = ModelRun.objects.get()
    assert response["Location"] == f"/runs/{run.id}/"
    drain()
    run.refresh_from_db()
    assert run.state == ModelRun.State.DONE

    pages = {}
    owner_page = client.get(f"/runs/{run.id}/").content.decode()
    assert "••••WXYZ" in owner_page
    assert "127.0.0.1:" in owner_page and "secret-path-part" not in owner_page
    assert "COMPILE_ERROR" in owner_page and "NO_KERNEL" in owner_page and "turns exhausted" in owner_page.lower()
    assert 'src="/static/js/agent-run.js"' in owner_page and "<script>alert" not in owner_page
    pages["owner run page"] = owner_page
    trajectory = Trajectory.objects.get(run=run)
    conversation = client.get(f"/runs/{run.id}/trajectories/{trajectory.id}/").content.decode()
    assert "<script>alert" not in conversation and "&lt;script&gt;" in conversation
    assert "this is not C++" in conversation and 'class="code"' in conversation  # Pygments-highlighted
    assert "Evaluation result: COMPILE_ERROR." in conversation
    pages["trajectory page"] = conversation
    client.logout()
    public = client.get(f"/runs/{run.id}/").content.decode()
    assert "••••" not in public  # the hint is for the owner only
    pages["public run page"] = public
    pages["run list"] = client.get("/runs/").content.decode()
    api = client.get(f"/api/v1/runs/{run.id}")
    assert api.status_code == 200
    document = api.json()
    assert document["state"] == "done" and document["final"] is True
    assert document["endpoint_host"].startswith("127.0.0.1:")
    assert [t["status"] for t in document["trajectories"][0]["turns"]] == ["COMPILE_ERROR", "NO_KERNEL"]
    assert {(m["k"], m["correct"]) for m in document["metrics"]} == {(1, 0), (2, 0)}  # every k up to its 2 turns
    pages["api"] = api.content.decode()
    export = client.get(f"/runs/{run.id}/trajectories/{trajectory.id}/export.json")
    assert export["Content-Disposition"].startswith("attachment;")
    pages["export"] = export.content.decode()
    for name, body in pages.items():
        assert API_KEY not in body, name
        assert "secret-path-part" not in body, name
        assert "api_key_encrypted" not in body and run.api_key_encrypted not in body, name
    assert API_KEY not in caplog.text


@override_settings(**LOOP_SETTINGS, AGENT_MAX_ACTIVE_RUNS=1)
def test_api_creates_runs_with_a_token_and_limits_concurrent_runs(client, alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE]})
    body = {
        "base_url": server.base_url,
        "model": "replay-model",
        "arch": "sm_90a",
        "tasks": [GEMM],
        "api_key": API_KEY,
        "turns": 1,
        "trajectories_per_task": 1,
    }
    assert client.post("/api/v1/runs", json.dumps(body), content_type="application/json").status_code == 401
    auth = {"HTTP_AUTHORIZATION": f"Bearer {make_token(alice)}"}
    created = client.post("/api/v1/runs", json.dumps(body), content_type="application/json", **auth)
    assert created.status_code == 201, created.content
    assert API_KEY not in created.content.decode()
    assert created.json()["state"] == "queued" and created["Location"] == f"/api/v1/runs/{created.json()['id']}"
    second = client.post("/api/v1/runs", json.dumps(body), content_type="application/json", **auth)
    assert second.status_code == 429
    assert "still queued or running (limit 1)" in second.json()["error"]
    bad = client.post(
        "/api/v1/runs", json.dumps({**body, "base_url": "http://10.0.0.1/v1"}), content_type="application/json", **auth
    )
    assert bad.status_code in (400, 429)
    drain()
    # The finished run frees the slot; a private endpoint is then refused with 400 and a reason.
    bad = client.post(
        "/api/v1/runs", json.dumps({**body, "base_url": "http://10.0.0.1/v1"}), content_type="application/json", **auth
    )
    assert bad.status_code == 400 and "private address" in bad.json()["error"]
    typo = client.post("/api/v1/runs", json.dumps({**body, "turn": 3}), content_type="application/json", **auth)
    assert typo.status_code == 400 and "unknown field" in typo.json()["error"]
    assert client.get("/api/v1/runs/999999").status_code == 404


@override_settings(**LOOP_SETTINGS)
def test_hidden_runs_are_gone_for_the_public_but_not_for_the_owner(client, alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE]})
    client.force_login(alice)
    client.post("/runs/new/", _form(server))
    run = ModelRun.objects.get()
    ModelRun.objects.filter(id=run.id).update(is_hidden=True)
    assert client.get(f"/runs/{run.id}/").status_code == 200
    client.logout()
    assert client.get(f"/runs/{run.id}/").status_code == 404
    assert client.get(f"/api/v1/runs/{run.id}").status_code == 404
    assert f"/runs/{run.id}/" not in client.get("/runs/").content.decode()


@override_settings(**LOOP_SETTINGS)
def test_export_is_a_mini_swe_agent_trajectory_that_its_reader_loads(client, alice, replay, tmp_path):  # noqa: F811
    server = replay({"turns": [fenced(BROKEN_KERNEL) and {"content": fenced(BROKEN_KERNEL)}, NO_CODE]})
    client.force_login(alice)
    client.post("/runs/new/", _form(server))
    drain()
    run = ModelRun.objects.get()
    trajectory = Trajectory.objects.get(run=run)
    data = client.get(f"/runs/{run.id}/trajectories/{trajectory.id}/export.json").json()
    # The documented format (DefaultAgent.serialize in mini-swe-agent 2.x).
    assert data["trajectory_format"] == TRAJECTORY_FORMAT == "mini-swe-agent-1.1"
    assert set(data["info"]) >= {"model_stats", "config", "exit_status", "submission"}
    assert data["info"]["exit_status"] == "turns_exhausted" and "this is not C++" in data["info"]["submission"]
    assert data["info"]["ptxbench"]["turns"][0]["status"] == "COMPILE_ERROR"
    # PTXBench's own names: the canonical ones (docs/api.md), saying so.
    assert data["info"]["ptxbench"]["format"] == "ptxbench-portal.trajectory-2"
    assert "speedup_factor" in data["info"]["ptxbench"]["turns"][0] and "speedup" not in data["messages"][3]["extra"]
    assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert data["messages"][2]["extra"]["turn"] == 0 and data["messages"][3]["extra"]["status"] == "COMPILE_ERROR"

    # And mini-swe-agent's own reader (the trajectory inspector) loads it.
    inspector_module = pytest.importorskip(
        "minisweagent.run.utilities.inspector", reason="mini-swe-agent is not installed (pip install mini-swe-agent)"
    )
    from minisweagent.models.utils.content_string import get_content_string

    path = tmp_path / "export.traj.json"
    path.write_text(json.dumps(data))
    inspector = inspector_module.TrajectoryInspector([path])
    assert inspector.messages == data["messages"]
    assert inspector.n_steps == 3  # the opening, then one page per assistant message
    assert "this is not C++" in get_content_string(inspector.steps[1][0])

    # The export re-imports for re-scoring.
    from portal.agent.trajectories import trajectory_parse

    imported = trajectory_parse(data)
    assert imported.task == GEMM and imported.model == "replay-model" and len(imported.replies) == 2
