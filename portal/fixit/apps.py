from django.apps import AppConfig


class FixitConfig(AppConfig):
    name = "portal.fixit"
    label = "fixit"
    verbose_name = "Fixit repair datasets"
