"""Fixit pages and API: create/list/detail/download, `{"error": ...}` on bad input, hostile rows escaped,
a version withdrawn once a source is hidden."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.test import Client

from portal.agent.models import ModelRun
from tests.support.factories import make_token, make_user, sync_catalog
from tests.support.fixit_support import stored_trajectory

pytestmark = [pytest.mark.django_db]
HOSTILE = '// </pre><script>alert("x")</script>\n'


@pytest.fixture
def alice(settings, tmp_path):
    settings.FIXIT_DIR = tmp_path / "fixit"
    sync_catalog()
    return make_user("alice")


def _post(client: Client, body, token: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return client.post("/api/v1/datasets", data=data, content_type="application/json", **headers)


def test_create_list_detail_and_download_through_the_api(alice):
    stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": HOSTILE}, {"status": "PASSED", "kernel": "// ok\n"}]
    )
    client, token = Client(), make_token(alice)
    response = _post(client, {"name": "api-set", "filters": {"tasks": ["gemm_n7168_k5120"]}}, token)
    assert response.status_code == 201, response.content
    document = response.json()
    assert response["Location"] == "/api/v1/datasets/api-set/1"
    assert document["counts"]["repair"]["rows"] == 1 and document["withdrawn"] is False
    assert [d["name"] for d in client.get("/api/v1/datasets").json()["datasets"]] == ["api-set"]
    assert client.get("/api/v1/datasets/api-set/1").json()["manifest_sha256"] == document["manifest_sha256"]
    for entry in document["files"]:
        download = client.get(entry["url"])
        assert download.status_code == 200 and download["X-Content-SHA256"] == entry["sha256"]
        assert hashlib.sha256(b"".join(download.streaming_content)).hexdigest() == entry["sha256"]
        assert "attachment" in download["Content-Disposition"]
    missing = client.get("/api/v1/datasets/api-set/1/files/../../settings.py")
    assert missing.status_code == 404 and "error" in missing.json()


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"name": "x", "filters": {"colour": 1}}, 400, "unknown filter"),
        ({"name": "Bad Name", "filters": {}}, 400, "name must be"),
        ({"name": 7}, 400, "'name' must be a string"),
        ({"name": "x", "owner": "bob"}, 400, "unknown field"),
        ({"name": "x", "filters": {"min_speedup": "fast"}}, 400, "min_speedup"),
        ('{"name": "x\\u0000"}', 400, "NUL"),
        ("[1, 2]", 400, "JSON object"),
        ("not json", 400, "not valid JSON"),
    ],
)
def test_bad_input_is_answered_with_a_json_error(alice, body, status, message):
    response = _post(Client(), body, make_token(alice))
    assert response.status_code == status and message in response.json()["error"]


def test_creating_needs_a_token_and_is_limited_per_day(alice, settings):
    assert _post(Client(), {"name": "x"}, None).status_code == 401
    settings.FIXIT_DATASETS_PER_DAY = 1
    token = make_token(alice)
    assert _post(Client(), {"name": "one"}, token).status_code == 201
    refused = _post(Client(), {"name": "two"}, token)
    assert refused.status_code == 429 and "a day" in refused.json()["error"]


def test_pages_escape_hostile_rows_and_a_hidden_source_withdraws_the_version(alice):
    trajectory = stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": HOSTILE}, {"status": "PASSED", "kernel": "// ok\n"}]
    )
    _post(Client(), {"name": "page-set", "attribution": "<b>bold</b>"}, make_token(alice))
    client = Client()
    assert b"page-set" in client.get("/fixit/").content
    page = client.get("/fixit/page-set/v1/").content.decode()
    assert '<script>alert("x")</script>' not in page and "&lt;script&gt;" in page
    assert "<b>bold</b>" not in page and "carries the loss" in page
    assert client.get("/fixit/page-set/v1/files/repair/train.jsonl").status_code == 200

    ModelRun.objects.filter(id=trajectory.run.id).update(is_hidden=True, hidden_reason="cheating")
    page = client.get("/fixit/page-set/v1/").content.decode()
    assert "Withdrawn" in page and "&lt;script&gt;" not in page
    assert client.get("/fixit/page-set/v1/files/repair/train.jsonl").status_code == 404
    assert client.get("/api/v1/datasets/page-set/1").json()["withdrawn"] is True
    assert client.get("/api/v1/datasets/page-set/1/files/repair/train.jsonl").status_code == 404


def test_a_run_names_the_dataset_its_model_was_tuned_on(alice):
    trajectory = stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": "// a\n"}, {"status": "PASSED", "kernel": "// A\n"}]
    )
    client, token = Client(), make_token(alice)
    _post(client, {"name": "base-fixit"}, token)
    tuned = stored_trajectory(alice, [{"status": "PASSED", "kernel": "// tuned\n"}], model="tuned-model").run
    url = f"/api/v1/fixit/runs/{tuned.id}/tuned-on"

    def post(body, who):
        return client.post(
            url, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {who}"
        )

    assert post({"dataset": "base-fixit", "version": 1}, make_token(make_user("bob"))).status_code == 404
    assert "version" in post({"dataset": "base-fixit", "version": "1"}, token).json()["error"]
    assert post({"dataset": "nope", "version": 1}, token).json() == {"error": "no such dataset"}
    assert post({"dataset": "base-fixit", "version": 1}, token).json() == {
        "run": tuned.id,
        "dataset": "base-fixit",
        "version": 1,
    }
    page = client.get(f"/runs/{tuned.id}/").content.decode()
    assert "Tuned on" in page and "/fixit/base-fixit/v1/" in page
    assert "Tuned on" not in client.get(f"/runs/{trajectory.run_id}/").content.decode()
    assert client.get("/api/v1/datasets/base-fixit/1").json()["tuned_runs"] == [tuned.id]


def test_writes_on_a_run_the_caller_may_not_see_answer_404(alice):
    hidden = stored_trajectory(alice, [{"status": "PASSED", "kernel": "// h\n"}], model="hidden-model").run
    ModelRun.objects.filter(id=hidden.id).update(is_hidden=True)
    bob = make_token(make_user("bob"))
    for pattern in ("/api/v1/fixit/runs/{}/tuned-on", "/api/v1/fixit/repair-runs/{}/explanations"):
        for run_url in (pattern.format(hidden.id), pattern.format(999999)):
            response = Client().post(
                run_url, data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {bob}"
            )
            assert response.status_code == 404 and response.json() == {"error": "no such run"}


def test_a_file_changed_on_disk_is_not_served(alice):
    from portal.fixit.models import Dataset
    from portal.fixit.storage import dataset_folder

    stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": "// a\n"}, {"status": "PASSED", "kernel": "// A\n"}]
    )
    _post(Client(), {"name": "tampered"}, make_token(alice))
    target = dataset_folder(Dataset.objects.get(name="tampered").id) / "repair/train.jsonl"
    target.write_bytes(target.read_bytes().replace(b"// a", b"// b"))
    response = Client().get("/fixit/tampered/v1/files/repair/train.jsonl")
    assert response.status_code == 500 and b"sha256" in response.content
