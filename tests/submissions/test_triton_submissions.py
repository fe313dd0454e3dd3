"""Triton as a kernel language in the portal: the submission form and API carry it, and a model run in Triton
gets Triton's rules and signature, has its ```python reply extracted and submitted as Triton, and the real
evaluator (CPU stages) scores that file as Triton."""

from __future__ import annotations

import pytest
from django.test import override_settings

from portal.agent import services
from portal.agent.extract import extract_kernel
from portal.agent.models import ModelRun, Turn
from portal.catalog.models import Task
from portal.leaderboard.cache import leaderboard_changed
from portal.submissions.models import Evaluation, Submission
from tests.support import leaderboard_factories as lf
from tests.support.agent_support import LOOP_SETTINGS, drain, fenced, replay, start_replay_run  # noqa: F401 - fixture
from tests.support.factories import GEMM, REPO, make_token, make_user, starter_source, sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - fixture

TRITON_GEMM = (REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py").read_text()


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _api(client, token, body):
    return client.post(
        "/api/v1/submissions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


@pytest.mark.django_db
def test_api_submission_records_the_language_and_refuses_unknown_ones(client, alice):
    token = make_token(alice)
    body = {"task": GEMM, "arch": "sm_90a", "source": TRITON_GEMM, "language": "triton"}
    response = _api(client, token, body)
    assert response.status_code == 201, response.content
    assert response.json()["language"] == "triton"
    assert Submission.objects.get().language == "triton"
    plain = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": starter_source()})
    assert plain.status_code == 201 and plain.json()["language"] == "cuda"
    bad = _api(client, token, {**body, "language": "fortran", "force": True})
    assert bad.status_code == 400 and "unknown language 'fortran'" in bad.json()["error"]


@pytest.mark.django_db
def test_form_submission_in_triton(client, alice):
    client.force_login(alice)
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "language": "triton", "source": TRITON_GEMM})
    assert response.status_code == 302
    assert Submission.objects.get().language == "triton"
    assert 'name="language"' in client.get("/submit/").content.decode()


def test_extraction_takes_the_last_python_block_with_a_triton_kernel():
    reply = (
        "Plan first.\n```python\nimport torch  # a sketch, no kernel\n```\n"
        + fenced("__global__ void k() {}\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);")
        + "\nThe file:\n"
        + fenced(TRITON_GEMM, "python")
    )
    assert extract_kernel(reply, language="triton").kernel == TRITON_GEMM.rstrip() + "\n"
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in extract_kernel(reply).kernel  # a CUDA run still takes the .cu
    assert extract_kernel(fenced(TRITON_GEMM, "python")).kernel == ""


@pytest.mark.django_db(transaction=True)
@override_settings(**LOOP_SETTINGS)
def test_a_triton_model_run_submits_its_python_reply_as_triton(alice, replay):  # noqa: F811
    pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    reply = {"content": "Here is the kernel.\n\n" + fenced(TRITON_GEMM, "python")}
    server = replay({"tasks": {GEMM: [reply]}})
    run = start_replay_run(alice, server, language="triton")
    assert run.language == "triton"
    opening = run.trajectories.get().messages
    assert "```python" in opening[0]["content"] and "@triton.jit" in opening[0]["content"]
    # The task's Triton starter, in the block the model must answer with; never the CUDA one.
    task = Task.objects.get(slug=GEMM)
    assert task.starter("triton") and f"```python\n{task.starter('triton').strip()}\n```" in opening[0]["content"]
    assert task.starter("cuda").strip() not in opening[0]["content"]
    assert "def run(A, B, C) -> None" in opening[1]["content"] and "```cuda" not in opening[1]["content"]
    drain()
    turn = Turn.objects.get(trajectory__run=run)
    assert turn.kernel == TRITON_GEMM.rstrip() + "\n"
    evaluation = turn.evaluation
    assert evaluation.state == Evaluation.State.DONE, evaluation.infra_error
    assert evaluation.submission.language == "triton" and evaluation.submission.kind == Submission.Kind.AGENT
    verdict = evaluation.verdict
    assert verdict["language"] == "triton" and verdict["status"] == "STATIC_ONLY", verdict["compile"]["output"]
    assert verdict["sass"]["families"]["gmma"] > 0
    assert ModelRun.objects.get(id=run.id).language == "triton"


@pytest.mark.django_db
def test_kernel_board_shows_the_language_and_filters_on_it(client, leaderboard_isolation):  # noqa: F811
    sync_catalog()
    cuda = lf.evaluation(owner=lf.user("alice"), name="alice.cu", speedup=1.5)
    triton = lf.evaluation(owner=lf.user("bob"), name="bob_gemm.py", speedup=1.2)
    Submission.objects.filter(id=triton.submission_id).update(language="triton")
    leaderboard_changed()
    html = client.get("/leaderboard/kernels/", {"task": lf.GEMM, "arch": "sm_90a"}).content.decode()
    assert '<th class="opt">Language</th>' in html and '<td class="opt">Triton</td>' in html
    assert '<td class="opt">CUDA</td>' in html
    assert 'id="filter-language"' in html
    only = client.get("/leaderboard/kernels/", {"task": lf.GEMM, "arch": "sm_90a", "language": "triton"})
    page = only.content.decode()
    assert only.status_code == 200 and "bob_gemm.py" in page and "alice.cu" not in page
    rows = client.get("/api/v1/leaderboard/kernels", {"task": lf.GEMM, "arch": "sm_90a", "language": "triton"}).json()
    assert [(r["name"], r["language"], r["rank"]) for r in rows["rows"]] == [("bob_gemm.py", "triton", 1)]
    both = client.get("/api/v1/leaderboard/kernels", {"task": lf.GEMM, "arch": "sm_90a"}).json()["rows"]
    assert {r["name"]: r["language"] for r in both if not r["reference"]} == {
        "alice.cu": "cuda",
        "bob_gemm.py": "triton",
    }
    assert str(cuda.id) in {r["evaluation_id"] for r in both}
    bad = client.get("/api/v1/leaderboard/kernels", {"task": lf.GEMM, "arch": "sm_90a", "language": "rust"})
    assert bad.status_code == 400 and "unknown language 'rust'" in bad.json()["error"]


@pytest.mark.django_db
def test_task_page_shows_the_triton_signature_beside_the_cuda_one(client):
    sync_catalog()
    page = client.get(f"/tasks/{GEMM}/").content.decode()
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in page and "@triton.jit" in page
    text = page.replace('<span class="', "\x00").split("\x00")  # highlighted: check the tokens, not the markup
    assert "run" in page and "A" in page and any("-&gt;" in t or "->" in t for t in text)


@pytest.mark.django_db
def test_each_language_gets_its_own_starter_in_the_opening_messages():
    sync_catalog()
    task = Task.objects.get(slug="mha_bwd_d64_causal")

    def opening(language: str) -> tuple[str, str]:
        run = ModelRun(arch="sm_90a", language=language, pack_variant=ModelRun.PackVariant.ARCH)
        system, user = (m["content"] for m in services.opening_messages(run=run, task=task))
        return system, user

    system, user = opening("triton")
    assert "# ABI starter\n\nA minimal correct kernel file for this task" in system
    assert f"```python\n{task.starter('triton').strip()}\n```" in system
    assert "CAUSAL = True" in system and "constexpr bool kCausal" not in system  # not the CUDA starter
    assert "def run(Q, K, V, O, dO, LSE, dQ, dK, dV) -> None" in user
    system, user = opening("cuda")
    assert f"```cuda\n{task.starter('cuda').strip()}\n```" in system
    assert task.starter("triton").strip() not in system and "TensorView" in user
