"""One name per field across endpoints (deprecated aliases kept for one release), and the /api/ page."""

from __future__ import annotations

import pytest

from portal.core import serializers
from portal.leaderboard.boards import serializers as board_serializers
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board

pytestmark = pytest.mark.django_db


def test_evaluation_board_and_submission_call_each_field_by_one_name(client):
    board = mixed_board()
    evaluation = board["mid"]
    result = client.get(f"/api/v1/evaluations/{evaluation.id}", {"v": 2}).json()["result"]
    (row,) = [
        r
        for r in client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "v": 2}).json()["rows"]
        if r["name"] == "mid.cu"
    ]
    submission = client.get(f"/api/v1/submissions/{evaluation.submission_id}", {"v": 2}).json()
    for field in serializers.MEASUREMENT_FIELDS:
        assert result[field] == row[field], field
        assert submission["evaluations"][0]["result"][field] == result[field], field
    assert result["speedup_factor"] == 1.3 and result["gpu_name"] == "NVIDIA H200"
    # the verdict's own fraction (0.5), not 500 TFLOP/s over a peak the portal looked up (0.505)
    assert result["speedup_ci95_low"] == pytest.approx(1.3 * 0.98) and result["fraction_of_peak"] == 0.5
    assert result["verdict_phrase"] == "correct · verified · full"


# What each resource answers in version 1: version 1 (the default) must go on answering exactly these names.
V1_RESULT = {
    "status", "arch_status", "arch_full", "verdict_phrase", "speedup", "speedup_ci_low", "speedup_ci_high", "tflops",
    "peak_fraction", "gpu_name", "ptxbench_verified", "tensor_core_share", "latency_ms", "baseline_latency_ms",
    "review_state", "review_reason", "peak_tflops", "is_synthetic", "speedup_ci95", "fraction_of_peak", "gpu", "review",
}  # fmt: skip
V1_KERNEL_ROW = {
    "rank", "reference", "reference_role", "name", "submitter", "language", "group", "status", "arch_status",
    "arch_full", "verdict_phrase", "speedup", "speedup_ci_low", "speedup_ci_high", "tflops", "peak_fraction",
    "gpu_name", "peak_tflops", "badge", "finished_at", "evaluation_id", "submission_id", "source_sha256",
    "held_reason", "is_synthetic",
}  # fmt: skip
OLD_NAMES = {"speedup", "speedup_ci_low", "speedup_ci_high", "peak_fraction", "speedup_ci95", "gpu", "review", "group"}


def test_version_1_is_the_default_and_answers_the_old_names_exactly(client):
    board = mixed_board()
    evaluation = board["slow"]
    result = client.get(f"/api/v1/evaluations/{evaluation.id}").json()["result"]
    assert set(result) == V1_RESULT
    assert client.get(f"/api/v1/evaluations/{evaluation.id}", {"v": 1}).json()["result"] == result
    # the deprecated aliases carry the same values
    assert result["speedup_ci95"] == [result["speedup_ci_low"], result["speedup_ci_high"]]
    assert result["fraction_of_peak"] == result["peak_fraction"]
    assert result["gpu"] == result["gpu_name"]
    assert result["review"] == result["review_state"]
    rows = client.get("/api/v1/leaderboard/kernels", {"task": GEMM}).json()["rows"]
    assert rows and all(set(r) == V1_KERNEL_ROW for r in rows)
    header = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "format": "csv"}).content.decode()
    assert set(header.splitlines()[0].split(",")) == V1_KERNEL_ROW


def test_version_2_answers_only_the_canonical_names_with_the_same_values(client):
    board = mixed_board()
    evaluation = board["slow"]
    v1 = client.get(f"/api/v1/evaluations/{evaluation.id}").json()["result"]
    v2 = client.get(f"/api/v1/evaluations/{evaluation.id}", {"v": "2"}).json()["result"]
    assert not set(v2) & OLD_NAMES, set(v2) & OLD_NAMES
    assert set(v2) >= set(serializers.MEASUREMENT_FIELDS) | {"latency_ms", "baseline_latency_ms", "review_state"}
    for old, new in serializers.V1_NAMES.items():
        if old in serializers.MEASUREMENT_FIELDS:
            assert v2[old] == v1[new], old
    assert [v2["speedup_ci95_low"], v2["speedup_ci95_high"]] == v1["speedup_ci95"]
    assert v2["speedup_factor"] == pytest.approx(1.1)
    body = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "v": 2, "show": "all"}).json()
    rows = body["rows"]
    assert rows and all(not set(r) & OLD_NAMES for r in rows)
    v1_rows = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "show": "all"}).json()["rows"]
    assert [r["section"] for r in rows] == [r["group"] for r in v1_rows] and "verified" in {r["section"] for r in rows}
    assert body["query"]["sort"] == "-speedup_factor"  # the board's order, by the name its rows use
    assert client.get("/api/v1/leaderboard/kernels", {"task": GEMM}).json()["query"]["sort"] == "-speedup"
    header = client.get("/api/v1/leaderboard/kernels", {"task": GEMM, "format": "csv", "v": 2}).content.decode()
    assert header.splitlines()[0].split(",") == list(board_serializers.KERNEL_FIELDS)
    assert "speedup_factor" in board_serializers.KERNEL_FIELDS


