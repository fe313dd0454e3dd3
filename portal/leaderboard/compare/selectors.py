"""Side-by-side comparisons: two models (per-task rates and best speedup at k, per-turn-limit curves) or two
kernels on one task (verdicts, per-workload latency, instruction counts, SASS opcodes). Reads come from the
boards' selectors (the same visibility as the boards) and from `visible_evaluation`, each behind one
helper below so a single visibility module can replace them."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from django.http import Http404

from evaluator.both_sides.verdict import Verdict
from portal.core import serializers
from portal.leaderboard.boards import ranking, selectors
from portal.leaderboard.boards.ranking import ModelRow
from portal.leaderboard.boards.selectors import BadQuery, BoardQuery
from portal.leaderboard.cache import Generation
from portal.leaderboard.charts import turns
from portal.leaderboard.charts.figures import empty_figure, figure_json
from portal.leaderboard.charts.selectors import model_styles
from portal.leaderboard.compare.figures import curves_figure
from portal.submissions import visibility
from portal.submissions.models import Evaluation

KINDS = ("models", "kernels")
MAX_ID_LENGTH = 200


class NotFound(LookupError):
    """A named model or kernel does not exist or may not be shown; the message says which."""


def parse_kind(params) -> str:
    """`kind` when given, else kernels when both ids are evaluation ids, else models."""
    kind = params.get("kind") or ""
    if kind and kind not in KINDS:
        raise BadQuery(f"kind must be one of: {', '.join(KINDS)}")
    if kind:
        return kind
    return "kernels" if all(_is_uuid(params.get(n) or "") for n in ("a", "b")) else "models"


def parse_pair(params) -> tuple[str, str]:
    a, b = (params.get("a") or "").strip(), (params.get("b") or "").strip()
    if not a or not b:
        raise BadQuery("give two things to compare: ?a=...&b=...")
    if len(a) > MAX_ID_LENGTH or len(b) > MAX_ID_LENGTH:
        raise BadQuery(f"an id is at most {MAX_ID_LENGTH} characters")
    if a == b:
        raise BadQuery("a and b are the same; choose two different ones")
    return a, b


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- visibility (one place)


def _visible_model_rows(gen: Generation, *, arch: str, k: int, gpu: str, language: str) -> dict[str, list[ModelRow]]:
    """Model runs the public boards show (not hidden, not banned), task slug -> rows."""
    return selectors.model_rows(gen, arch=arch, k=k, gpu=gpu, language=language)


def _model_turns(gen: Generation, query: BoardQuery) -> list[turns.TrajectoryTurns]:
    """The visible runs' trajectories, folded per turn (the same visibility as the boards)."""
    return turns.trajectories(gen, arch=query.arch, task=query.task, gpu=query.gpu, language=query.language)


def _visible_evaluation(viewer, evaluation_id: str) -> Evaluation:
    """A public evaluation the viewer may see (hidden submissions, banned authors and ranked checks are not)."""
    if not _is_uuid(evaluation_id):
        raise BadQuery(f"{evaluation_id!r} is not an evaluation id (a UUID)")
    try:
        evaluation = visibility.visible_evaluation(viewer, evaluation_id)
    except Http404:
        raise NotFound(f"no evaluation {evaluation_id}") from None
    if evaluation.state != Evaluation.State.DONE:
        raise NotFound(f"evaluation {evaluation_id} has no verdict yet")
    return evaluation


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class TaskCell:
    trajectories: int
    correct: int
    correct_arch: int
    best_speedup: float | None
    runs: int
    languages: tuple[str, ...]  # the kernel languages of the pooled runs


def _languages(rows: list[ModelRow]) -> tuple[str, ...]:
    return tuple(sorted({r.language for r in rows}))


