"""Start a model-endpoint run from the command line (operators; no per-user limits)."""

from __future__ import annotations

import os
import time

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from evaluator.languages import DEFAULT_LANGUAGE
from portal.agent.models import ModelRun, Turn
from portal.agent.prompts import prompted_languages
from portal.agent.services import RunRefused, RunRequest, run_create


class Command(BaseCommand):
    help = "Run the kernel agent loop against an OpenAI-compatible endpoint."

    def add_arguments(self, parser):
        parser.add_argument("--endpoint", required=True, help="base URL, e.g. http://10.0.0.5:8000/v1")
        parser.add_argument("--model", required=True, help="model id as the endpoint expects it")
        parser.add_argument("--arch", required=True, help="sm_90a or sm_100a")
        parser.add_argument(
            "--language",
            default=DEFAULT_LANGUAGE.name,
            choices=[lang.name for lang in prompted_languages()],
            help="the kernel language (from the languages registry)",
        )
        parser.add_argument("--tasks", required=True, help="comma-separated task names")
        parser.add_argument("--turns", type=int, default=8)
        parser.add_argument("--trajectories", type=int, default=4)
        parser.add_argument("--target-speedup", type=float, default=1.2)
        parser.add_argument("--pack", choices=["arch", "none"], default="arch")
        parser.add_argument("--api-key-env", help="name of the environment variable holding the API key")
        parser.add_argument("--temperature", type=float, default=0.7)
        parser.add_argument("--max-tokens", type=int, default=16384)
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
        parser.add_argument("--retries", type=int, default=3)
        parser.add_argument("--name", default="", help="display name (default: the model id)")
        parser.add_argument("--user", default="operator", help="owner of the run (created if missing)")
        parser.add_argument("--wait", action="store_true", help="print progress until the run finishes")

    def handle(self, *args, **options):
        api_key = ""
        if options["api_key_env"]:
            api_key = os.environ.get(options["api_key_env"], "")
            if not api_key:
                raise CommandError(f"the environment variable {options['api_key_env']} is empty or unset")
        user, created = User.objects.get_or_create(username=options["user"])
        if created:
            user.set_unusable_password()
            user.save()
        request = RunRequest(
            base_url=options["endpoint"],
            model=options["model"],
            arch=options["arch"],
            task_slugs=options["tasks"].split(","),
            display_name=options["name"],
            api_key=api_key,
            pack_variant=options["pack"],
            turns=options["turns"],
            trajectories_per_task=options["trajectories"],
            target_speedup=options["target_speedup"],
            temperature=options["temperature"],
            max_output_tokens=options["max_tokens"],
            request_timeout=options["timeout"],
            max_retries=options["retries"],
            language=options["language"],
        )
        try:
            run = run_create(user=user, request=request, check_limits=False)
        except RunRefused as exc:
            raise CommandError(exc.message)
        self.stdout.write(f"run {run.id} queued: {run.trajectories.count()} trajectories on the agent queue")
        if options["wait"]:
            self._wait(run)

    def _wait(self, run: ModelRun) -> None:
        seen: set[int] = set()
        while True:
            run.refresh_from_db()
            for turn in Turn.objects.filter(trajectory__run=run, finished_at__isnull=False).exclude(id__in=seen):
                seen.add(turn.id)
                speed = f" {turn.speedup_factor:.2f}x" if turn.speedup_factor is not None else ""
                self.stdout.write(
                    f"{turn.trajectory.task.slug} t{turn.trajectory.index} turn {turn.index}: "
                    f"{turn.published_status} {turn.arch_status}{speed} {turn.error[:200]}"
                )
            if not run.is_active:
                break
            time.sleep(2)
        self.stdout.write(f"run {run.id}: {run.state} {run.error}")
        for m in run.metrics.order_by("task__slug", "k"):
            self.stdout.write(
                f"  {m.task.slug} k={m.k}: correct {m.correct}/{m.trajectories}, "
                f"with arch {m.correct_arch}/{m.trajectories}, best {m.best_speedup:.2f}x, {m.tokens} tokens"
            )
