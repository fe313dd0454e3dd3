from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "portal.submissions"
    label = "submissions"
    verbose_name = "Submissions, evaluations and workers"

    def ready(self) -> None:
        from portal.core.context_processors import register_synthetic_rows
        from portal.submissions.selectors import has_synthetic_submissions

        register_synthetic_rows(self.label, has_synthetic_submissions)
