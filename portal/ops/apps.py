from django.apps import AppConfig


class OpsConfig(AppConfig):
    """The top floor: operators' commands that span several apps (no models, no pages). It may import any app;
    no app imports it."""

    name = "portal.ops"
    label = "ops"
    verbose_name = "Operations across apps"