def _cell(rows: list[ModelRow]) -> TaskCell | None:
    if not rows:
        return None
    speeds = [r.best_speedup for r in rows if r.best_speedup is not None]
    return TaskCell(
        trajectories=sum(r.trajectories for r in rows),
        correct=sum(r.correct for r in rows),
        correct_arch=sum(r.correct_arch for r in rows),
        best_speedup=max(speeds) if speeds else None,
        runs=len(rows),
        languages=_languages(rows),
    )


def _cell_json(cell: TaskCell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    return {
        "runs_count": cell.runs,
        "trajectories": cell.trajectories,
        "correct": cell.correct,
        "correct_arch": cell.correct_arch,
        "correct_rate": ranking.rate(cell.correct, cell.trajectories),
        "correct_arch_rate": ranking.rate(cell.correct_arch, cell.trajectories),
        "speedup": cell.best_speedup,  # the best of the model's runs on the task
        "languages": list(cell.languages),
    }


def compare_models(gen: Generation, query: BoardQuery, a: str, b: str) -> dict[str, Any]:
    """Two models (by model id, or by the label people see) on one architecture at k, pooled over their
    visible runs (of one GPU model when `gpu` is given, of one kernel language when `language` is). Raises
    NotFound naming a model with no visible run."""
    tasks = selectors.tasks_for_arch(gen, query.arch)
    by_k = {
        k: _visible_model_rows(gen, arch=query.arch, k=k, gpu=query.gpu, language=query.language)
        for k in ranking.TURN_LIMITS
    }

    def matches(row: ModelRow, name: str) -> bool:
        return name in (row.model_id, row.model)

    models = []
    for name in (a, b):
        rows_at_k = [r for rows in by_k[query.k].values() for r in rows if matches(r, name)]
        if not rows_at_k:
            where = " ".join(x for x in (query.arch, query.gpu, query.language) if x)
            raise NotFound(f"no visible run of model {name!r} on {where}")
        newest = max(rows_at_k, key=lambda r: (r.created_at, r.run_id))
        models.append(
            {
                "key": name,
                "model": newest.model,
                "model_id": newest.model_id,
                "languages": list(_languages(rows_at_k)),
                "is_synthetic": any(r.is_synthetic for r in rows_at_k),
            }
        )
    table, unrun = [], []
    for task in tasks:
        if query.task and task != query.task:
            continue
        cells = [_cell([r for r in by_k[query.k].get(task, []) if matches(r, name)]) for name in (a, b)]
        if cells[0] is None and cells[1] is None:
            unrun.append(task)  # neither model ran it: listed by name only
            continue
        table.append({"task": task, "a": _cell_json(cells[0]), "b": _cell_json(cells[1])})
    # The curves over every turn limit 1..T, from the per-turn reads the board's correctness chart draws from,
    # of exactly the runs the table pools (the rows at every k the board offers).
    folded = _model_turns(gen, query)
    last = max((t.turns for t in folded), default=0)
    curves = []
    for side, name in (("a", a), ("b", b)):
        run_ids = {
            r.run_id for rows in by_k.values() for task_rows in rows.values() for r in task_rows if matches(r, name)
        }
        mine = [t for t in folded if t.run_id in run_ids]
        points = []
        for k in range(1, last + 1):
            n = len(mine)
            correct = sum(1 for t in mine if t.first_correct and t.first_correct <= k)
            verified = sum(1 for t in mine if t.first_verified and t.first_verified <= k)
            points.append(
                {
                    "k": k,
                    "n": n,
                    "correct": correct,
                    "correct_arch": verified,
                    "correct_rate": ranking.rate(correct, n),
                    "correct_arch_rate": ranking.rate(verified, n),
                }
            )
        model = models[0 if side == "a" else 1]
        curves.append({"side": side, "model": model["model"], "model_id": model["model_id"], "points": points})
    data = {
        "kind": "models",
        "arch": query.arch,
        "task": query.task or None,
        "k": query.k,
        "gpu": query.gpu or None,
        "language": query.language or None,
        "a": models[0],
        "b": models[1],
        "tasks": table,
        "tasks_without_runs": unrun,
        "curves": curves,
    }
    if not last:  # no turn recorded for either model's runs: a message where the curves would be, not bare axes
        return {**data, "figure": figure_json(empty_figure("No per-turn results for these models here yet."))}
    styles = model_styles(gen).including(c["model_id"] for c in curves)
    return {**data, "figure": figure_json(curves_figure(data, styles))}


# --------------------------------------------------------------------------- kernels


def _workloads(verdict: Verdict | None) -> dict[str, dict[str, Any]]:
    out = {}
    for w in verdict.workloads if verdict else []:
        if w.uuid:
            perf = w.performance
            out[str(w.uuid)] = {
                "axes": w.axes or {},
                "status": w.status.value,
                "latency_ms": perf.latency_ms if perf else None,
                "baseline_latency_ms": perf.baseline_latency_ms if perf else None,
                "speedup_factor": perf.speedup_factor if perf else None,
            }
    return out


def _families(verdict: Verdict | None) -> dict[str, dict[str, Any]]:
    families = (verdict.arch_check.families if verdict and verdict.arch_check else None) or {}
    return {str(name): dataclasses.asdict(fam) for name, fam in families.items()}


def _opcodes(verdict: Verdict | None) -> dict[str, int]:
    sass = verdict.sass if verdict else None
    counts = dict((sass.opcodes if sass else None) or {})
    for name, n in ((sass.families if sass else None) or {}).items():
        counts.setdefault(f"family {name}", n)
    return {str(k): v for k, v in counts.items() if isinstance(v, int)}


def _kernel_side(evaluation: Evaluation) -> dict[str, Any]:
    submission = evaluation.submission
    return {
        "evaluation_id": str(evaluation.id),
        "submission_id": submission.id,
        "name": submission.name or f"submission {submission.id}",
        "submitter": submission.user.username if submission.user else "",
        "reference": submission.kind == submission.Kind.REFERENCE,
        "reference_role": selectors.reference_role(submission.task.slug, submission.name)
        if submission.kind == submission.Kind.REFERENCE
        else None,
        "language": submission.language,
        **serializers.measurement(evaluation, arch=submission.arch),
        "latency_ms": evaluation.latency_ms,
        "baseline_latency_ms": evaluation.baseline_latency_ms,
        "review_state": evaluation.review_state or None,
        "is_synthetic": submission.is_synthetic,
    }


def compare_kernels(viewer, a: str, b: str) -> dict[str, Any]:
    """Two evaluations of one task and architecture side by side. Raises BadQuery for malformed ids or two
    different tasks, NotFound for an evaluation that does not exist or may not be shown."""
    first, second = _visible_evaluation(viewer, a), _visible_evaluation(viewer, b)
    if (first.submission.task_id, first.submission.arch) != (second.submission.task_id, second.submission.arch):
        raise BadQuery("the two kernels are not on the same task and architecture")
    va, vb = first.verdict_record, second.verdict_record
    wa, wb = _workloads(va), _workloads(vb)
    workloads = [
        {"uuid": key, "axes": (wa.get(key) or wb.get(key) or {}).get("axes"), "a": wa.get(key), "b": wb.get(key)}
        for key in list(wa) + [k for k in wb if k not in wa]
    ]
    fa, fb = _families(va), _families(vb)
    families = [
        {"family": name, "a": fa.get(name), "b": fb.get(name)} for name in list(fa) + [n for n in fb if n not in fa]
    ]
    oa, ob = _opcodes(va), _opcodes(vb)
    opcodes = sorted(
        ({"opcode": op, "a": oa.get(op, 0), "b": ob.get(op, 0)} for op in set(oa) | set(ob)),
        key=lambda r: (-(r["a"] + r["b"]), r["opcode"]),
    )
    return {
        "kind": "kernels",
        "task": first.submission.task.slug,
        "arch": first.submission.arch,
        "a": _kernel_side(first),
        "b": _kernel_side(second),
        "workloads": workloads,
        "families": families,
        "opcodes": opcodes,
    }
