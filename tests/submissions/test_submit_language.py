"""The submit form takes a file's language from its extension unless one is chosen, and refuses a chosen
language that contradicts the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from portal.submissions.models import Submission
from tests.support.factories import GEMM, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
TRITON_GEMM = (REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py").read_text()


@pytest.fixture
def alice(client):
    sync_catalog()
    user = make_user("alice")
    client.force_login(user)
    return user


def _upload(client, filename: str, text: str, language: str = ""):
    upload = SimpleUploadedFile(filename, text.encode(), content_type="text/plain")
    return client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "language": language, "file": upload})


def test_a_py_upload_with_language_left_alone_is_triton(client, alice):
    """Catches: a .py upload with Language at its default recorded as CUDA (then rejected by the compile for
    lacking TVM_FFI_DLL_EXPORT_TYPED_FUNC)."""
    response = _upload(client, "gemm.py", TRITON_GEMM)
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Submission.objects.get().language == "triton"


def test_a_cu_upload_with_language_left_alone_is_cuda(client, alice):
    assert _upload(client, "gemm.cu", starter_source()).status_code == 302
    assert Submission.objects.get().language == "cuda"


@pytest.mark.parametrize(
    ("filename", "language", "said"),
    [
        ("gemm.py", "cuda", "“gemm.py” is a .py file (Triton) but Language says CUDA"),
        ("gemm.cu", "triton", "“gemm.cu” is a .cu file (CUDA) but Language says Triton"),
        ("gemm.txt", "", "Cannot tell the language of “gemm.txt”"),
    ],
)
def test_extension_and_language_that_disagree_are_a_clear_error(client, alice, filename, language, said):
    """Catches: a contradiction between the file and the chosen language accepted and left to fail later (or
    silently decided for CUDA)."""
    response = _upload(client, filename, TRITON_GEMM if filename.endswith(".py") else starter_source(), language)
    assert response.status_code == 400
    assert said in response.content.decode()
    assert not Submission.objects.exists()


def test_pasted_triton_source_with_language_left_alone_is_triton(client, alice):
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "language": "", "source": TRITON_GEMM})
    assert response.status_code == 302
    assert Submission.objects.get().language == "triton"


def test_the_form_defaults_to_the_file_and_says_so(client, alice):
    html = client.get("/submit/").content.decode()
    assert '<option value="" selected>From the file (.cu/.cuh: CUDA, .py: Triton)</option>' in html
    assert '<option value="cuda">CUDA</option>' in html and '<option value="triton">Triton</option>' in html


def test_an_api_upload_takes_its_language_from_the_file_name_too(client, alice):
    """Catches: a multipart .py upload through the API recorded as CUDA when `language` is left out."""
    from tests.support.factories import make_token

    token = make_token(alice)

    def post(filename, text, **fields):
        upload = SimpleUploadedFile(filename, text.encode(), content_type="text/plain")
        body = {"task": GEMM, "arch": "sm_90a", "file": upload, **fields}
        return client.post("/api/v1/submissions", body, HTTP_AUTHORIZATION=f"Bearer {token}")

    response = post("gemm.py", TRITON_GEMM)
    assert response.status_code == 201 and response.json()["language"] == "triton"
    refused = post("other.py", TRITON_GEMM + "\n# another\n", language="cuda")
    assert refused.status_code == 400
    assert refused.json()["error"] == "the file 'other.py' is triton, but 'language' says 'cuda'"
