"""Each stored evaluation's `fraction_of_peak` column becomes its verdict's own figure.

Rows recorded before carry a value the portal computed itself (TFLOP/s over its own datasheet lookup), whatever the
verdict said; from now on the column is the verdict's figure, and a verdict of schema_version 1 (some divided by the
host's measured matmul rate) gives none: "not recorded". Only that column changes; holds and every other column
were already the verdict's. The reading is the portal's one reading of a verdict (portal/core/verdict_record.py)
and the summary the worker records (portal/submissions/summary.py), both pure."""

from django.db import migrations


def forwards(apps, schema_editor):
    from portal.core.verdict_record import parse_verdict
    from portal.submissions.summary import summarise_verdict

    Evaluation = apps.get_model("submissions", "Evaluation")
    Workload = apps.get_model("catalog", "Workload")
    headlines = {
        task: str(uuid) for task, uuid in Workload.objects.filter(is_headline=True).values_list("task_id", "uuid")
    }
    rows = Evaluation.objects.exclude(fraction_of_peak=None).values_list("id", "verdict", "submission__task_id")
    for evaluation_id, verdict, task_id in rows.iterator(chunk_size=500):
        summary = summarise_verdict(
            parse_verdict(verdict), headline_workload=headlines.get(task_id), plausible_speedup_max=float("inf")
        )
        Evaluation.objects.filter(id=evaluation_id).update(fraction_of_peak=summary["fraction_of_peak"])


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0007_registry_names_without_choices"),
        ("catalog", "0004_registry_names_without_choices"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
