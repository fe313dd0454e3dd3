"""Fill the database with made-up results: `--demo` a small set to look at the pages (loads in a few seconds),
the defaults a realistic volume for the leaderboard benchmark (bench/leaderboard_bench.py). Model runs with
trajectories, turns, turn evaluations and their metrics, and kernel submissions with evaluations. Every row is
flagged `is_synthetic` (pages then show a "synthetic demo" banner). Each evaluation holds a verdict the evaluator
could have written (portal/leaderboard/demo_verdicts.py: its stages, compile log, SASS counts, instruction check,
figures within the physical limits of what the kernel uses, holds with their reasons), and its columns are read
from that verdict as a worker's are. The library's rate on a task is taken from the committed reference verdicts
where there are some (docs/verdicts), so that a made-up row's speedup and TFLOP/s agree with the measured
reference rows beside it. Figures are kept unrounded, like measured ones. Never run it on a production database."""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from statistics import median

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import OverallStatus, to_dict
from evaluator.checks import peaks
from portal.accounts.models import Profile
from portal.catalog.models import Task
from portal.leaderboard.cache import leaderboard_changed
from portal.leaderboard.demo_verdicts import TaskFacts, demo_verdict, draw_kernel, task_facts
from portal.submissions.models import Evaluation, Submission
from portal.submissions.summary import summarise_verdict

