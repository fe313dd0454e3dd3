from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "portal.submissions"
    label = "submissions"
    verbose_name = "Submissions, evaluations and workers"
