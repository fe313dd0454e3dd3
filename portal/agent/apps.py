from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "portal.agent"
    label = "agent"
    verbose_name = "Model-endpoint runs (agent loop)"

    def ready(self) -> None:
        # Connects the evaluation_finished receiver that moves a trajectory to its next step.
        from portal.agent import receivers  # noqa: F401
