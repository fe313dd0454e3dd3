"""Every local path the client writes is built from values it checked: a portal (or anyone between it and the
client on plain http) that answers with `..` in an id never gets a file written outside --output."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from tests.support.cli_support import FakePortal, run_cli, serving

EVALUATION = "0b5f3c2e-8a51-4a4b-9d1e-3f0c6a7b2d10"
SOURCE = b"// a kernel\n"


def _bundle() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("kernel.cu", SOURCE)
        entry = {"path": "kernel.cu", "sha256": hashlib.sha256(SOURCE).hexdigest(), "size": len(SOURCE)}
        archive.writestr("MANIFEST.json", json.dumps({"files": [entry]}))
    return buffer.getvalue()


class _HostilePortal(FakePortal):
    """Answers an evaluation whose `submission` is whatever the test sets, and a consistent bundle for any id."""

    submission: object = None
    dataset_version: object = 1

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?")[0]
        if path == f"/api/v2/evaluations/{EVALUATION}":
            self._json({"id": EVALUATION, "submission": self.submission})
        elif path.startswith("/api/v2/submissions/"):
            self._json({"id": 7, "source_sha256": hashlib.sha256(SOURCE).hexdigest()})
        elif path.endswith("/bundle.zip"):
            bundle = _bundle()
            self._send(200, bundle, "application/zip", {"X-Content-SHA256": hashlib.sha256(bundle).hexdigest()})
        elif path == "/api/v2/results-datasets":
            entry = {"path": "card.md", "sha256": hashlib.sha256(b"card").hexdigest()}
            self._json({"versions": [{"version": self.dataset_version, "files": [entry]}]})
        elif path.endswith("/card.md"):
            self._send(200, b"card", "text/markdown")
        else:
            self._json({"error": "no such thing"}, 404)

    def _json(self, document, status=200):
        self._send(status, json.dumps(document).encode(), "application/json")


@pytest.fixture
def hostile_portal():
    with serving(_HostilePortal) as url:
        yield url


def _files_under(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("answer", ["../../../escaped", "7/../../../../escaped", -3, 7.5, True, None, "٧"])
def test_download_by_evaluation_refuses_a_submission_id_that_is_not_a_positive_integer(
    hostile_portal, tmp_path, answer
):
    _HostilePortal.submission = answer
    out = tmp_path / "a" / "b" / "out"
    out.mkdir(parents=True)
    result = run_cli(
        "download", EVALUATION, "--what", "kernel,bundle", "-o", str(out), url=hostile_portal, home=tmp_path
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "invalid submission id" in result.stderr
    written = [p for p in _files_under(tmp_path) if not p.startswith("config/")]
    assert written == []


def test_download_by_evaluation_writes_under_the_checked_id(hostile_portal, tmp_path):
    _HostilePortal.submission = 7
    out = tmp_path / "out"
    result = run_cli("download", EVALUATION, "--what", "kernel", "-o", str(out), url=hostile_portal, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _files_under(out) == ["submission-7/kernel.cu"]


@pytest.mark.parametrize("version", ["../../escaped", -1, 2.5, None])
def test_dataset_refuses_a_version_that_is_not_a_positive_integer(hostile_portal, tmp_path, version):
    _HostilePortal.dataset_version = version
    out = tmp_path / "a" / "out"
    out.mkdir(parents=True)
    result = run_cli("dataset", "-o", str(out), url=hostile_portal, home=tmp_path)
    assert result.returncode == 1 and "invalid dataset version" in result.stderr, result.stderr
    assert [p for p in _files_under(tmp_path) if not p.startswith("config/")] == []
