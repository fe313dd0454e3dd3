"""A kernel upload ranks only after a second, hidden evaluation with a secret seed passes; the submitter
sees only pass or fail for it, and nothing of it leaks through pages, the API or evidence downloads."""

from __future__ import annotations

import django_rq
import pytest

from portal.core.verdict_record import parse_verdict
from portal.leaderboard import cache
from portal.submissions.models import Evaluation
from portal.submissions.services import evaluation_claim, evaluation_record_verdict, submission_create
from tests.support import leaderboard_factories as lf
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db(transaction=True)


def _finish(evaluation: Evaluation, status: str, speedup: float = 1.1) -> None:
    claimed = evaluation_claim(evaluation_id=str(evaluation.id), worker_name="w")
    assert claimed is not None
    document = lf.verdict(
        task_slug=GEMM, arch="sm_90a", source=evaluation.submission.source, status=status, speedup=speedup
    )
    assert evaluation_record_verdict(
        evaluation_id=str(evaluation.id), worker_name="w", verdict=document, record=parse_verdict(document), files={}
    )


@pytest.fixture
def upload(settings, tmp_path):
    settings.ARTIFACTS_DIR = tmp_path
    cache.clear_process_cache()
    sync_catalog()
    user = make_user("carol")
    from portal.catalog.models import Task

    result = submission_create(
        user=user, task=Task.objects.get(slug=GEMM), arch="sm_90a", source=starter_source(), name="fast one"
    )
    return user, result.submission, result.evaluation


def _board(client) -> list[str]:
    rows = client.get(f"/api/v1/leaderboard/kernels?task={GEMM}&arch=sm_90a").json()["rows"]
    return [r["name"] for r in rows]


def test_passing_upload_starts_a_hidden_check_and_ranks_only_after_it_passes(client, upload):
    user, submission, public = upload
    _finish(public, "PASSED")
    hidden = submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN)
    assert hidden.state == Evaluation.State.QUEUED and len(hidden.seed) == 32
    assert str(hidden.id) in django_rq.get_queue("gpu-sm90").get_job_ids()
    assert "fast one" not in _board(client)

    body = client.get(f"/api/v1/submissions/{submission.id}").json()
    assert body["ranked_check"]["state"] == "pending"
    assert [e["id"] for e in body["evaluations"]] == [str(public.id)]  # the hidden one is not listed
    assert hidden.seed not in str(body)
    assert client.get(f"/api/v1/evaluations/{hidden.id}").status_code == 404
    assert client.get(f"/evidence/evaluations/{hidden.id}/").status_code == 404

    _finish(hidden, "PASSED")
    assert "fast one" in _board(client)
    html = client.get(f"/submissions/{submission.id}/").content.decode()
    assert "Ranked check:" in html and "passed on fresh inputs" in html
    assert hidden.seed not in html


def test_failed_hidden_check_keeps_the_kernel_off_the_board_and_says_only_failed(client, upload):
    _, submission, public = upload
    _finish(public, "PASSED")
    hidden = submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN)
    _finish(hidden, "INCORRECT_NUMERICAL")
    assert "fast one" not in _board(client)
    check = client.get(f"/api/v1/submissions/{submission.id}").json()["ranked_check"]
    assert check == {"state": "failed", "message": "failed on fresh inputs from a secret seed: not ranked"}
    html = client.get(f"/submissions/{submission.id}/").content.decode()
    assert "INCORRECT_NUMERICAL" not in html  # the public verdict passed; the hidden details stay hidden


def test_failing_upload_gets_no_hidden_check(upload):
    _, submission, public = upload
    _finish(public, "INCORRECT_NUMERICAL")
    assert not submission.evaluations.filter(purpose=Evaluation.Purpose.HIDDEN).exists()


def test_hidden_check_is_started_once(upload):
    _, submission, public = upload
    _finish(public, "PASSED")
    forced = submission.evaluations.create(queue="gpu-sm90")  # an operator re-runs the public evaluation
    _finish(forced, "PASSED")
    assert submission.evaluations.filter(purpose=Evaluation.Purpose.HIDDEN).count() == 1


def test_submission_bundle_leaves_the_hidden_check_out(client, upload):
    import io
    import zipfile

    _, submission, public = upload
    _finish(public, "PASSED")
    hidden = submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN)
    _finish(hidden, "PASSED")
    response = client.get(f"/evidence/submissions/{submission.id}/bundle.zip")
    bundle = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))  # streamed
    everything = " ".join(bundle.namelist()) + bundle.read("MANIFEST.json").decode()
    assert str(public.id) in everything
    assert str(hidden.id) not in everything and hidden.seed not in everything


def test_api_token_user_sees_the_same(client, upload):
    user, submission, _ = upload
    token = make_token(user)
    body = client.get(f"/api/v1/submissions/{submission.id}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert body["ranked_check"]["state"] == "not_started"
