"""A turn's published status is derived from `outcome` and `verdict_status` (Turn.published_status), no longer
stored. Turns whose `status` was written without them (demo data seeded between 0006 and now) are split
first, as 0006 split the rows before it; going back writes `status` again from the two."""

from django.db import migrations
from django.db.models import F

# The agent's own published statuses, and the outcome each means (as in 0006).
OWN_STATUSES = {
    "NO_KERNEL": "no_kernel",
    "MODEL_ERROR": "model_error",
    "EVALUATION_FAILED": "evaluation_failed",
    "OVER_BUDGET": "over_budget",
}


def split_status(apps, schema_editor):
    Turn = apps.get_model("agent", "Turn")
    unsplit = Turn.objects.filter(outcome="").exclude(status="")
    for status, outcome in OWN_STATUSES.items():
        unsplit.filter(status=status).update(outcome=outcome, verdict_status="")
    unsplit.exclude(status__in=list(OWN_STATUSES)).update(outcome="verdict", verdict_status=F("status"))


def join_status(apps, schema_editor):
    Turn = apps.get_model("agent", "Turn")
    Turn.objects.filter(outcome="verdict").update(status=F("verdict_status"))
    for status, outcome in OWN_STATUSES.items():
        Turn.objects.filter(outcome=outcome).update(status=status)


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0007_turn_speedup_factor"),
    ]

    operations = [
        # Backwards: the field comes back first (RemoveField's reverse), then join_status fills it.
        migrations.RunPython(split_status, join_status),
        migrations.RemoveField(model_name="turn", name="status"),
    ]
