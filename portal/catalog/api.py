"""GET /api/v2/registry: the architectures and kernel languages this portal evaluates, read from the evaluator's
registries (evaluator/both_sides/arches.py, evaluator/languages.py) so that clients ask here instead of keeping a copy.
Public and read-only; the answer is built once per process, since it changes only with the code."""

from __future__ import annotations

import functools

from django.http import HttpRequest, JsonResponse

from evaluator.both_sides.arches import ARCHES
from evaluator.languages import LANGUAGES
from portal.accounts.api_auth import api_endpoint


@functools.cache
def registry_document() -> dict:
    return {
        "arches": [
            {
                "name": arch.name,
                "label": arch.label,
                "gpus": list(arch.gpus),
                "queue": arch.queue,
                "families": list(arch.families),
                "knowledge_pack": arch.knowledge_pack,
            }
            for arch in ARCHES.values()
        ],
        # starter_file: where a task's starter in that language is, /tasks/<task>/<starter_file> ("" when none).
        "languages": [
            {
                "name": lang.name,
                "label": lang.display_name,
                "suffix": lang.suffix,
                "suffixes": list(lang.suffixes),
                "starter_file": lang.starter_file,
            }
            for lang in LANGUAGES.values()
        ],
    }


@api_endpoint(methods=("GET",), auth=False)
def registry(request: HttpRequest) -> JsonResponse:
    return JsonResponse(registry_document())
