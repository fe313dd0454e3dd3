"""Evidence downloads: stored bytes, matching sha256, attachment headers, bundles with a manifest, traces."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from portal.submissions.models import Artifact
from tests.support import leaderboard_factories as lf
from tests.support.agent_support import ended
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import GEMM, HEADLINE, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

SASS = b"        /*0a10*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;\n"
NCU_CSV = b'"Address","Source","Instructions Executed","Predicated-On Thread Instructions Executed"\n"0a10","HGMMA.64x256x16.F32.BF16 R24","1024","32768"\n'
EXPECTED_TYPES = {
    "kernel.cu": "text/x-cuda; charset=utf-8",
    "verdict.json": "application/json",
    "compile.log": "text/plain; charset=utf-8",
    "kernel.sass": "text/plain; charset=utf-8",
    "ncu_source.csv": "text/csv; charset=utf-8",
}


@pytest.fixture
def evaluation():
    sync_catalog()
    return lf.evaluation(
        owner=lf.user("alice"),
        name="fast.cu",
        speedup=1.3,
        files={"kernel.sass": SASS, "ncu_source.csv": NCU_CSV, "compile.log": b"ptxas info: 0 bytes spill\n"},
    )


def test_every_artifact_downloads_as_its_stored_bytes(client, evaluation):
    artifacts = list(Artifact.objects.filter(evaluation=evaluation))
    assert {a.name for a in artifacts} == set(EXPECTED_TYPES)
    for artifact in artifacts:
        response = client.get(f"/evidence/evaluations/{evaluation.id}/artifacts/{artifact.name}")
        assert response.status_code == 200, artifact.name
        assert hashlib.sha256(response.content).hexdigest() == artifact.sha256
        assert response["X-Content-SHA256"] == artifact.sha256
        assert response["Content-Type"] == EXPECTED_TYPES[artifact.name]
        assert response["Content-Disposition"] == f'attachment; filename="{evaluation.id}-{artifact.name}"'
    sass = client.get(f"/evidence/evaluations/{evaluation.id}/artifacts/kernel.sass")
    assert sass.content == SASS


def test_a_tampered_artifact_is_refused(client, evaluation, settings):
    artifact = Artifact.objects.get(evaluation=evaluation, name="kernel.cu")
    (Path(settings.ARTIFACTS_DIR) / artifact.path).write_bytes(b"// swapped after the fact\n")
    response = client.get(f"/evidence/evaluations/{evaluation.id}/artifacts/kernel.cu")
    assert response.status_code == 500
    assert b"swapped" not in response.content
    assert client.get(f"/evidence/submissions/{evaluation.submission_id}/bundle.zip").status_code == 500


def test_hidden_and_banned_evidence_is_not_public(client, evaluation):
    from django.contrib.auth.models import User

    from portal.accounts.models import Profile

    hidden = lf.evaluation(owner=lf.user("bob"), name="hidden.cu", hidden=True)
    assert client.get(f"/evidence/evaluations/{hidden.id}/artifacts/kernel.cu").status_code == 404
    assert client.get(f"/evidence/submissions/{hidden.submission_id}/bundle.zip").status_code == 404
    Profile.objects.create(user=User.objects.get(username="alice"), is_banned=True)
    assert client.get(f"/evidence/evaluations/{evaluation.id}/").status_code == 404
    staff = User.objects.create_user("admin", password="x-unused-password-123", is_staff=True)
    client.force_login(staff)
    assert client.get(f"/evidence/evaluations/{hidden.id}/artifacts/kernel.cu").status_code == 200


def test_submission_bundle_has_a_manifest_of_sha256_sums(client, evaluation):
    response = client.get(f"/evidence/submissions/{evaluation.submission_id}/bundle.zip")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="submission-{evaluation.submission_id}.zip"'
    content = b"".join(response.streaming_content)  # streamed, not built in memory
    assert hashlib.sha256(content).hexdigest() == response["X-Content-SHA256"]
    assert int(response["Content-Length"]) == len(content)
    archive = zipfile.ZipFile(io.BytesIO(content))
    manifest = json.loads(archive.read("MANIFEST.json"))
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(listed) | {"MANIFEST.json"} == set(archive.namelist())
    for path, entry in listed.items():
        data = archive.read(path)
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["size"]
    assert archive.read(f"evaluations/{evaluation.id}/kernel.sass") == SASS
    assert archive.read("kernel.cu").decode() == evaluation.submission.source
    assert manifest["environment"]["gpu_name"] == "NVIDIA H200"
    assert manifest["environment"]["driver_version"] == "570.86.15"
    assert manifest["submission"]["source_sha256"] == evaluation.submission.source_sha256
    assert manifest["format"] == "ptxbench-portal.bundle-2"  # the canonical names (docs/api.md)
    assert manifest["evaluations"][0]["speedup_factor"] == 1.3


def test_flashinfer_trace_lines(client, evaluation):
    response = client.get(f"/evidence/evaluations/{evaluation.id}/trace.jsonl")
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith("attachment;")
    (line,) = [json.loads(text) for text in response.content.decode().splitlines()]
    assert line["definition"] == GEMM
    assert line["solution"] == f"fast.cu-{evaluation.submission_id}"
    assert line["workload"]["uuid"] == HEADLINE
    assert line["workload"]["inputs"]  # completed from the catalog's workload
    assert line["evaluation"]["status"] == "PASSED"
    assert line["evaluation"]["performance"]["speedup_factor"] == 1.3
    # FlashInfer Trace's own name for the baseline's latency, mapped from the verdict's at this edge.
    assert line["evaluation"]["performance"]["reference_latency_ms"] == 1.0
    assert line["evaluation"]["correctness"]["max_absolute_error"] == 0.004
    assert line["evaluation"]["environment"] == {
        "hardware": "NVIDIA H200",
        "libs": {"cuda": "12.8", "torch": "2.11.0", "nvcc": "13.0", "driver": "570.86.15"},
    }
    board = client.get("/api/v1/leaderboard/kernels/traces.jsonl", {"task": GEMM, "arch": "sm_90a"})
    assert board.content == response.content  # the only kernel on the board


def test_table_downloads_are_attachments_and_defuse_formulas(client, evaluation):
    lf.evaluation(owner=lf.user("mallory"), name='=HYPERLINK("http://evil")', speedup=1.1)
    json_response = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "arch": "sm_90a", "download": "1"})
    assert json_response["Content-Type"] == "application/json"
    assert json_response["Content-Disposition"] == f'attachment; filename="kernels-{GEMM}-sm_90a.json"'
    assert json.loads(json_response.content)["count"] == 2
    csv_response = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "arch": "sm_90a", "format": "csv"})
    assert "'=HYPERLINK" in csv_response.content.decode()
    assert hashlib.sha256(csv_response.content).hexdigest() == csv_response["X-Content-SHA256"]


def _run_with_turn(owner, evaluation):
    from portal.agent.models import Trajectory, Turn

    run = lf.model_run(owner, model="vendor/model-a")
    trajectory = Trajectory.objects.create(
        run=run, task=lf.task(GEMM), index=0, state="done", messages=[{"role": "assistant", "content": "here"}]
    )
    Turn.objects.create(
        trajectory=trajectory,
        index=0,
        state="done",
        reply="```cuda\n...\n```",
        evaluation=evaluation,
        **ended("PASSED"),
        arch_status="verified",
        speedup_factor=1.3,
        prompt_tokens=1000,
        completion_tokens=200,
    )
    Turn.objects.create(trajectory=trajectory, index=1, state="failed", **ended("NO_KERNEL"), reply="sorry")
    return run


def test_run_bundle_has_trajectories_and_each_turns_artifacts(client, evaluation):
    run = _run_with_turn(evaluation.submission.user, evaluation)
    response = client.get(f"/evidence/runs/{run.id}/bundle.zip")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.id}.zip"'
    content = b"".join(response.streaming_content)
    archive = zipfile.ZipFile(io.BytesIO(content))
    manifest = json.loads(archive.read("MANIFEST.json"))
    for entry in manifest["files"]:
        assert hashlib.sha256(archive.read(entry["path"])).hexdigest() == entry["sha256"]
    assert archive.read(f"{GEMM}/trajectory-0/turn-0/kernel.sass") == SASS
    document = json.loads(archive.read("trajectories.json"))
    (trajectory,) = document["trajectories"]
    assert [t["status"] for t in trajectory["turns"]] == ["PASSED", "NO_KERNEL"]
    assert document["format"] == manifest["format"] == "ptxbench-portal.bundle-2"
    assert [t["speedup_factor"] for t in trajectory["turns"]] == [1.3, None]  # the column's name
    assert trajectory["messages"] == [{"role": "assistant", "content": "here"}]
    assert manifest["environment"]["gpu_name"] == "NVIDIA H200"
    everything = content + archive.read("trajectories.json") + archive.read("MANIFEST.json")
    for secret in (b"do-not-leak", b"gAAAA-not-a-real-token", b'leak"'):
        assert secret not in everything
    assert document["run"]["endpoint_host"] == "llm.example.com"

    trajectories = client.get(f"/evidence/runs/{run.id}/trajectories.json")
    assert trajectories["Content-Type"] == "application/json"
    assert trajectories["Content-Disposition"].startswith("attachment;")
    assert json.loads(trajectories.content) == document
