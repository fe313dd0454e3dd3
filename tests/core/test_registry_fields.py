"""Model fields that hold an architecture or a kernel language read the evaluator's registry when they validate and
when a form offers them (portal/core/registry_fields.py). Catches `choices=` coming back on such a field: today's
list frozen into the model (a new registry entry refused) and into the migrations (a migration per new entry)."""

from __future__ import annotations

import dataclasses
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from evaluator import languages
from evaluator.both_sides import arches

MADE_UP_ARCH = "sm_999z"
MADE_UP_LANGUAGE = "futhark"
# Every model field that holds a registry name: (model, field, kind).
FIELDS = [
    ("catalog.KnowledgePack", "arch", "arch"),
    ("catalog.ArchitectureTarget", "arch", "arch"),
    ("submissions.Submission", "arch", "arch"),
    ("submissions.Submission", "language", "language"),
    ("agent.ModelRun", "arch", "arch"),
    ("agent.ModelRun", "language", "language"),
    ("agent.RunTaskMetrics", "arch", "arch"),
]


@pytest.fixture
def made_up_entries(monkeypatch):
    """A made-up architecture and a made-up language, registered for one test."""
    arch = dataclasses.replace(arches.ARCHES["sm_90a"], name=MADE_UP_ARCH, label="Made-up (sm_999z)")
    monkeypatch.setitem(arches.ARCHES, MADE_UP_ARCH, arch)
    lang = dataclasses.replace(languages.DEFAULT_LANGUAGE, name=MADE_UP_LANGUAGE, label="Futhark", suffix=".fut")
    monkeypatch.setitem(languages.LANGUAGES, MADE_UP_LANGUAGE, lang)


def _field(label: str, name: str):
    from django.apps import apps

    return apps.get_model(label)._meta.get_field(name)


@pytest.mark.parametrize(("model", "name", "kind"), FIELDS)
def test_every_registry_field_takes_a_new_entry_and_refuses_an_unknown_name(made_up_entries, model, name, kind):
    field = _field(model, name)
    assert not field.choices  # nothing of the registry in the schema
    made_up = MADE_UP_ARCH if kind == "arch" else MADE_UP_LANGUAGE
    assert field.clean(made_up, None) == made_up
    with pytest.raises(ValidationError, match="unknown"):
        field.clean("sm_0x" if kind == "arch" else "cobol", None)
    offered = [value for value, _ in field.formfield().choices]
    assert made_up in offered and ("sm_90a" in offered if kind == "arch" else "triton" in offered)


@pytest.mark.django_db
def test_a_submission_with_a_new_architecture_and_language_validates_and_needs_no_migration(made_up_entries):
    from portal.submissions.models import Submission
    from tests.support.factories import sync_catalog

    sync_catalog()
    from portal.catalog.models import Task

    task = Task.objects.first()
    common = {"task": task, "source": "x", "source_sha256": "0" * 64, "source_bytes": 1}
    Submission(arch=MADE_UP_ARCH, language=MADE_UP_LANGUAGE, **common).full_clean()
    with pytest.raises(ValidationError) as refused:
        Submission(arch="sm_0x", language="cobol", **common).full_clean()
    assert set(refused.value.message_dict) == {"arch", "language"}
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())  # exits 1 on a pending migration


def test_the_upload_form_offers_a_new_architecture():
    from portal.submissions.forms import SubmissionForm

    assert MADE_UP_ARCH not in dict(SubmissionForm().fields["arch"].choices)
    with pytest.MonkeyPatch.context() as patch:
        arch = dataclasses.replace(arches.ARCHES["sm_90a"], name=MADE_UP_ARCH, label="Made-up (sm_999z)")
        patch.setitem(arches.ARCHES, MADE_UP_ARCH, arch)
        assert dict(SubmissionForm().fields["arch"].choices)[MADE_UP_ARCH] == "Made-up (sm_999z)"
