"""Writes owned by the leaderboard: importing the committed verdicts of the expert reference kernels, so a
fresh install shows real, dated H200 rows from the first start."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluator.arch_check.ncu import NcuParseError, parse_source_page
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import Verdict
from evaluator.suite.solutions import read_solution
from portal.catalog.models import Task
from portal.core.verdict_record import parse_verdict
from portal.leaderboard.cache import leaderboard_changed
from portal.submissions import artifacts
from portal.submissions.models import Evaluation, Submission, kernel_file_name
from portal.submissions.summary import summarise_verdict

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
PLAUSIBLE_SPEEDUP_MAX_DEFAULT = 3.0


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)  # "task/solution@arch" of evaluations created
    unchanged: list[str] = field(default_factory=list)  # already imported with the same verdict
    problems: list[str] = field(default_factory=list)  # entries skipped, with why


@dataclass(frozen=True)
class IndexEntry:
    verdict: str  # file name inside the verdicts folder
    task: str
    solution: str  # folder under tasks/<task>/solutions/
    arch: str
    ncu_source: str = ""  # optional: Nsight Compute source-page CSV of the same run, inside the verdicts folder

    @property
    def label(self) -> str:
        return f"{self.task}/{self.solution}@{self.arch}"


def read_index(directory: Path) -> list[IndexEntry]:
    """docs/verdicts/index.json: [{"verdict", "task", "solution", "arch"}]. Raises ValueError naming the problem."""
    path = directory / INDEX_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of entries")
    entries = []
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{path}: entry {position} is not an object")
        missing = [
            k for k in ("verdict", "task", "solution", "arch") if not isinstance(item.get(k), str) or not item[k]
        ]
        if missing:
            raise ValueError(f"{path}: entry {position} lacks {', '.join(missing)}")
        ncu_source = item.get("ncu_source") or ""
        if not isinstance(ncu_source, str):
            raise ValueError(f"{path}: entry {position}: ncu_source must be a path string")
        entries.append(IndexEntry(item["verdict"], item["task"], item["solution"], item["arch"], ncu_source))
    return entries


def _inside(base: Path, *parts: str) -> Path | None:
    """base/parts, or None when the parts try to leave base (index entries are data, not trusted paths)."""
    candidate = base.joinpath(*parts).resolve()
    return candidate if candidate.is_relative_to(base.resolve()) else None


def reference_verdicts_import(
    *, directory: Path, tasks_dir: Path, plausible_speedup_max: float = PLAUSIBLE_SPEEDUP_MAX_DEFAULT
) -> ImportReport:
    """Create a reference Submission and a done Evaluation for every index entry not imported yet.
    Idempotent: the same verdict document for the same source is never imported twice."""
    report = ImportReport()
    if not (directory / INDEX_NAME).is_file():
        return report
    for entry in read_index(directory):
        try:
            if _import_one(entry, directory=directory, tasks_dir=tasks_dir, limit=plausible_speedup_max):
                report.created.append(entry.label)
            else:
                report.unchanged.append(entry.label)
        except ValueError as exc:
            report.problems.append(f"{entry.label}: {exc}")
    if report.created:
        transaction.on_commit(leaderboard_changed)
    return report


@transaction.atomic
def _import_one(entry: IndexEntry, *, directory: Path, tasks_dir: Path, limit: float) -> bool:
    if entry.arch not in ARCHES:
        raise ValueError(f"unknown architecture {entry.arch!r}")
    task = Task.objects.filter(slug=entry.task, is_active=True).first()
    if task is None:
        raise ValueError(f"task {entry.task!r} is not in the catalog (run sync_tasks first)")
    verdict_path = _inside(directory, entry.verdict)
    kernel_file, language = solution_source(tasks_dir, entry)
    kernel_path = _inside(tasks_dir, entry.task, "solutions", entry.solution, kernel_file)
    if verdict_path is None or kernel_path is None:
        raise ValueError("the verdict or solution path leaves its folder")
    if not verdict_path.is_file():
        raise ValueError(f"verdict file {entry.verdict} is missing")
    if not kernel_path.is_file():
        raise ValueError(f"kernel source {kernel_path} is missing")
    verdict_bytes = verdict_path.read_bytes()
    try:
        document = json.loads(verdict_bytes)
    except ValueError as exc:
        raise ValueError(f"{entry.verdict} is not JSON ({exc})") from None
    verdict = parse_verdict(document)
    if verdict is None:
        raise ValueError(f"{entry.verdict} is not a verdict the evaluator writes (evaluator/both_sides/verdict.py)")
    source_bytes = kernel_path.read_bytes()
    source = source_bytes.decode("utf-8")
    digest = hashlib.sha256(source_bytes).hexdigest()
    _check_verdict_matches(verdict, entry=entry, digest=digest, kernel_file=kernel_file)
    if (verdict.language or "cuda") != language:
        raise ValueError(f"the verdict is for a {verdict.language} kernel, the solution is {language}")

    submission = Submission.objects.filter(
        kind=Submission.Kind.REFERENCE, task=task, arch=entry.arch, source_sha256=digest, name=entry.solution
    ).first()
    if submission is None:
        submission = Submission.objects.create(
            user=None,
            task=task,
            arch=entry.arch,
            kind=Submission.Kind.REFERENCE,
            language=language,
            name=entry.solution,
            source=source,
            source_sha256=digest,
            source_bytes=len(source_bytes),
            note=f"{_ROLE_NOTES.get(solution_role(tasks_dir, entry), 'Expert reference kernel')}; measured verdict "
            f"imported from docs/verdicts/{entry.verdict}",
        )
    else:
        existing = next(
            (e for e in submission.evaluations.filter(state=Evaluation.State.DONE) if e.verdict == document), None
        )
        if existing is not None:
            # Imported before the profiler files were committed: add them, nothing else changes.
            extra = {
                name: data
                for name, data in _profiler_files(entry, directory).items()
                if not existing.artifacts.filter(name=name).exists()
            }
            if extra:
                artifacts.store_all(existing, extra)
            return False

    headline = task.workloads.filter(is_headline=True).values_list("uuid", flat=True).first()
    summary = summarise_verdict(
        verdict, headline_workload=str(headline) if headline else None, plausible_speedup_max=limit
    )
    message = summary.pop("message")
    measured_at = _parse_time(verdict.created_at) or timezone.now()
    evaluation = Evaluation.objects.create(
        submission=submission,
        state=Evaluation.State.DONE,
        queue=ARCHES[entry.arch].queue,
        stages=",".join(verdict.stages_requested or []) or "all",
        stage="done",
        stage_message=message,
        worker_name="import_reference_verdicts",
        started_at=measured_at,
        finished_at=measured_at,
        verdict=document,  # stored as the evaluator wrote it
        **summary,
    )
    files = {kernel_file: source_bytes, "verdict.json": verdict_bytes}
    compile_output = verdict.compile.output if verdict.compile else None
    if compile_output:
        files["compile.log"] = compile_output.encode("utf-8")
    files.update(_profiler_files(entry, directory))
    artifacts.store_all(evaluation, files)
    return True


def _profiler_files(entry: IndexEntry, directory: Path) -> dict[str, bytes]:
    """ncu_source.csv as committed, and kernel.sass listed from it (the SASS the profiler saw, per kernel, with
    the executed count of each instruction), so the evaluation page can show the SASS of reference kernels."""
    if not entry.ncu_source:
        return {}
    path = _inside(directory, entry.ncu_source)
    if path is None:
        raise ValueError("the ncu_source path leaves its folder")
    if not path.is_file():
        raise ValueError(f"Nsight Compute CSV {entry.ncu_source} is missing")
    data = path.read_bytes()
    try:
        kernels = parse_source_page(data.decode("utf-8", errors="replace"))
    except NcuParseError as exc:
        raise ValueError(f"{entry.ncu_source}: {exc}") from None
    return {"ncu_source.csv": data, "kernel.sass": sass_from_ncu_rows(kernels).encode("utf-8")}


def sass_from_ncu_rows(kernels) -> str:
    """A cuobjdump-style listing from Nsight Compute's source page (evaluator.arch_check.ncu.parse_source_page), for the
    reference verdicts that carry the profiler CSV but no SASS dump: one `Function :` header per kernel."""
    out = []
    for kernel in kernels:
        out.append(f"        Function : {kernel.name}")
        for row in kernel.rows:
            address = row.address.removeprefix("0x").rjust(4, "0")
            out.append(f"        /*{address}*/                   {row.source} ;  /* executed {row.executed} */")
    return "\n".join(out) + "\n"


_ROLE_NOTES = {"negative_control": "Negative control (a reference kernel written to fail the instruction check)"}


def solution_role(tasks_dir: Path, entry: IndexEntry) -> str:
    """The solution's role from its solution.json ("expert" or "negative_control")."""
    meta_path = _inside(tasks_dir, entry.task, "solutions", entry.solution, "solution.json")
    if meta_path is None or not meta_path.is_file():
        return "expert"
    return read_solution(meta_path).role


def solution_source(tasks_dir: Path, entry: IndexEntry) -> tuple[str, str]:
    """(file name, language) of a reference solution, from its solution.json (kernel.cu in CUDA when absent)."""
    meta_path = _inside(tasks_dir, entry.task, "solutions", entry.solution, "solution.json")
    if meta_path is None:
        raise ValueError("the solution path leaves its folder")
    if not meta_path.is_file():
        return kernel_file_name("cuda"), "cuda"
    solution = read_solution(meta_path)
    return solution.kernel_file, solution.language


def _check_verdict_matches(verdict: Verdict, *, entry: IndexEntry, digest: str, kernel_file: str) -> None:
    """The verdict must be about this task, this architecture and exactly this source file."""
    if verdict.task != entry.task:
        raise ValueError(f"the verdict is for task {verdict.task!r}, not {entry.task!r}")
    if verdict.arch != entry.arch:
        raise ValueError(f"the verdict is for {verdict.arch!r}, not {entry.arch!r}")
    if verdict.source_sha256 != digest:
        raise ValueError(
            f"the verdict measured source {verdict.source_sha256}, but {kernel_file} now hashes to {digest}"
        )


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
