from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "portal.agent"
    label = "agent"
    verbose_name = "Model-endpoint runs (agent loop)"

    def ready(self) -> None:
        # Connects the evaluation_finished receiver that moves a trajectory to its next step.
        from portal.agent import receivers  # noqa: F401
        from portal.agent.selectors import has_synthetic_runs
        from portal.agent.visibility import register_hiding_rules
        from portal.core.context_processors import register_synthetic_rows

        register_hiding_rules()  # a turn's submission is hidden with its run
        register_synthetic_rows(self.label, has_synthetic_runs)
