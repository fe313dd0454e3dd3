"""Model fields whose values are names in the evaluator's registries: an architecture (evaluator/both_sides/arches.py) or a
kernel language (evaluator/languages.py).

The registry is read when a value is validated and when a form is built, never copied into the field: a field with
`choices=` would put today's list into the migrations, so every new architecture or language would need a migration
of its own. These fields have no choices at the database level; their validator asks the registry, and their form
field offers the registry's entries as choices."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.text import capfirst

from evaluator import languages
from evaluator.both_sides import arches


def arch_choices() -> list[tuple[str, str]]:
    """(name, label) of every registered architecture, in the registry's order."""
    return [(a.name, a.label) for a in arches.ARCHES.values()]


def language_choices() -> list[tuple[str, str]]:
    """(name, label) of every registered kernel language, in the registry's order."""
    return [(lang.name, lang.display_name) for lang in languages.LANGUAGES.values()]


def validate_arch(value: str) -> None:
    if value not in arches.ARCHES:
        known = ", ".join(arches.ARCHES)
        raise ValidationError(
            "unknown architecture %(value)r (known: %(known)s)",
            code="unknown_arch",
            params={"value": value, "known": known},
        )


def validate_language(value: str) -> None:
    if value not in languages.LANGUAGES:
        known = ", ".join(languages.LANGUAGES)
        raise ValidationError(
            "unknown language %(value)r (known: %(known)s)",
            code="unknown_language",
            params={"value": value, "known": known},
        )


class _RegistryField(models.CharField):
    """A CharField holding a registry name: validated against the registry, offered from it in forms."""

    registry_choices: Any = staticmethod(lambda: [])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 16)
        super().__init__(*args, **kwargs)

    def formfield(self, **kwargs: Any) -> forms.Field:
        # Callable choices: read from the registry each time a form is built.
        def choices() -> list[tuple[str, str]]:
            return ([("", "---------")] if self.blank else []) + type(self).registry_choices()

        defaults: dict[str, Any] = {
            "choices": choices,
            "coerce": str,
            "required": not self.blank,
            "label": capfirst(self.verbose_name),
            "help_text": self.help_text,
        }
        if self.has_default():
            defaults["initial"] = self.get_default()
        defaults.update(kwargs)
        return forms.TypedChoiceField(**defaults)


class ArchField(_RegistryField):
    """The name of an architecture in evaluator/both_sides/arches.py ("sm_90a")."""

    default_validators = [validate_arch]
    registry_choices = staticmethod(arch_choices)


class LanguageField(_RegistryField):
    """The name of a kernel language in evaluator/languages.py ("cuda")."""

    default_validators = [validate_language]
    registry_choices = staticmethod(language_choices)
