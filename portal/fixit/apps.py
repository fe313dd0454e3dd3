from django.apps import AppConfig


class FixitConfig(AppConfig):
    name = "portal.fixit"
    label = "fixit"
    verbose_name = "Fixit repair datasets"

    def ready(self) -> None:
        # Reasoning-teacher explanations take places in each user's share of the `agent` queue, like model steps.
        from portal.agent import scheduling
        from portal.fixit.reasoning import EXPLANATION_CALLS

        scheduling.call_kind_register(EXPLANATION_CALLS)
