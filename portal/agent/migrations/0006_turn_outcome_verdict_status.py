"""A turn's outcome and its verdict status apart from `status`: existing turns are read from their
published `status` (a verdict status, or one of the agent's own names), which stays as it was."""

from django.db import migrations, models
from django.db.models import F

# The agent's own published statuses, as they were written before this migration, and the outcome each means.
OWN_STATUSES = {
    "NO_KERNEL": "no_kernel",
    "MODEL_ERROR": "model_error",
    "EVALUATION_FAILED": "evaluation_failed",
    "OVER_BUDGET": "over_budget",
}


def split_status(apps, schema_editor):
    Turn = apps.get_model("agent", "Turn")
    for status, outcome in OWN_STATUSES.items():
        Turn.objects.filter(status=status).update(outcome=outcome, verdict_status="")
    Turn.objects.exclude(status="").exclude(status__in=list(OWN_STATUSES)).update(
        outcome="verdict", verdict_status=F("status")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0005_modelrun_language"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "Not finished"),
                    ("verdict", "Scored by the evaluator"),
                    ("no_kernel", "No kernel in the reply, or the kernel was refused"),
                    ("model_error", "Model endpoint error"),
                    ("evaluation_failed", "Evaluation infrastructure failed"),
                    ("over_budget", "The reply came, but the run's evaluation budget was used up"),
                ],
                default="",
                max_length=24,
            ),
        ),
        migrations.AddField(
            model_name="turn",
            name="verdict_status",
            field=models.CharField(blank=True, max_length=32),
        ),
        # Backwards the two fields are dropped; `status` kept everything.
        migrations.RunPython(split_status, migrations.RunPython.noop),
    ]
