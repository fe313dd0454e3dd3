"""A turn's copy of its evaluation's speedup takes the verdict's name (docs/api.md): the values are kept."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0006_turn_outcome_verdict_status"),
    ]

    operations = [
        migrations.RenameField(model_name="turn", old_name="speedup", new_name="speedup_factor"),
    ]
