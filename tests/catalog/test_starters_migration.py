"""The migration from one starter column per language to starters keyed by language keeps every task's starters
and its CUDA signature, and going back writes the columns again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("catalog", "0002_task_starter_triton")]
AFTER = [("catalog", "0003_task_starters_signatures")]
OLD_ROW = {"starter": "// cuda starter\n", "starter_triton": "# triton starter\n", "run_signature": "void run(int a)"}


def _migrate(target: list[tuple[str, str]]):
    MigrationExecutor(connection).migrate(target)
    return MigrationExecutor(connection).loader.project_state(target).apps


def _latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _old_task(apps, slug: str, **columns):
    return apps.get_model("catalog", "Task").objects.create(
        slug=slug, op_type="gemm", group="gemm", definition={}, reference="", content_sha256="x", **columns
    )


@pytest.mark.django_db(transaction=True)
def test_starters_and_signature_move_into_the_objects_and_back():
    try:
        old = _migrate(BEFORE)
        _old_task(old, "both", **OLD_ROW)
        _old_task(old, "cuda_only", starter="// only\n", starter_triton="", run_signature="void run()")
        new = _migrate(AFTER)
        Task = new.get_model("catalog", "Task")
        both, cuda_only = Task.objects.get(slug="both"), Task.objects.get(slug="cuda_only")
        assert both.starters == {"cuda": OLD_ROW["starter"], "triton": OLD_ROW["starter_triton"]}
        assert both.signatures == {"cuda": OLD_ROW["run_signature"]}
        assert cuda_only.starters == {"cuda": "// only\n"}  # no empty entry for a language without a starter

        back = _migrate(BEFORE).get_model("catalog", "Task").objects.get(slug="both")
        assert {column: getattr(back, column) for column in OLD_ROW} == OLD_ROW
        assert back.content_sha256 == ""  # the next sync rewrites the row
    finally:
        _latest()
