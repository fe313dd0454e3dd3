"""The data migration that makes each stored row's fraction_of_peak its verdict's own: a value the portal computed
itself becomes the verdict's figure, and a schema_version 1 verdict's becomes none ("not recorded")."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from portal.submissions.models import Evaluation
from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

MIGRATION = importlib.import_module("portal.submissions.migrations.0008_fraction_of_peak_as_the_verdict_says")

pytestmark = pytest.mark.django_db


def test_stored_columns_become_the_verdicts_figure_or_not_recorded():
    sync_catalog()
    current = lf.evaluation(owner=lf.user("ada"), name="current.cu", tflops=600.0, peak=0.42)
    older = lf.evaluation(owner=lf.user("bob"), name="older.cu", tflops=600.0, peak=600.0 / 803.5)
    # As the portal recorded them before: 600 TFLOP/s over its own lookup of the H200's peak.
    Evaluation.objects.filter(id__in=[current.id, older.id]).update(fraction_of_peak=600.0 / 989.4)
    Evaluation.objects.filter(id=older.id).update(verdict={**older.verdict, "schema_version": 1})
    MIGRATION.forwards(apps, None)
    assert Evaluation.objects.get(id=current.id).fraction_of_peak == 0.42
    assert Evaluation.objects.get(id=older.id).fraction_of_peak is None
    assert Evaluation.objects.get(id=older.id).tflops == 600.0  # nothing else changes
