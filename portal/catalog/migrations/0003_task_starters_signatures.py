"""One column per language becomes one JSON object keyed by language name. The rows' content digests no longer
match what a sync computes, so the next `sync_tasks` rewrites every task (and adds what no old column held, such
as the Triton signature); until then a task shows what is moved here."""

from django.db import migrations, models

# The old columns and the language each held (frozen: this migration does not read the registry).
_STARTER_COLUMNS = (("cuda", "starter"), ("triton", "starter_triton"))


def _to_objects(apps, schema_editor):
    Task = apps.get_model("catalog", "Task")
    for task in Task.objects.all():
        task.starters = {lang: getattr(task, column) for lang, column in _STARTER_COLUMNS if getattr(task, column)}
        task.signatures = {"cuda": task.run_signature} if task.run_signature else {}
        task.save(update_fields=["starters", "signatures"])


def _to_columns(apps, schema_editor):
    Task = apps.get_model("catalog", "Task")
    for task in Task.objects.all():
        for lang, column in _STARTER_COLUMNS:
            setattr(task, column, task.starters.get(lang, ""))
        task.run_signature = task.signatures.get("cuda", "")
        task.content_sha256 = ""  # the old sync rewrites the row
        task.save()


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0002_task_starter_triton"),
    ]

    operations = [
        migrations.AddField(model_name="task", name="signatures", field=models.JSONField(default=dict)),
        migrations.AddField(model_name="task", name="starters", field=models.JSONField(blank=True, default=dict)),
        migrations.RunPython(_to_objects, _to_columns),
        # A default first, so that going back can add the column again to a table that has rows.
        migrations.AlterField(model_name="task", name="run_signature", field=models.TextField(default="")),
        migrations.RemoveField(model_name="task", name="run_signature"),
        migrations.RemoveField(model_name="task", name="starter"),
        migrations.RemoveField(model_name="task", name="starter_triton"),
    ]
