"""Each artifact records who wrote it (only the evaluator's own files are evidence), and each evaluation the files
it did not keep (byte caps). Files stored before get the origin their name and path made certain: the source,
the verdict, the compiler log, the SASS listing the SASS stage wrote (`kernel.sass`, the first name the old
collector took, present only where the verdict has SASS counts), and every file of an imported reference verdict;
anything else stays "origin not recorded"."""

from django.db import migrations, models

IMPORTER = "import_reference_verdicts"
KNOWN = {"kernel.cu": "source", "kernel.py": "source", "verdict.json": "evaluator", "compile.log": "tool"}


def _origins(apps, schema_editor):
    Artifact = apps.get_model("submissions", "Artifact")
    for artifact in Artifact.objects.select_related("evaluation").iterator():
        evaluation = artifact.evaluation
        origin = KNOWN.get(artifact.name, "")
        if evaluation.worker_name == IMPORTER and not origin:
            origin = "evaluator"  # committed by maintainers with the verdict (docs/verdicts/)
        elif artifact.name == "kernel.sass" and isinstance(evaluation.verdict, dict) and evaluation.verdict.get("sass"):
            origin = "evaluator"
        if origin:
            Artifact.objects.filter(pk=artifact.pk).update(origin=origin)


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0005_canonical_measurement_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="artifact",
            name="origin",
            field=models.CharField(
                blank=True,
                choices=[
                    ("evaluator", "written by the evaluator"),
                    ("source", "the source as submitted"),
                    ("tool", "compiler output (may quote the submission)"),
                    ("submission", "written by the submission"),
                    ("", "origin not recorded (stored before origins were)"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="artifacts_not_kept",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(_origins, migrations.RunPython.noop),
    ]
