"""The CLI's architectures and languages are the portal's (GET /api/v2/registry), never a list of its own: a portal
listing a made-up architecture or language gets it accepted and the usual ones refused; an older portal without
the endpoint is not checked at all."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from tests.support.cli_support import FakePortal, run_cli, serving

MADE_UP = {
    "arches": [
        {"name": "sm_999x", "label": "Made up", "gpus": ["X1"], "queue": "gpu-x", "families": ["xmma"]},
        {"name": "sm_998y", "label": "Also made up", "gpus": ["Y1"], "queue": "gpu-y", "families": []},
    ],
    "languages": [{"name": "mojo", "suffix": ".mojo"}],
}


class _Portal(FakePortal):
    """Answers the registry (or 404 without one), a board and a summary per architecture; records every GET."""

    registry: dict | None = MADE_UP
    asked: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        type(self).asked.append(self.path)
        if url.path == "/api/v2/registry" and self.registry is not None:
            body = self.registry
        elif url.path == "/api/v2/leaderboard/kernels":
            body = {"query": query, "rows": []}
        elif url.path == "/api/v2/leaderboard/summary":
            arch = query.get("arch", "sm_default")
            body = {"query": {"arch": arch}, "tasks": [f"task_on_{arch}"], "rows": []}
        else:
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        self._send(200, json.dumps(body).encode(), "application/json")

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        type(self).asked.append(f"POST {self.path} " + self.rfile.read(length).decode("utf-8", "replace"))
        self._send(201, json.dumps({"id": 5, "evaluations": []}).encode(), "application/json")


class _OldPortal(_Portal):
    registry = None


@pytest.fixture
def portal():
    _Portal.asked = []
    with serving(_Portal) as url:
        yield url


@pytest.fixture
def old_portal():
    _Portal.asked = []
    with serving(_OldPortal) as url:
        yield url


def _board(url, home, *extra):
    return run_cli("board", "--task", "t", *extra, url=url, home=home)


def test_an_architecture_the_portal_lists_is_accepted_and_one_it_does_not_is_refused(portal, tmp_path):
    accepted = _board(portal, tmp_path, "--arch", "sm_999x")
    assert accepted.returncode == 0, accepted.stderr
    assert any(p.startswith("/api/v2/leaderboard/kernels") and "arch=sm_999x" in p for p in _Portal.asked)

    _Portal.asked = []
    refused = _board(portal, tmp_path, "--arch", "sm_90a")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "ptxbench: unknown architecture 'sm_90a'; this portal has: sm_999x, sm_998y"
    assert not any(p.startswith("/api/v2/leaderboard/kernels") for p in _Portal.asked)  # refused before asking


def test_tasks_loops_over_the_portals_architectures_asking_the_registry_once(portal, tmp_path):
    result = run_cli("tasks", "--format", "json", url=portal, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"task": "task_on_sm_999x", "arches": ["sm_999x"]},
        {"task": "task_on_sm_998y", "arches": ["sm_998y"]},
    ]
    assert sum(p.startswith("/api/v2/registry") for p in _Portal.asked) == 1


def test_a_language_the_portal_lists_is_accepted_and_told_by_its_suffix(portal, tmp_path):
    assert _board(portal, tmp_path, "--arch", "sm_999x", "--language", "mojo").returncode == 0
    refused = _board(portal, tmp_path, "--arch", "sm_999x", "--language", "triton")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "ptxbench: unknown language 'triton'; this portal has: mojo"

    kernel = tmp_path / "k.mojo"
    kernel.write_text("fn kernel(): pass\n")
    submitted = run_cli(
        "submit", str(kernel), "--task", "t", "--arch", "sm_998y", url=portal, home=tmp_path, PTXBENCH_TOKEN="ptx_x"
    )
    assert submitted.returncode == 0, submitted.stderr
    post = next(p for p in _Portal.asked if p.startswith("POST /api/v2/submissions"))
    assert 'name="language"\r\n\r\nmojo\r\n' in post

    unknown = tmp_path / "k.cu"
    unknown.write_text("__global__ void k() {}\n")
    refused = run_cli(
        "submit", str(unknown), "--task", "t", "--arch", "sm_999x", url=portal, home=tmp_path, PTXBENCH_TOKEN="ptx_x"
    )
    assert refused.returncode == 2 and "cannot tell the language of k.cu (.mojo is mojo)" in refused.stderr


def test_an_older_portal_without_the_registry_is_not_checked_and_says_so_in_one_line(old_portal, tmp_path):
    result = _board(old_portal, tmp_path, "--arch", "sm_whatever", "--language", "whatever", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        "ptxbench: note: this portal does not list its architectures and languages; not checked here"
    ]
    assert any("arch=sm_whatever" in p for p in _Portal.asked)

    # Without a list, `tasks` asks the summary once with no architecture: the portal's own default.
    _Portal.asked = []
    tasks = run_cli("tasks", "--format", "json", url=old_portal, home=tmp_path)
    assert tasks.returncode == 0, tasks.stderr
    assert json.loads(tasks.stdout) == [{"task": "task_on_sm_default", "arches": ["sm_default"]}]
    assert [p for p in _Portal.asked if "summary" in p] == ["/api/v2/leaderboard/summary"]


def test_every_suffix_the_portal_accepts_for_a_language_is_told_as_that_language():
    """A language with several suffixes (CUDA: `.cu` and `.cuh`, as the upload form takes them) is told by each."""
    from ptxbench_cli import registry

    entry = {"name": "cuda", "suffix": ".cu", "suffixes": [".cu", ".cuh"]}
    assert registry.suffixes_of(entry) == [".cu", ".cuh"]
    assert registry.suffixes_of({"name": "cuda", "suffix": ".cu"}) == [".cu"]  # a portal listing only `suffix`
