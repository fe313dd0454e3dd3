"""API tokens get a scope (read-only or read and write) and an expiry. Tokens made before keep their
write scope and expire API_TOKEN_DEFAULT_DAYS after this migration runs."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def existing_tokens_expire(apps, schema_editor):
    token_model = apps.get_model("accounts", "ApiToken")
    expires = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    token_model.objects.filter(expires_at__isnull=True).update(expires_at=expires)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("write", "read and write"), ("read", "read only")], default="write", max_length=8
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(existing_tokens_expire, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(),
        ),
    ]
