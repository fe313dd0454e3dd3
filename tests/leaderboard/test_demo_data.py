"""`seed_leaderboard --demo`: a small set, every row flagged synthetic, figures within the GPU's peak, and a
"synthetic demo" banner on the pages while such rows exist."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluator.both_sides.taskdata import load_task
from evaluator.checks.physical_limits import peak_for_inputs
from portal.core import context_processors
from portal.leaderboard.management.commands.seed_leaderboard import PEAK_TFLOPS
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_demo_seed_is_small_flagged_physical_and_bannered(client):
    from portal.agent.models import ModelRun
    from portal.submissions.models import Evaluation, Submission

    sync_catalog()
    context_processors.reset()
    assert 'id="synthetic-demo"' not in client.get("/").content.decode()
    call_command("seed_leaderboard", "--demo", stdout=StringIO())
    assert ModelRun.objects.count() == 16 and Submission.objects.filter(kind="kernel").count() == 600
    assert not Submission.objects.filter(is_synthetic=False).exists()
    assert not ModelRun.objects.filter(is_synthetic=False).exists()
    for evaluation in Evaluation.objects.exclude(tflops=None).select_related("submission__task"):
        # within the GPU's dense peak for the task's dtype (an FP8 task's is twice the BF16 one)
        definition = load_task(TASKS / evaluation.submission.task.slug).definition
        peak, _ = peak_for_inputs(definition, evaluation.gpu_name)
        assert evaluation.tflops <= (peak or PEAK_TFLOPS[evaluation.gpu_name])
        assert 0 < evaluation.fraction_of_peak < 1
    context_processors.reset()
    for url in ("/", "/leaderboard/", "/leaderboard/kernels/", "/tasks/"):
        page = client.get(url).content.decode()
        assert 'id="synthetic-demo"' in page, url
    context_processors.reset()
