"""The staff form that builds a dataset version from the web (the same service as the API and the command)."""

from __future__ import annotations

from django import forms

from portal.core.registry_fields import arch_choices


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


class DatasetBuildForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="a-z, 0-9, '-' and '_'; an existing name gets its next version")
    arches = forms.MultipleChoiceField(
        choices=arch_choices,  # the registry, read per form
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Architectures",
        help_text="none ticked: any",
    )
    tasks = forms.CharField(required=False, max_length=4000, help_text="task slugs, comma-separated; empty: any")
    models = forms.CharField(required=False, max_length=4000, help_text="model ids, comma-separated; empty: any")
    verified_only = forms.BooleanField(required=False, initial=True, label="Fixed kernels verified only")
    min_speedup = forms.FloatField(required=False, min_value=0, label="Minimum speedup of the fixed kernel")
    description = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    licence = forms.CharField(required=False, max_length=100, help_text="empty: the portal's default")

    def filters(self) -> dict:
        data = self.cleaned_data
        return {
            "arches": list(data["arches"]),
            "tasks": _names(data["tasks"]),
            "models": _names(data["models"]),
            "failure_statuses": [],
            "verified_only": bool(data["verified_only"]),
            "min_speedup": data["min_speedup"],
        }