def test_version_2_run_rows_drop_the_old_speedup_names(client):
    from tests.support.ranking_fixtures import three_runs_of_one_model

    three_runs_of_one_model()
    for params, alias in (({"task": GEMM}, "best_speedup"), ({}, "geomean_speedup")):
        query = {"arch": "sm_90a", "per": "run", **params}
        v1 = client.get("/api/v1/leaderboard/models", query).json()["rows"]
        v2 = client.get("/api/v1/leaderboard/models", {**query, "v": 2}).json()["rows"]
        assert v1 and all(r[alias] == r["speedup"] for r in v1), alias
        assert [r["speedup"] for r in v2] == [r["speedup"] for r in v1]
        assert all(alias not in r for r in v2), alias
    grouped = client.get("/api/v1/leaderboard/models", {"arch": "sm_90a", "task": GEMM, "v": 2}).json()["rows"]
    assert grouped and all("best_speedup" not in run for g in grouped for run in g["runs"])


def test_an_unknown_version_is_a_400_naming_the_versions(client):
    board = mixed_board()
    for url, params in (
        (f"/api/v1/evaluations/{board['slow'].id}", {}),
        (f"/api/v1/submissions/{board['slow'].submission_id}", {}),
        ("/api/v1/leaderboard/kernels", {"task": GEMM}),
        ("/api/v1/leaderboard/models", {"arch": "sm_90a"}),
        ("/api/v1/leaderboard/charts/distribution", {"arch": "sm_90a"}),
    ):
        response = client.get(url, {**params, "v": "3"})
        assert response.status_code == 400, url
        assert "use one of: 1, 2" in response.json()["error"], url


def test_api_doc_lists_every_field_and_version_1_name():
    from django.conf import settings

    text = (settings.BASE_DIR / "docs" / "api.md").read_text()
    for name in (*serializers.MEASUREMENT_FIELDS, *board_serializers.KERNEL_FIELDS, *board_serializers.MODEL_FIELDS):
        assert f"`{name}`" in text, name
    for alias in serializers.DEPRECATED_ALIASES:
        assert f"`{alias}`" in text, alias
    assert "`?v=2`" in text and "`?v=1`" in text


def test_api_page_renders_the_doc_with_a_curl_example(client):
    response = client.get("/api/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "$PTXBENCH_TOKEN" in html and 'href="/accounts/tokens/"' in html
    assert html.count("<h1>Public JSON API</h1>") == 1  # docs/api.md's title, rendered once
    doc = html.split('id="api-doc"')[1].split("</article>")[0]
    assert "<script" not in doc  # Markdown rendered with raw HTML escaped


def test_tokens_page_shows_an_example(client):
    account = lf.user("tia")
    client.force_login(account)
    html = client.get("/accounts/tokens/").content.decode()
    assert 'id="token-example"' in html and "$PTXBENCH_TOKEN" in html


# --------------------------------------------------------------------------- declared input schemas


def test_schema_refuses_unknown_fields_wrong_types_and_out_of_bounds():
    from portal.core import schema

    fields = (
        schema.Field("task", (str,), required=True, max_length=5),
        schema.Field("force", (bool,)),
        schema.Field("turns", (int,), minimum=1, maximum=8),
    )
    assert schema.validate({"task": "gemm"}, fields) == {"task": "gemm"}
    for body, message in [
        ({}, "field 'task' is required"),
        ({"task": "gemm", "sorce": "x"}, "unknown field(s): sorce"),
        ({"task": 3}, "field 'task' has the wrong type (expected string)"),
        ({"task": "gemm_n7168"}, "longer than 5"),
        ({"task": "gemm", "force": "yes"}, "field 'force' has the wrong type"),
        ({"task": "gemm", "turns": True}, "field 'turns' has the wrong type"),  # a bool is never a number
        ({"task": "gemm", "turns": 9}, "at most 8"),
    ]:
        with pytest.raises(schema.SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
            schema.validate(body, fields)


def test_submission_endpoint_validates_its_declared_schema(client):
    from tests.support.factories import make_token, sync_catalog

    sync_catalog()
    token = make_token(lf.user("uma"))
    for body, message in [
        ({"task": GEMM, "arch": "sm_90a", "source": "x", "priority": 1}, "unknown field(s): priority"),
        ({"task": GEMM, "arch": "sm_90a", "source": ["x"]}, "field 'source' has the wrong type"),
        ({"task": GEMM, "arch": "sm_90a", "source": "x", "force": "true"}, "field 'force' has the wrong type"),
    ]:
        response = client.post(
            "/api/v1/submissions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 400 and message in response.json()["error"], body
