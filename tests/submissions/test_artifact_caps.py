"""Evidence files stored per evaluation and per user are capped (portal/submissions/
artifact_caps.py). Before: a Triton upload left 4 x 60 MiB files stored for good, about 7 GiB an hour per account at
the default evaluation quota. Now a file over ARTIFACT_BYTES_PER_EVALUATION or ARTIFACT_BYTES_PER_USER_PER_DAY is
not stored, the evaluation records which and why, its page and the API say so, and nothing fails."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from portal.core.verdict_record import parse_verdict
from portal.submissions.evidence_files import EvidenceFile, collect
from portal.submissions.models import Artifact, Evaluation, Submission
from portal.submissions.services import evaluation_record_verdict
from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
KiB = 1024


def _running(owner) -> Evaluation:
    source = f"// kernel of {owner.username if owner else 'nobody'}\n"
    submission = Submission.objects.create(
        user=owner, task=lf.task(), arch="sm_90a", name="k.cu", source=source,
        source_sha256=lf.verdict(source=source)["source_sha256"], source_bytes=len(source),
    )  # fmt: skip
    return Evaluation.objects.create(submission=submission, state="running", queue="gpu-sm90", worker_name="w")


def _record(evaluation: Evaluation, **sizes: int) -> Evaluation:
    """Record a verdict with the source, the verdict and one file of each given size (named by the keyword)."""
    document = lf.verdict(source=evaluation.submission.source)
    files = [
        EvidenceFile("kernel.cu", evaluation.submission.source.encode(), "source", required=True),
        EvidenceFile("verdict.json", json.dumps(document).encode(), "evaluator", required=True),
        *(EvidenceFile(name.replace("_", "."), b"x" * size, "evaluator") for name, size in sizes.items()),
    ]
    assert evaluation_record_verdict(
        evaluation_id=str(evaluation.id), worker_name="w", verdict=document, record=parse_verdict(document), files=files
    )
    evaluation.refresh_from_db()
    return evaluation


@override_settings(ARTIFACT_BYTES_PER_EVALUATION=64 * KiB)
def test_files_past_the_evaluation_cap_are_not_kept_and_the_page_says_why(client):
    sync_catalog()
    evaluation = _record(_running(lf.user("mallory")), kernel_sass=40 * KiB, ncu_raw_csv=30 * KiB, big_log=20 * KiB)
    stored = set(evaluation.artifacts.values_list("name", flat=True))
    assert stored == {"kernel.cu", "verdict.json", "kernel.sass", "big.log"}  # 30 KiB more would pass 64 KiB
    (left_out,) = evaluation.artifacts_not_kept
    assert left_out["name"] == "ncu.raw.csv" and left_out["bytes"] == 30 * KiB
    assert "ARTIFACT_BYTES_PER_EVALUATION" in left_out["reason"] and "65536 bytes" in left_out["reason"]
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    notice = page.split('id="not-kept"', 1)[1].split("</div>", 1)[0]
    assert "1 file of this evaluation was not kept" in notice and "ncu.raw.csv" in notice
    assert "this evaluation&#x27;s cap" in notice or "this evaluation's cap" in notice
    api = client.get(f"/api/v1/evaluations/{evaluation.id}", {"v": 2})
    assert api.json()["result"]["artifacts_not_kept"] == evaluation.artifacts_not_kept


@override_settings(ARTIFACT_BYTES_PER_EVALUATION=1 << 30, ARTIFACT_BYTES_PER_USER_PER_DAY=100 * KiB)
def test_a_users_files_are_capped_over_a_day_and_kept_again_after_it():
    sync_catalog()
    mallory, ada = lf.user("mallory"), lf.user("ada")
    first = _record(_running(mallory), kernel_sass=60 * KiB)
    second = _record(_running(mallory), kernel_sass=60 * KiB)
    assert first.artifacts.filter(name="kernel.sass").exists() and not first.artifacts_not_kept
    assert not second.artifacts.filter(name="kernel.sass").exists()
    (left_out,) = second.artifacts_not_kept
    assert "ARTIFACT_BYTES_PER_USER_PER_DAY" in left_out["reason"]
    # The source and the verdict are kept whatever the caps: they are the record.
    assert set(second.artifacts.values_list("name", flat=True)) == {"kernel.cu", "verdict.json"}
    # Someone else's budget is their own; a reference import (no user) has none.
    assert _record(_running(ada), kernel_sass=60 * KiB).artifacts.filter(name="kernel.sass").exists()
    assert _record(_running(None), kernel_sass=200 * KiB).artifacts.filter(name="kernel.sass").exists()
    # A day later the window has moved on.
    Artifact.objects.filter(evaluation__submission__user=mallory).update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    assert _record(_running(mallory), kernel_sass=60 * KiB).artifacts.filter(name="kernel.sass").exists()


def test_the_runner_reads_no_more_than_the_evaluation_cap(tmp_path):
    """The work folder's files are sized before they are read: one over the cap is named, not loaded."""
    keep = tmp_path / "evaluator"
    (keep / "logs").mkdir(parents=True)
    (keep / "logs" / "ncu-source.csv").write_bytes(b'"a","b"\n' * 40_000)  # 320 000 bytes
    (keep / "logs" / "ncu-raw.csv").write_bytes(b'"a","b"\n')
    document = lf.verdict()
    evidence = collect(
        keep,
        source_name="kernel.cu",
        source="// kernel\n",
        verdict_bytes=json.dumps(document).encode(),
        record=parse_verdict(document),
        max_bytes=64 * KiB,
        log_max_bytes=KiB,
    )
    assert [f.name for f in evidence.files] == ["kernel.cu", "verdict.json", "compile.log", "ncu-raw.csv"]
    (left_out,) = evidence.not_kept
    assert left_out.name == "ncu-source.csv" and left_out.size == 320_000
    assert "ARTIFACT_BYTES_PER_EVALUATION" in left_out.reason
