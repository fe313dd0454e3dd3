"""The board resources' JSON shapes: a kernel board entry (`kernel_entry`, also each CSV line), a model run's row
on a board (`run_entry`) and a model board entry (`model_entry`), built from ranking.py's rows with the shared
measurement fields and timestamps of portal/core/serializers.py; the query a board answers (`query_entry`) and a
board as CSV (`to_csv`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from portal.core.api_versions import CURRENT_API_VERSION
from portal.core.serializers import (
    MEASUREMENT_FIELDS,
    V1_NAMES,
    V2_ONLY,
    iso,
    measurement,
    peak_denominator,
    to_version,
)
from portal.leaderboard.boards import ranking
from portal.leaderboard.boards.selectors import BoardQuery


def query_entry(query: BoardQuery) -> dict[str, Any]:
    """The query a board or chart answered, echoed in its JSON as `query`."""
    body = {"arch": query.arch, "task": query.task or None, "k": query.k, "gpu": query.gpu or None, "sort": query.sort}
    if query.language:  # boards filtered to one kernel language
        body["language"] = query.language
    return body


KERNEL_FIELDS = (
    "rank",
    "reference",
    "reference_role",
    "name",
    "submitter",
    "language",
    "section",
    *MEASUREMENT_FIELDS,
    "peak_tflops",
    "badge",
    "finished_at",
    "evaluation_id",
    "submission_id",
    "source_sha256",
    "evaluations_of_source",
    "held_reason",
    "is_synthetic",
)


def kernel_fields(v: int = CURRENT_API_VERSION) -> list[str]:
    """The kernel board's CSV columns as the API's version `v` names them."""
    if v >= 2:
        return list(KERNEL_FIELDS)
    return [V1_NAMES.get(f, f) for f in KERNEL_FIELDS if f not in V2_ONLY]


def kernel_entry(row: ranking.KernelRow, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """One kernel board row (JSON row and CSV line), named as the API's version `v` names it."""
    record = {
        "rank": row.rank,
        "reference": row.is_reference,
        "reference_role": row.reference_role or None,  # "expert" or "negative_control" for reference rows
        "name": row.name,
        "submitter": row.submitter,
        "language": row.language,
        "section": row.section,
        **measurement(row, arch=row.arch),
        # the denominator of fraction_of_peak, as the verdict used it (the dense peak for the task's dtype)
        "peak_tflops": peak_denominator(row.tflops, row.fraction_of_peak),
        "badge": row.badge,
        "finished_at": iso(row.finished_at),
        "evaluation_id": row.evaluation_id,
        "submission_id": row.submission_id,
        "source_sha256": row.source_sha256,
        # how many evaluations of this source the row's figures are the median of (ranking.typical_run)
        "evaluations_of_source": row.evaluations_of_source,
        "held_reason": row.held_reason or None,  # section "held": why the row is not ranked
        "is_synthetic": row.is_synthetic,  # made up by seed_leaderboard, never measured
    }
    return to_version(record, v, "kernel")


RUN_FIELDS = (
    "run_id",
    "model",
    "model_id",
    "submitted_by",
    "created_at",
    "gpu_name",
    "language",
    "k",
    "trajectories",
    "correct",
    "correct_arch",
    "correct_rate",
    "correct_arch_rate",
    "speedup",
    "tokens",
    "complete",
    "is_synthetic",
)


def run_entry(row: ranking.ModelRow | ranking.SummaryRow, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """A model run's numbers on a board (one task, or across tasks): pooled counts, their rates, its speedup
    (best on the task; across tasks the geometric mean of the solved tasks' best). Version 1 adds the old names
    `best_speedup` / `geomean_speedup` of that speedup."""
    record = {
        "run_id": row.run_id,
        "model": row.model,
        "model_id": row.model_id,
        "submitted_by": row.submitted_by,
        "created_at": iso(row.created_at),
        "gpu_name": row.gpu_name,
        "language": row.language,
        "k": row.k,
        "trajectories": row.trajectories,
        "correct": row.correct,
        "correct_arch": row.correct_arch,
        "correct_rate": ranking.rate(row.correct, row.trajectories),
        "correct_arch_rate": ranking.rate(row.correct_arch, row.trajectories),
        "speedup": row.speedup,
        "tokens": row.tokens,
        "complete": row.complete,
        "is_synthetic": row.is_synthetic,
    }
    if isinstance(row, ranking.SummaryRow):
        record.update(
            tasks=row.tasks,
            tasks_solved=row.tasks_solved,
            mean_correct=row.mean_correct,
            mean_correct_arch=row.mean_correct_arch,
        )
        return to_version(record, v, "run_across_tasks")
    record.update(task=row.task)
    return to_version(record, v, "run_on_task")


MODEL_FIELDS = (
    "model",
    "model_id",
    "gpu_model",
    "language",
    "k",
    "runs_count",
    "trajectories",
    "correct",
    "correct_arch",
    "correct_rate",
    "correct_arch_rate",
    "correct_arch_rate_mean",
    "correct_arch_rate_ci_low",
    "correct_arch_rate_ci_high",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "speedup_n",
    "tokens",
    "complete",
    "latest_run_id",
    "is_synthetic",
)


def model_entry(entry: ranking.ModelEntry, *, with_runs: bool = True, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """One model board row: a model on one GPU model in one kernel language, its runs folded (the runs listed
    under `runs`)."""
    record = {
        "model": entry.model,
        "model_id": entry.model_id,
        "gpu_model": entry.gpu,
        "language": entry.language,
        "k": entry.k,
        "runs_count": entry.n_runs,
        "trajectories": entry.trajectories,
        "correct": entry.correct,
        "correct_arch": entry.correct_arch,
        "correct_rate": entry.correct_rate,
        "correct_arch_rate": entry.arch_rate,
        "correct_arch_rate_mean": entry.arch_rate_mean,
        "correct_arch_rate_ci_low": entry.arch_rate_ci_low,
        "correct_arch_rate_ci_high": entry.arch_rate_ci_high,
        "speedup": entry.speedup,
        "speedup_ci_low": entry.speedup_ci_low,
        "speedup_ci_high": entry.speedup_ci_high,
        "speedup_n": entry.speedup_n,
        "tokens": entry.tokens,
        "complete": entry.complete,
        "latest_run_id": entry.run_id,
        "is_synthetic": entry.is_synthetic,  # some of its runs were made up by seed_leaderboard
    }
    if with_runs:
        record["runs"] = [run_entry(r, v=v) for r in entry.runs]
    return record


def _csv_cell(value: Any) -> Any:
    # Spreadsheet formula injection: a cell starting with = + - @ (or a tab/CR) is evaluated by Excel and
    # LibreOffice; a leading apostrophe keeps hostile names as text. Numbers pass unchanged.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def to_csv(records: Iterable[dict[str, Any]], columns: list[str]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow([_csv_cell(record.get(c)) for c in columns])
    return buffer.getvalue().encode("utf-8")
