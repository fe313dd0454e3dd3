"""An evaluation's measurement columns take the verdict's names (docs/api.md): the values are kept."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0004_submission_language"),
    ]

    operations = [
        migrations.RenameField(model_name="evaluation", old_name="speedup", new_name="speedup_factor"),
        migrations.RenameField(model_name="evaluation", old_name="speedup_ci_low", new_name="speedup_ci95_low"),
        migrations.RenameField(model_name="evaluation", old_name="speedup_ci_high", new_name="speedup_ci95_high"),
        migrations.RenameField(model_name="evaluation", old_name="peak_fraction", new_name="fraction_of_peak"),
    ]
