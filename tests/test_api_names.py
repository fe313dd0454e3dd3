"""One name per field across endpoints (deprecated aliases kept for one release), and the /api/ page."""

from __future__ import annotations

import pytest

from portal.core import serializers
from portal.leaderboard import serializers as board_serializers
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board

pytestmark = pytest.mark.django_db


def test_evaluation_board_and_submission_call_each_field_by_one_name(client):
    board = mixed_board()
    evaluation = board["mid"]
    result = client.get(f"/api/v1/evaluations/{evaluation.id}").json()["result"]
    (row,) = [
        r for r in client.get("/api/v1/leaderboard/kernels", {"task": GEMM}).json()["rows"] if r["name"] == "mid.cu"
    ]
    submission = client.get(f"/api/v1/submissions/{evaluation.submission_id}").json()
    for field in serializers.MEASUREMENT_FIELDS:
        assert result[field] == row[field], field
        assert submission["evaluations"][0]["result"][field] == result[field], field
    assert result["speedup"] == 1.3 and result["gpu_name"] == "NVIDIA H200"
    # 500 TFLOP/s over the H200's datasheet peak (evaluator/peaks.py), whatever fraction the verdict carried
    assert result["speedup_ci_low"] == pytest.approx(1.3 * 0.98) and result["peak_fraction"] == pytest.approx(
        500 / 989.4
    )
    assert result["verdict_phrase"] == "correct · verified · full"


def test_deprecated_aliases_carry_the_same_values(client):
    board = mixed_board()
    result = client.get(f"/api/v1/evaluations/{board['slow'].id}").json()["result"]
    assert result["speedup_ci95"] == [result["speedup_ci_low"], result["speedup_ci_high"]]
    assert result["fraction_of_peak"] == result["peak_fraction"]
    assert result["gpu"] == result["gpu_name"]
    assert result["review"] == result["review_state"]
    assert set(serializers.DEPRECATED_ALIASES) >= {"speedup_ci95", "fraction_of_peak", "gpu", "review"}


def test_api_doc_lists_every_field_and_alias():
    from django.conf import settings

    text = (settings.BASE_DIR / "docs" / "api.md").read_text()
    for name in (*serializers.MEASUREMENT_FIELDS, *board_serializers.KERNEL_FIELDS, *board_serializers.MODEL_FIELDS):
        assert f"`{name}`" in text, name
    for alias in serializers.DEPRECATED_ALIASES:
        assert f"`{alias}`" in text, alias


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
