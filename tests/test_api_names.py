"""One name per field across endpoints (deprecated aliases kept for one release), and the /api/ page."""

from __future__ import annotations

import pytest

from portal.core import serializers
from tests import leaderboard_factories as lf
from tests.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.ranking_fixtures import mixed_board

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
    assert result["speedup_ci_low"] == pytest.approx(1.3 * 0.98) and result["peak_fraction"] == 0.5
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
    for name in (*serializers.MEASUREMENT_FIELDS, *serializers.KERNEL_FIELDS, *serializers.MODEL_FIELDS):
        assert f"`{name}`" in text, name
    for alias in serializers.DEPRECATED_ALIASES:
        assert f"`{alias}`" in text, alias


def test_api_page_renders_the_doc_with_a_curl_example(client):
    response = client.get("/api/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "$PTXBENCH_TOKEN" in html and 'href="/accounts/tokens/"' in html
    assert "<h1>Public JSON API</h1>" in html or "Public JSON API" in html
    assert "<script" not in html.split('id="api-doc"')[1]  # Markdown rendered with raw HTML escaped


def test_tokens_page_shows_an_example(client):
    account = lf.user("tia")
    client.force_login(account)
    html = client.get("/accounts/tokens/").content.decode()
    assert 'id="token-example"' in html and "$PTXBENCH_TOKEN" in html
