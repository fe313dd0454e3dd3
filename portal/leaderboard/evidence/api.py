"""The board's evidence in the public read-only API under /api/v2/leaderboard/: FlashInfer Trace JSONL of every
kernel on a kernel board. Errors are {"error": "..."} with the right status."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from portal.accounts.api_auth import api_endpoint
from portal.core.api import json_error
from portal.leaderboard.attachments import attachment
from portal.leaderboard.boards import selectors as boards
from portal.leaderboard.boards.selectors import BadQuery
from portal.leaderboard.cache import Generation
from portal.leaderboard.evidence.selectors import traces_jsonl
from portal.submissions.models import Evaluation


@api_endpoint(methods=("GET",), auth=False)
def kernel_traces(request: HttpRequest) -> HttpResponse:
    """FlashInfer Trace JSONL of every kernel on the board (one line per workload result)."""
    gen = Generation()
    try:
        query = boards.parse_query(request.GET, gen, task_required=True)
    except BadQuery as exc:
        return json_error(str(exc), 400)
    rows = boards.kernel_board(gen, task=query.task, arch=query.arch, gpu=query.gpu)
    by_id = {
        str(e.id): e
        for e in Evaluation.objects.select_related("submission__task").filter(id__in=[r.evaluation_id for r in rows])
    }
    data = traces_jsonl([by_id[r.evaluation_id] for r in rows if r.evaluation_id in by_id])
    return attachment(data, filename=f"traces-{query.task}-{query.arch}.jsonl", content_type="application/x-ndjson")
