"""The public catalog pages: home, task list, task detail, packs; 404 for unknown slugs."""

from __future__ import annotations

import hashlib

import pytest
from django.core.management import call_command

from portal.catalog.models import KnowledgePack, Task
from tests.support.factories import GEMM, REPO

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog():
    call_command("sync_tasks")


def test_home_explains_the_three_layers(client, catalog):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for phrase in ("Three layers", "predicated-on", "cuBLAS", "Hopper (sm_90a)", "Blackwell (sm_100a)"):
        assert phrase in html


def test_task_list_links_every_active_task(client, catalog):
    html = client.get("/tasks/").content.decode()
    for slug in Task.objects.filter(is_active=True).values_list("slug", flat=True):
        assert f'href="/tasks/{slug}/"' in html


def test_task_detail_shows_signature_targets_workloads_and_pack(client, catalog):
    response = client.get(f"/tasks/{GEMM}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "TensorView" in html and "[M, K]" in html and "bfloat16" in html
    assert "gmma" in html and "tcgen05" in html
    assert "7abd165d-8d16-5996-9d55-3b80c1718242" in html  # the headline workload's uuid
    assert "headline" in html
    assert "/packs/hopper/download" in html
    assert "tokens" in html


def test_unknown_task_is_a_404_page(client, catalog):
    response = client.get("/tasks/no_such_task/")
    assert response.status_code == 404
    assert b"Not found" in response.content


def test_retired_task_is_a_404(client, catalog):
    Task.objects.filter(slug=GEMM).update(is_active=False)
    assert client.get(f"/tasks/{GEMM}/").status_code == 404


def test_pack_download_is_an_attachment_with_the_stored_bytes(client, catalog):
    pack = KnowledgePack.objects.get(slug="hopper")
    response = client.get("/packs/hopper/download")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="ptxbench-pack-hopper.md"'
    assert response["Content-Type"].startswith("text/markdown")
    assert hashlib.sha256(response.content).hexdigest() == pack.sha256


def test_pack_page_renders_markdown_without_passing_raw_html(client, catalog):
    KnowledgePack.objects.filter(slug="hopper").update(text="# Title\n\n<script>alert(1)</script>\n")
    html = client.get("/packs/hopper/").content.decode()
    assert '<h1 id="title">Title <a class="headerlink" href="#title"' in html  # with its anchor
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_starter_download(client, catalog):
    task = Task.objects.get(slug=GEMM)
    response = client.get(f"/tasks/{GEMM}/starter.cu")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{GEMM}_starter.cu"'
    assert response.content.decode() == task.starter("cuda") != ""


def test_only_a_registered_starter_file_name_is_served(client, catalog):
    assert client.get(f"/tasks/{GEMM}/definition.json").status_code == 404
    assert client.get(f"/tasks/{GEMM}/kernel.cu").status_code == 404
    assert client.get(f"/tasks/{GEMM}/..%2fstarter.cu").status_code == 404


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_triton_starter_is_synced_shown_beside_the_cuda_one_and_downloadable(client, catalog):
    task = Task.objects.get(slug=GEMM)
    assert task.starters == {
        "cuda": (REPO / "tasks" / GEMM / "starter.cu").read_text(encoding="utf-8"),
        "triton": (REPO / "tasks" / GEMM / "starter_triton.py").read_text(encoding="utf-8"),
    }
    html = client.get(f"/tasks/{GEMM}/").content.decode()
    cuda, triton = html.index('id="starter-cuda"'), html.index('id="starter-triton"')
    assert cuda < triton < html.index("Reference (PyTorch)")
    assert f'href="/tasks/{GEMM}/starter.cu"' in html[cuda:triton]
    assert f'href="/tasks/{GEMM}/starter_triton.py"' in html[triton:]
    # Highlighted as Python by Pygments: the decorator and the keyword get their token classes.
    section = html[triton:]
    assert '<span class="nd">@triton</span><span class="o">.</span><span class="n">jit</span>' in section
    assert '<span class="k">def</span><span class="w"> </span><span class="nf">run</span>' in section
    response = client.get(f"/tasks/{GEMM}/starter_triton.py")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{GEMM}_starter_triton.py"'
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == task.starter("triton")


def test_starter_text_is_escaped_on_the_page(client, catalog):
    Task.objects.filter(slug=GEMM).update(starters={"triton": 'X = "</pre><script>alert(1)</script>"\n'})
    html = client.get(f"/tasks/{GEMM}/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_task_without_a_triton_starter_has_no_section_and_no_download(client, catalog):
    task = Task.objects.get(slug=GEMM)
    Task.objects.filter(slug=GEMM).update(starters={"cuda": task.starter("cuda")})
    html = client.get(f"/tasks/{GEMM}/").content.decode()
    assert 'id="starter-triton"' not in html and 'id="starter-cuda"' in html
    assert client.get(f"/tasks/{GEMM}/starter_triton.py").status_code == 404
    assert client.get("/tasks/no_such_task/starter_triton.py").status_code == 404
