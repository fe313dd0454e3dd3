"""A column for the verdict's `arch_check.rests_on_profile`: verified, but the timed calls' use of the target
instructions rests on the profiled call alone. Verdicts recorded before it do not carry the flag, and the portal does
not work it out from their other fields (the evaluator decides it): their rows read False."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0008_fraction_of_peak_as_the_verdict_says"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="arch_rests_on_profile",
            field=models.BooleanField(default=False),
        ),
    ]
