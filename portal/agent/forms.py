from __future__ import annotations

from django import forms
from django.conf import settings

from evaluator.both_sides.arches import ARCHES
from evaluator.languages import DEFAULT_LANGUAGE
from portal.agent import prompts
from portal.agent.models import ModelRun
from portal.catalog.models import Task


class RunForm(forms.Form):
    base_url = forms.CharField(
        max_length=500, label="Endpoint base URL", help_text="OpenAI-compatible, e.g. https://api.example.com/v1"
    )
    model = forms.CharField(max_length=200, label="Model id", help_text="exactly as the endpoint expects it")
    display_name = forms.CharField(max_length=200, required=False, label="Display name (optional)")
    # Write-only: never rendered back, not even after a failed submission.
    api_key = forms.CharField(
        max_length=1000,
        required=False,
        label="API key (optional)",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="stored encrypted; shown only as its last 4 characters",
    )
    arch = forms.ChoiceField(choices=[(a.name, a.label) for a in ARCHES.values()], label="Architecture")
    # Choices and help from the languages registry, read per form (see __init__).
    language = forms.ChoiceField(required=False, label="Kernel language")  # absent: the default language
    tasks = forms.ModelMultipleChoiceField(
        queryset=Task.objects.none(), to_field_name="slug", widget=forms.CheckboxSelectMultiple
    )
    pack_variant = forms.ChoiceField(choices=ModelRun.PackVariant.choices, label="Knowledge pack")
    turns = forms.IntegerField(min_value=1, initial=8)
    trajectories_per_task = forms.IntegerField(min_value=1, initial=4, label="Trajectories per task")
    target_speedup = forms.FloatField(min_value=0.01, initial=1.2, label="Target speedup")
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.7)
    max_output_tokens = forms.IntegerField(min_value=16, initial=16384, label="Max output tokens")
    request_timeout = forms.FloatField(min_value=1.0, initial=600.0, label="Request timeout (s)")
    max_retries = forms.IntegerField(min_value=0, initial=3, label="Retries on 429/5xx/timeouts")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The operator's caps (settings), read per form so a changed setting shows at once.
        self.fields["request_timeout"] = forms.FloatField(
            min_value=1.0,
            max_value=settings.AGENT_REQUEST_TIMEOUT_MAX_S,
            initial=min(600.0, settings.AGENT_REQUEST_TIMEOUT_MAX_S),
            label="Request timeout (s)",
        )
        self.fields["max_retries"] = forms.IntegerField(
            min_value=0,
            max_value=settings.AGENT_MAX_RETRIES_MAX,
            initial=min(3, settings.AGENT_MAX_RETRIES_MAX),
            label="Retries on 429/5xx/timeouts",
        )
        self.fields["tasks"].queryset = Task.objects.filter(is_active=True).order_by("group", "slug")
        languages = prompts.prompted_languages()
        self.fields["language"].choices = [(lang.name, lang.display_name) for lang in languages]
        self.fields["language"].initial = DEFAULT_LANGUAGE.name
        self.fields["language"].help_text = ", ".join(
            f"{lang.display_name} replies in a ```{lang.fence} block" for lang in languages
        )