MODELS = [
    "deepseek-ai/DeepSeek-V3.2",
    "Qwen/Qwen3-Coder-480B-A35B",
    "moonshotai/Kimi-K2-Instruct",
    "openai/gpt-oss-120b",
    "zai-org/GLM-4.6",
    "meta-llama/Llama-4-Maverick",
    "mistralai/Devstral-2",
    "MiniMaxAI/MiniMax-M2",
]
BATCH = 2000
# Datasheet dense BF16 peak (TFLOP/s) of each GPU the seed names (evaluator/checks/peaks.py): no made-up kernel goes above it.
PEAK_TFLOPS = {name: peaks.peak_tflops(name) for name in ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200")}
LIBRARY_FRACTION = (0.45, 0.75)  # the library's share of peak on a task, drawn once per task
# An integrity hold as the evaluator words one: a demo row is held only with its reason.
HOLD_REASON = (
    "the profiled call took 31% longer than the timed calls (Nsight Compute 0.412 ms vs 0.314 ms), beyond the "
    "documented margin: held for a person to check"
)
DEMO = {"runs": 16, "trajectories": 2, "turns": 8, "kernels": 600, "users": 8}  # --demo: one small set


def measured_library_fractions(verdicts_dir: Path, tasks: list[Task]) -> dict[int, float]:
    """Task id -> the library's share of the datasheet peak, from the committed reference verdicts (each verdict's
    headline TFLOP/s over its speedup is the library's rate; the median over a task's verdicts)."""
    from portal.core.verdict_record import parse_verdict
    from portal.submissions.summary import summarise_verdict

    try:
        index = json.loads((verdicts_dir / "index.json").read_text())
    except (OSError, ValueError):
        return {}
    by_slug = {t.slug: t for t in tasks}
    shares: dict[int, list[float]] = {}
    for entry in index if isinstance(index, list) else []:
        task = by_slug.get(str(entry.get("task")))
        try:
            verdict = parse_verdict(json.loads((verdicts_dir / str(entry.get("verdict"))).read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if task is None or verdict is None:
            continue
        headline = task.workloads.filter(is_headline=True).values_list("uuid", flat=True).first()
        row = summarise_verdict(
            verdict, headline_workload=str(headline) if headline else None, plausible_speedup_max=1e9
        )
        peak = peaks.peak_tflops(row["gpu_name"])
        if row["tflops"] and row["speedup_factor"] and peak:
            shares.setdefault(task.id, []).append(row["tflops"] / row["speedup_factor"] / peak)
    return {task_id: median(values) for task_id, values in shares.items()}


class Command(BaseCommand):
    help = "Seed benchmark data: N model runs x tasks x trajectories x turns, and M kernel submissions (bulk inserts)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--demo", action="store_true", help=f"a small demo set ({DEMO}); loads in seconds, for looking at pages"
        )
        parser.add_argument("--runs", type=int, default=200)
        parser.add_argument("--trajectories", type=int, default=4)
        parser.add_argument("--turns", type=int, default=8)
        parser.add_argument("--kernels", type=int, default=20000)
        parser.add_argument("--users", type=int, default=60)
        parser.add_argument("--seed", type=int, default=8)
        parser.add_argument("--no-turn-evaluations", action="store_true", help="turns without evaluation rows")

    def handle(self, *args, **opts):
        from portal.agent.metrics import TrajectoryResult, TurnResult, compute_task_metrics
        from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn, metric_ks

        if opts["demo"]:
            opts.update(DEMO)
        if not Task.objects.filter(is_active=True).exists():
            call_command("sync_tasks", verbosity=0)
        tasks = list(Task.objects.filter(is_active=True).order_by("slug"))
        if not tasks:
            raise CommandError("no tasks: sync_tasks found none")
        rng = random.Random(opts["seed"])
        library = {task.id: rng.uniform(*LIBRARY_FRACTION) for task in tasks}
        library.update(measured_library_fractions(Path(settings.REFERENCE_VERDICTS_DIR), tasks))
        started = time.monotonic()
        now = timezone.now()
        prefix = uuid.uuid4().hex[:6]
        known: dict[tuple[str, str], TaskFacts] = {}

        def facts(slug: str, gpu: str) -> TaskFacts:
            if (slug, gpu) not in known:
                known[slug, gpu] = task_facts(Path(settings.TASKS_DIR), slug, gpu)
            return known[slug, gpu]

        with transaction.atomic():
            users = User.objects.bulk_create(
                [User(username=f"seed-{prefix}-{i}", password=make_password(None)) for i in range(opts["users"])]
            )
            Profile.objects.bulk_create([Profile(user=u, is_banned=(i % 20 == 19)) for i, u in enumerate(users)])

            # ---------------------------------------------------------------- model runs
            runs = []
            for i in range(opts["runs"]):
                arch = "sm_90a" if i % 4 else "sm_100a"
                gpu = "NVIDIA B200" if arch == "sm_100a" else rng.choice(["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
                model = MODELS[i % len(MODELS)]
                runs.append(
                    ModelRun(
                        user=rng.choice(users),
                        model=model,
                        display_name=model.split("/")[-1],  # a run's label; never a run number
                        base_url="https://llm.example.com/v1",
                        arch=arch,
                        state=ModelRun.State.DONE if i % 10 else ModelRun.State.RUNNING,
                        turns=opts["turns"],
                        trajectories_per_task=opts["trajectories"],
                        gpu_name=gpu,
                        is_hidden=(i % 50 == 49),
                        is_synthetic=True,
                    )
                )
                runs[-1].finished_at = now if runs[-1].state == ModelRun.State.DONE else None
            runs = ModelRun.objects.bulk_create(runs, batch_size=BATCH)
            skill = {run.id: rng.uniform(0.15, 0.85) for run in runs}

            trajectories = [
                Trajectory(run=run, task=task, index=t, state=Trajectory.State.DONE, messages=[])
                for run in runs
                for task in tasks
                for t in range(opts["trajectories"])
            ]
            trajectories = Trajectory.objects.bulk_create(trajectories, batch_size=BATCH)
            self.stdout.write(
                f"{len(runs)} runs, {len(trajectories)} trajectories ({time.monotonic() - started:.0f} s)"
            )

            turns, turn_submissions, results = [], [], {}
            for trajectory in trajectories:
                run = trajectory.run
                per_turn = []
                for index in range(opts["turns"]):
                    correct = rng.random() < skill[run.id] * (0.5 + index / (2 * opts["turns"]))
                    status = (
                        "PASSED" if correct else rng.choice(["COMPILE_ERROR", "INCORRECT_NUMERICAL", "RUNTIME_ERROR"])
                    )
                    arch_status = (
                        rng.choice(["verified", "verified", "token", "absent", "not_executed"]) if correct else ""
                    )
                    kernel = draw_kernel(
                        rng,
                        facts(trajectory.task.slug, run.gpu_name),
                        status=status,
                        arch_status=arch_status,
                        library_fraction=library[trajectory.task_id],
                        gpu=run.gpu_name,
                    )
                    speedup = kernel.rate / kernel.baseline_tflops if correct else None
                    prompt, completion = rng.randint(3000, 12000), rng.randint(800, 6000)
                    turns.append(
                        Turn(
                            trajectory=trajectory,
                            index=index,
                            state=Turn.State.DONE,
                            outcome=Turn.Outcome.VERDICT,  # every made-up turn has a verdict
                            verdict_status=status,
                            arch_status=arch_status,
                            speedup_factor=speedup,
                            prompt_tokens=prompt,
                            completion_tokens=completion,
                            reasoning_tokens=rng.randint(completion // 4, completion),
                            model_latency_s=rng.uniform(5, 90),
                            finished_at=now,
                        )
                    )
                    per_turn.append(TurnResult(index, status, arch_status, speedup, prompt + completion))
                    if not opts["no_turn_evaluations"]:
                        source = f"// run {run.id} trajectory {trajectory.id} turn {index}\n"
                        turn_submissions.append((run, trajectory, source, kernel))
                results.setdefault((run, trajectory.task_id), []).append(TrajectoryResult(per_turn, finished=True))

            if turn_submissions:
                evaluations = self._kernel_rows(
                    [
                        (
                            run.user,
                            trajectory.task,
                            run.arch,
                            "agent",
                            f"turn-{i}",
                            source,
                            kernel,
                            run.gpu_name,
                            False,
                        )
                        for i, (run, trajectory, source, kernel) in enumerate(turn_submissions)
                    ],
                    now,
                    facts,
                )
                for turn, evaluation in zip(turns, evaluations, strict=True):
                    turn.evaluation = evaluation
            Turn.objects.bulk_create(turns, batch_size=BATCH)
            self.stdout.write(f"{len(turns)} turns ({time.monotonic() - started:.0f} s)")

            metrics = []
            for (run, task_id), trajectory_results in results.items():
                for m in compute_task_metrics(trajectory_results, metric_ks(run.turns)):  # every k, as a real run
                    metrics.append(
                        RunTaskMetrics(
                            run=run,
                            task_id=task_id,
                            arch=run.arch,
                            k=m.k,
                            trajectories=m.trajectories,
                            correct=m.correct,
                            correct_arch=m.correct_arch,
                            best_speedup=m.best_speedup,
                            tokens=m.tokens,
                            complete=m.complete and run.state == ModelRun.State.DONE,
                        )
                    )
            RunTaskMetrics.objects.bulk_create(metrics, batch_size=BATCH)
            self.stdout.write(f"{len(metrics)} metrics rows ({time.monotonic() - started:.0f} s)")

            # ---------------------------------------------------------------- kernel submissions
            rows = []
            for i in range(opts["kernels"]):
                arch = rng.choice(list(ARCHES))
                correct = rng.random() < 0.7
                task = rng.choice(tasks)
                gpu = "NVIDIA B200" if arch == "sm_100a" else rng.choice(["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
                kernel = draw_kernel(
                    rng,
                    facts(task.slug, gpu),
                    status="PASSED" if correct else rng.choice(["COMPILE_ERROR", "INCORRECT_NUMERICAL"]),
                    arch_status=rng.choice(["verified", "verified", "token", "not_executed", "absent"])
                    if correct
                    else "",
                    library_fraction=library[task.id],
                    gpu=gpu,
                    hold=HOLD_REASON if i % 113 == 0 else "",
                )
                rows.append(
                    (
                        rng.choice(users),
                        task,
                        arch,
                        "kernel",
                        f"kernel-{i}.cu",
                        f"// kernel {prefix} {i}\n",
                        kernel,
                        gpu,
                        i % 97 == 0,
                    )  # fmt: skip
                )
            self._kernel_rows(rows, now, facts)
            self.stdout.write(f"{len(rows)} kernel submissions ({time.monotonic() - started:.0f} s)")
        leaderboard_changed()
        self.stdout.write(f"seeded in {time.monotonic() - started:.0f} s")

    def _kernel_rows(self, rows: list[tuple], now, facts) -> list[Evaluation]:
        """Submissions and their evaluations, each from a demo verdict read as a worker reads one (summarise_verdict):
        submitted minutes before it was evaluated, and a passing upload with its ranked check."""
        submissions, evaluations = [], []
        for owner, task, arch, kind, name, source, *_ in rows:
            encoded = source.encode()
            submissions.append(
                Submission(
                    user=owner,
                    task=task,
                    arch=arch,
                    kind=kind,
                    name=name,
                    source=source,
                    source_sha256=hashlib.sha256(encoded).hexdigest(),
                    source_bytes=len(encoded),
                    is_synthetic=True,
                )
            )
        for submission, row in zip(submissions, rows, strict=True):
            *_, kernel, gpu, hidden = row
            finished = now - timedelta(minutes=len(evaluations) + 1)
            submission.created_at = finished - timedelta(minutes=3)  # submitted, then evaluated
            submission.is_hidden = hidden
            task_facts_ = facts(submission.task.slug, gpu)
            record = demo_verdict(
                facts=task_facts_,
                arch=submission.arch,
                gpu=gpu,
                source_sha256=submission.source_sha256,
                source_bytes=submission.source_bytes,
                created_at=finished.isoformat().replace("+00:00", "Z"),
                kernel=kernel,
            )
            summary = summarise_verdict(
                record, headline_workload=task_facts_.headline, plausible_speedup_max=settings.PLAUSIBLE_SPEEDUP_MAX
            )
            message = summary.pop("message")
            evaluations.append(
                Evaluation(
                    submission=submission,
                    created_at=submission.created_at,
                    state=Evaluation.State.DONE,
                    queue=ARCHES[submission.arch].queue,
                    verdict=to_dict(record),
                    stage="done",
                    stage_message=message,
                    attempts=1,
                    started_at=finished - timedelta(minutes=1),
                    finished_at=finished,
                    **summary,
                )
            )
        with _dated_as_given(Submission, Evaluation):
            Submission.objects.bulk_create(submissions, batch_size=BATCH)
        # A passing kernel upload ranks only with its ranked check (secret seed) passed too.
        checks = [
            Evaluation(
                submission=e.submission,
                purpose=Evaluation.Purpose.HIDDEN,
                state=Evaluation.State.DONE,
                queue=e.queue,
                status="PASSED",
                gpu_name=e.gpu_name,
                started_at=e.started_at,
                finished_at=e.finished_at,
            )
            for e in evaluations
            if e.submission.kind == Submission.Kind.KERNEL and e.status == OverallStatus.PASSED
        ]
        with _dated_as_given(Submission, Evaluation):
            for check in checks:
                check.created_at = check.started_at
            Evaluation.objects.bulk_create(checks, batch_size=BATCH)
            return Evaluation.objects.bulk_create(evaluations, batch_size=BATCH)


@contextmanager
def _dated_as_given(*models):
    """`created_at` as the seed gives it (submitted minutes before evaluated), not the moment the seed writes the
    row: auto_now_add set aside while the seed's bulk inserts run."""
    fields = [m._meta.get_field("created_at") for m in models]
    for f in fields:
        f.auto_now_add = False
    try:
        yield
    finally:
        for f in fields:
            f.auto_now_add = True
