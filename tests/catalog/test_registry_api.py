"""GET /api/v1/registry lists exactly the evaluator's registries: what clients read instead of a copy."""

from __future__ import annotations

import pytest

from evaluator.both_sides.arches import ARCHES
from evaluator.languages import LANGUAGES

pytestmark = pytest.mark.django_db


def test_registry_lists_every_architecture_as_the_evaluator_holds_it(client):
    body = client.get("/api/v1/registry").json()
    assert [a["name"] for a in body["arches"]] == list(ARCHES)
    for entry in body["arches"]:
        arch = ARCHES[entry["name"]]
        assert entry == {
            "name": arch.name,
            "label": arch.label,
            "gpus": list(arch.gpus),
            "queue": arch.queue,
            "families": list(arch.families),
            "knowledge_pack": arch.knowledge_pack,
        }


def test_registry_lists_every_language_with_its_file_suffix(client):
    body = client.get("/api/v1/registry").json()
    assert body["languages"] == [
        {
            "name": lang.name,
            "label": lang.display_name,
            "suffix": lang.suffix,
            "suffixes": list(lang.suffixes),
            "starter_file": lang.starter_file,
        }
        for lang in LANGUAGES.values()
    ]


def test_registry_is_read_only_and_public(client):
    assert client.get("/api/v1/registry").status_code == 200
    response = client.post("/api/v1/registry", {})
    assert response.status_code == 405
    assert "error" in response.json()
