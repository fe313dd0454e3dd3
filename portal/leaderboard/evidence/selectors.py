"""Builders for the evidence downloads (who may see what: docs/visibility.md): artifacts checked against
their sha256, zip bundles per submission or model run, trajectories as JSON, traces as JSONL."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Model

from portal.core import serializers
from portal.leaderboard.evidence.downloads import (
    BUNDLE_FORMAT,
    Bundle,
    BundleFile,
    StoredFile,
    build_bundle,
    checked,
    environment_of,
    to_jsonl,
    trace_lines,
)
from portal.submissions import artifacts as artifact_store
from portal.submissions.models import Artifact, Evaluation, Submission, kernel_file_name

# The manifest's origin of files the portal writes into a bundle from its own rows (traces, trajectories).
PORTAL_ORIGIN = "portal"
# Field names never copied into a download, whatever model they appear on.
_SECRET_WORDS = ("secret", "password", "api_key", "apikey", "credential")
# The endpoint URL may carry credentials in its path or query: bundles show only its host, as pages do.
_RUN_OMITTED = ("base_url",)


def artifact_bytes(artifact: Artifact) -> bytes:
    """The stored file, checked against the sha256 recorded when it was written."""
    return checked(artifact_store.read(artifact), artifact.sha256, f"artifact {artifact.evaluation_id}/{artifact.name}")


def _workload_catalog(task) -> dict[str, dict[str, Any]]:
    return {str(w.uuid): {"axes": w.axes, "inputs": w.inputs} for w in task.workloads.all()}


def traces_jsonl(evaluations: list[Evaluation]) -> bytes:
    """FlashInfer Trace JSONL: one line per workload result of each evaluation's verdict."""
    lines = []
    catalogs: dict[int, dict[str, dict[str, Any]]] = {}
    for evaluation in evaluations:
        submission = evaluation.submission
        if submission.task_id not in catalogs:
            catalogs[submission.task_id] = _workload_catalog(submission.task)
        lines.extend(
            trace_lines(
                definition=submission.task.slug,
                solution=solution_name(submission),
                verdict=evaluation.verdict_record,
                workloads=catalogs[submission.task_id],
                is_synthetic=submission.is_synthetic,
            )
        )
    return to_jsonl(lines)


def solution_name(submission: Submission) -> str:
    """A stable FlashInfer solution name: the label, made unique by the submission id."""
    label = "".join(c if c.isalnum() or c in "_-." else "_" for c in (submission.name or "kernel"))[:80]
    return f"{label}-{submission.id}"


def stored_file(artifact: Artifact, path: str) -> StoredFile:
    """An artifact as a bundle entry: read from disk while the zip is written, checked against its sha256."""
    return StoredFile(
        path,
        artifact_store.path_of(artifact),
        artifact.sha256,
        artifact.size,
        artifact.origin,
        csv=artifact.name.lower().endswith(".csv"),
    )


def _evaluation_files(evaluation: Evaluation, prefix: str, left_out: list[dict[str, str]]) -> list[StoredFile]:
    """The evaluation's artifacts whose origin is recorded. Files stored before origins were recorded are left out
    of bundles (named in the manifest's `left_out`): nothing says the evaluator wrote them, and a bundle's files are
    taken as evidence by what reads it (`ptxbench download`). Their page still lists them, labelled."""
    files = []
    for artifact in evaluation.artifacts.order_by("name"):
        path = f"{prefix}/{artifact.name}"
        if artifact.origin == Artifact.Origin.UNKNOWN:
            left_out.append({"path": path, "reason": "stored before file origins were recorded"})
        else:
            files.append(stored_file(artifact, path))
    return files


def _evaluation_meta(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "id": str(evaluation.id),
        "state": evaluation.state,
        **serializers.measurement(evaluation, arch=evaluation.submission.arch),  # named as BUNDLE_FORMAT says
        "review_state": evaluation.review_state,
        "finished_at": evaluation.finished_at,
        "evaluator_version": evaluation.evaluator_version,
        "environment": environment_of(evaluation.verdict_record),
    }


