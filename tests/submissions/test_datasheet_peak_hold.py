"""A result the evaluator held as beyond the GPU's physical limit (evaluator/checks/integrity.py, beyond_physical_limit) is
held when the worker records it (never ranked, the evaluator's reason shown to reviewers); the portal takes the
verdict's hold and does not re-check the rate against a peak of its own."""

from __future__ import annotations

import pytest

from evaluator.checks import peaks
from evaluator.checks.integrity import BEYOND_PHYSICAL_LIMIT
from portal.core.verdict_record import parse_verdict
from portal.leaderboard import cache
from portal.submissions.models import Evaluation
from portal.submissions.services import evaluation_claim, evaluation_record_verdict, submission_create
from tests.support import leaderboard_factories as lf
from tests.support.factories import GEMM, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db(transaction=True)

H200_PEAK = peaks.peak_tflops("NVIDIA H200") or 989.4
BEYOND = "1286 TFLOP/s is above the 989.4 TFLOP/s dense bf16 tensor-core peak of the NVIDIA H200 (datasheet)"


def _record(evaluation: Evaluation, tflops: float) -> Evaluation:
    assert evaluation_claim(evaluation_id=str(evaluation.id), worker_name="w") is not None
    # Speedup, latencies and CI agree with each other and sit under the plausibility bound: only the throughput
    # can hold this row.
    document = lf.verdict(source=evaluation.submission.source, speedup=1.2, tflops=tflops, gpu="NVIDIA H200")
    if tflops > H200_PEAK:  # as the evaluator words it (physical_limit_hold)
        document["integrity"] = {"holds": [{"code": BEYOND_PHYSICAL_LIMIT, "message": BEYOND}]}
    record = parse_verdict(document)
    assert evaluation_record_verdict(
        evaluation_id=str(evaluation.id), worker_name="w", verdict=document, record=record, files={}
    )
    return Evaluation.objects.get(id=evaluation.id)


def _upload(name: str, tflops: float) -> Evaluation:
    result = submission_create(
        user=make_user(name),
        task=lf.task(GEMM),
        arch="sm_90a",
        source=starter_source() + f"// {name}\n",
        name=name,
    )
    public = _record(result.evaluation, tflops)
    _record(result.submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN), tflops)  # its ranked check
    return public


def test_a_row_above_the_datasheet_peak_is_held_and_never_ranked(client, settings, tmp_path):
    """Mutation caught: the verdict's integrity holds not turned into review_state in portal/submissions/summary.py
    (the row is then recorded unheld and ranks beside the honest one)."""
    settings.ARTIFACTS_DIR = tmp_path
    cache.clear_process_cache()
    sync_catalog()
    honest = _upload("honest", tflops=0.8 * H200_PEAK)
    impossible = _upload("impossible", tflops=1.3 * H200_PEAK)
    assert (honest.review_state, honest.review_reason) == ("", "")
    assert impossible.review_state == "held"
    assert impossible.review_reason == f"integrity ({BEYOND_PHYSICAL_LIMIT}): {BEYOND}"
    rows = client.get(f"/api/v1/leaderboard/kernels?task={GEMM}&arch=sm_90a").json()["rows"]
    assert [r["name"] for r in rows] == ["honest"]
