"""An evidence bundle is streamed, never built in memory (portal/leaderboard/evidence/
downloads.py). Before: an anonymous GET of a submission's bundle.zip returned 251,741,018 bytes in 21.1 s while one
gunicorn worker grew to 621 MiB, since the zip was assembled in a BytesIO from every artifact read whole. Now it
is written to a temporary file a block at a time and sent from there: the worker's peak memory stays a small
fraction of the bundle, whatever its size."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tracemalloc
import zipfile

import pytest

from portal.submissions import artifacts
from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
MiB = 1024 * 1024


def test_a_large_bundle_is_streamed_with_a_small_peak_of_memory(client):
    sync_catalog()
    # Random bytes do not compress: the bundle is as large as its files.
    files = {f"big-{i}.log": os.urandom(6 * MiB) for i in range(4)}
    evaluation = lf.evaluation(owner=lf.user("ada"), files=files)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    del files

    # The bundle read whole (this also loads every module the view needs before memory is measured below): every
    # file as stored, with a manifest that says so.
    response = client.get(f"/evidence/submissions/{evaluation.submission_id}/bundle.zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    manifest = {entry["path"]: entry for entry in json.loads(archive.read("MANIFEST.json"))["files"]}
    for name, digest in digests.items():
        path = f"evaluations/{evaluation.id}/{name}"
        assert hashlib.sha256(archive.read(path)).hexdigest() == digest == manifest[path]["sha256"]
    del archive, response

    tracemalloc.start()
    try:
        response = client.get(f"/evidence/submissions/{evaluation.submission_id}/bundle.zip")
        streamed, size = hashlib.sha256(), 0
        for chunk in response.streaming_content:  # read as a client would, keeping nothing
            streamed.update(chunk)
            size += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200
    assert size > 24 * MiB and int(response["Content-Length"]) == size
    assert streamed.hexdigest() == response["X-Content-SHA256"]
    assert peak < size / 16, f"peak {peak} bytes of Python memory for a {size}-byte bundle"


def test_a_stored_file_that_changed_on_disk_stops_the_bundle(client):
    sync_catalog()
    evaluation = lf.evaluation(owner=lf.user("ada"), files={"kernel.sass": b"listing\n" * 1000})
    stored = evaluation.artifacts.get(name="kernel.sass")
    artifacts.path_of(stored).write_bytes(b"swapped\n" * 1000)
    response = client.get(f"/evidence/submissions/{evaluation.submission_id}/bundle.zip")
    assert response.status_code == 500 and b"sha256" in response.content
