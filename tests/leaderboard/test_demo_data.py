"""`seed_leaderboard --demo`: a small set, every row flagged synthetic, figures within the GPU's peak, and a
"synthetic demo" banner on the pages while such rows exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.checks.physical_limits import peak_for_inputs
from portal.core import context_processors
from portal.leaderboard.management.commands.seed_leaderboard import PEAK_TFLOPS
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_demo_seed_is_small_flagged_physical_and_bannered(client, demo_leaderboard):
    from portal.agent.models import ModelRun
    from portal.submissions.models import Evaluation, Submission

    sync_catalog()
    context_processors.reset()
    assert 'id="synthetic-demo"' not in client.get("/").content.decode()
    demo_leaderboard()
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


def test_the_demo_copied_back_is_the_database_the_seed_command_leaves(demo_seed_file):
    """tests/support/demo_seed.py: the tests that read the demo get the rows of the session's first seed, copied
    back. From the same starting point the copy must leave exactly what the command leaves, table by table."""
    from django.contrib.auth.models import User
    from django.db import transaction

    from portal.accounts.models import Profile
    from portal.agent.models import ModelRun, Turn
    from portal.leaderboard.models import LeaderboardVersion
    from portal.submissions.models import Submission
    from tests.support import demo_seed
    from tests.support.factories import make_user

    sync_catalog()
    make_user("before-the-seed")  # the seed's keys start above other rows
    empty = demo_seed.dump()
    with transaction.atomic():
        captured = demo_seed.seed_and_capture()
        seeded = demo_seed.dump()
        transaction.set_rollback(True)
    assert captured is not None and len(captured.tables) >= 8
    assert demo_seed.dump() == empty
    with transaction.atomic():
        assert demo_seed.replay(captured)
        assert demo_seed.dump() == seeded
        transaction.set_rollback(True)

    # Elsewhere the tables hold other rows: the copy's keys move past them and its rows still point at each other.
    make_user("after-the-capture")
    assert demo_seed.replay(captured)
    seed_users = User.objects.filter(username__startswith="seed-")
    assert seed_users.count() == 8 and Profile.objects.count() == 8
    assert set(Profile.objects.values_list("user", flat=True)) == set(seed_users.values_list("pk", flat=True))
    assert not Submission.objects.exclude(user__in=seed_users).exists()
    assert not ModelRun.objects.exclude(user__in=seed_users).exists()
    assert Turn.objects.filter(evaluation__isnull=False).count() == Submission.objects.filter(kind="agent").count()
    # and, as the command does, starts new cache generations of the boards
    assert [(scope,) for scope in LeaderboardVersion.objects.values_list("scope", flat=True).order_by("scope")] == (
        seeded[LeaderboardVersion._meta.db_table]
    )
    if not demo_seed_file.exists():
        demo_seed.keep(demo_seed_file, captured)  # the session's other demo seeds copy these rows