def submission_bundle(submission: Submission) -> Bundle:
    """The source (kernel.cu or kernel.py), every evaluation's artifacts and traces, and MANIFEST.json (sha256 sums,
    environment)."""
    # Hidden ranked checks stay out: their inputs and results are known only as pass/fail.
    evaluations = list(submission.evaluations.filter(purpose=Evaluation.Purpose.PUBLIC).order_by("created_at"))
    for evaluation in evaluations:
        evaluation.submission = submission
    files: list[BundleFile | StoredFile] = [
        BundleFile(kernel_file_name(submission.language), submission.source.encode("utf-8"), Artifact.Origin.SOURCE)
    ]
    left_out: list[dict[str, str]] = []
    for evaluation in evaluations:
        files.extend(_evaluation_files(evaluation, f"evaluations/{evaluation.id}", left_out))
    traces = traces_jsonl([e for e in evaluations if e.verdict])
    if traces:
        files.append(BundleFile("traces.jsonl", traces, PORTAL_ORIGIN))
    finished = [e for e in evaluations if e.verdict]
    meta = {
        "kind": "submission",
        "submission": {
            "id": submission.id,
            "task": submission.task.slug,
            "arch": submission.arch,
            "kind": submission.kind,
            "name": submission.name,
            "submitter": submission.user.username if submission.user else "",
            "source_sha256": submission.source_sha256,
            "created_at": submission.created_at,
            "is_synthetic": submission.is_synthetic,
        },
        "evaluations": [_evaluation_meta(e) for e in evaluations],
        "environment": environment_of(finished[-1].verdict_record) if finished else {},
        "left_out": left_out,
    }
    return build_bundle(files, meta=meta)


# --------------------------------------------------------------------------- model runs


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return float(value)
    return value


def record_fields(obj: Model) -> dict[str, Any]:
    """Every concrete field of a row as JSON data (foreign keys as ids), minus anything secret-looking."""
    out = {}
    for f in obj._meta.concrete_fields:
        if any(word in f.name.lower() for word in _SECRET_WORDS):
            continue
        out[f.attname] = _plain(f.value_from_object(obj))
    return out


def _trajectories(run) -> list:
    from portal.agent.models import Trajectory

    return list(
        Trajectory.objects.filter(run=run)
        .select_related("task")
        .prefetch_related("turns__evaluation")
        .order_by("task__slug", "index")
    )


def _turns(trajectory) -> list:
    return sorted(trajectory.turns.all(), key=lambda t: t.index)


def _run_document(run, trajectories: list) -> dict[str, Any]:
    run_fields = {k: v for k, v in record_fields(run).items() if k not in _RUN_OMITTED}
    run_fields["endpoint_host"] = run.endpoint_host if run.base_url else "imported"
    run_fields.pop("user_id", None)  # the user name says who; account ids are not published
    run_fields["user"] = run.user.username if run.user else ""
    return {
        "format": BUNDLE_FORMAT,  # every turn's columns as named in the database: its `speedup_factor`
        "run": run_fields,
        "trajectories": [
            {
                **record_fields(t),
                "task": t.task.slug,
                # Each turn's columns, and its published status (derived from `outcome` and `verdict_status`).
                "turns": [{**record_fields(turn), "status": turn.published_status} for turn in _turns(t)],
            }
            for t in trajectories
        ],
    }


def trajectories_json(run) -> bytes:
    return json.dumps(_run_document(run, _trajectories(run)), indent=2, sort_keys=True, default=str).encode()


def run_bundle(run) -> Bundle:
    """trajectories.json plus each turn's artifacts, and MANIFEST.json with sha256 sums and the environment."""
    trajectories = _trajectories(run)
    document = _run_document(run, trajectories)
    trajectories_data = json.dumps(document, indent=2, sort_keys=True, default=str).encode()
    files: list[BundleFile | StoredFile] = [BundleFile("trajectories.json", trajectories_data, PORTAL_ORIGIN)]
    left_out: list[dict[str, str]] = []
    environment: dict[str, Any] = {}
    for trajectory in trajectories:
        for turn in _turns(trajectory):
            evaluation = turn.evaluation
            if evaluation is None:
                continue
            prefix = f"{trajectory.task.slug}/trajectory-{trajectory.index}/turn-{turn.index}"
            files.extend(_evaluation_files(evaluation, prefix, left_out))
            environment = environment or environment_of(evaluation.verdict_record)
    meta = {
        "kind": "model_run",
        "run": {
            "id": run.id,
            "model": run.model,
            "display_name": run.display_name,
            "arch": run.arch,
            "gpu_name": run.gpu_name,
            "user": run.user.username if run.user else "",
            "created_at": run.created_at,
            "finished_at": run.finished_at,
            "trajectories_per_task": run.trajectories_per_task,
            "turns": run.turns,
            "is_synthetic": run.is_synthetic,
        },
        "environment": environment,
        "left_out": left_out,
    }
    return build_bundle(files, meta=meta)
