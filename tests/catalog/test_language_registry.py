"""A language added to the evaluator's registry reaches every portal layer with no other edit: the submit form
takes its suffix and its pasted source, the agent prompts and reads replies in its words, the run form offers it,
and the catalog syncs, shows and serves its starter. The made-up language lives in the registry for one test."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evaluator.both_sides.taskdata import Definition
from evaluator.languages import CUDA, LANGUAGES, Language, Prompting
from portal.agent.extract import extract_kernel
from portal.agent.forms import RunForm
from portal.agent.models import ModelRun
from portal.agent.prompts import no_kernel, system_prompt, task_message
from portal.agent.services import opening_messages
from portal.catalog.models import Task
from portal.submissions.forms import SubmissionForm
from tests.support.factories import GEMM, copy_task

pytestmark = pytest.mark.django_db


def _purr_signature(definition: Definition) -> str:
    return "purr run(" + "; ".join(s.name for s in (*definition.inputs, *definition.outputs)) + ")"


PURR = Language(
    "purr",
    ".purr",
    "kernel.purr",
    "purrc",
    CUDA.check_policy,  # never reached here: nothing is evaluated
    CUDA.build,
    other_suffixes=(".pr",),
    label="Purr",
    starter_file="starter.purr",
    signature=_purr_signature,
    entry_point="One `.purr` file whose `@pounce` kernels a `purr run` launches.",
    fence="purr",
    signature_fence="purr",
    prompting=Prompting(
        rules="You are writing one Purr kernel file. Reply in one ```purr block.",
        answer="the complete Purr file",
        kernel_file="a complete .purr file with @pounce kernels and `purr run`",
        signature_verb="meow",
        accepted_fences=frozenset({"purr", "pr"}),
        markers_all=("@pounce", "purr run"),
    ),
    pasted_marker=re.compile(r"^use whiskers\b", re.MULTILINE),
)
PURR_KERNEL = "use whiskers\n@pounce k() {}\npurr run(A; B; C) { k() }\n"


@pytest.fixture
def purr(monkeypatch):
    monkeypatch.setitem(LANGUAGES, PURR.name, PURR)
    return PURR


@pytest.fixture
def gemm_task():
    call_command("sync_tasks", verbosity=0)
    return Task.objects.get(slug=GEMM)


def _form(gemm_task, *, upload=None, **fields) -> SubmissionForm:
    data = {"task": gemm_task.slug, "arch": "sm_90a", "language": "", "source": "", **fields}
    return SubmissionForm(data, {"file": upload} if upload else {})


@pytest.mark.parametrize("filename", ["gemm.purr", "gemm.pr"])
def test_the_submit_form_takes_the_new_languages_suffixes(purr, gemm_task, filename):
    form = _form(gemm_task, upload=SimpleUploadedFile(filename, PURR_KERNEL.encode()))
    assert form.is_valid(), form.errors
    assert form.cleaned_data["language"] == "purr"
    assert ("purr", "Purr") in form.fields["language"].choices
    assert ".purr/.pr: Purr" in form.fields["file"].label


def test_the_submit_form_reads_pasted_source_by_the_new_languages_marker(purr, gemm_task):
    form = _form(gemm_task, source=PURR_KERNEL)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["language"] == "purr"
    contradiction = _form(gemm_task, upload=SimpleUploadedFile("gemm.purr", b"x"), language="cuda")
    assert not contradiction.is_valid()
    assert "is a .purr file (Purr) but Language says CUDA" in str(contradiction.errors)


def test_without_the_registry_entry_the_suffix_is_unknown(gemm_task):
    form = _form(gemm_task, upload=SimpleUploadedFile("gemm.purr", PURR_KERNEL.encode()))
    assert not form.is_valid() and "Cannot tell the language" in str(form.errors)


def test_prompts_and_feedback_speak_the_new_language(purr):
    system = system_prompt(arch="sm_90a", pack_text="", starter="@pounce s() {}", language="purr")
    assert system.startswith("You are writing one Purr kernel file.")
    assert "```purr\n@pounce s() {}\n```" in system and "```cuda" not in system
    message = task_message(
        name="t",
        description="",
        definition={},
        workloads=[],
        run_signature="purr run(A; C)",
        families=[],
        arch="sm_90a",
        language="purr",
    )
    assert "## The function your file must meow\n\n```purr\npurr run(A; C)\n```" in message
    assert message.rstrip().endswith("Answer with the complete Purr file in one ```purr block.")
    assert "```purr ... ```" in no_kernel("purr") and "@pounce" in no_kernel("purr")


def test_extraction_takes_the_new_languages_block_and_only_for_its_runs(purr):
    cuda = "__global__ void k() {}\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"
    reply = f"A draft:\n```purr\n@pounce k() {{}}\n```\nThe file:\n```pr\n{PURR_KERNEL}```\nOld:\n```cuda\n{cuda}```\n"
    assert extract_kernel(reply, language="purr").kernel == PURR_KERNEL  # the last block with both markers
    assert extract_kernel(reply, language="cuda").kernel == cuda
    assert extract_kernel(f"```python\n{PURR_KERNEL}```\n", language="purr").kernel == ""  # a fence it does not take


def test_the_run_form_offers_the_new_language(purr, gemm_task):
    form = RunForm()
    assert ("purr", "Purr") in form.fields["language"].choices
    assert "Purr replies in a ```purr block" in form.fields["language"].help_text


def test_the_catalog_syncs_shows_and_serves_the_new_languages_starter(purr, client, tmp_path):
    root = copy_task(tmp_path)
    (root / GEMM / "starter.purr").write_text(PURR_KERNEL + '"</pre><script>alert(1)</script>"\n')
    call_command("sync_tasks", tasks_dir=str(root), verbosity=0)
    task = Task.objects.get(slug=GEMM)
    assert task.signature("purr") == "purr run(A; B; C)"
    assert task.starter("purr").startswith(PURR_KERNEL) and task.starter("cuda")

    html = client.get(f"/tasks/{GEMM}/").content.decode()
    assert 'id="entry-purr"' in html and "purr run(A; B; C)" in html
    section = html[html.index('id="starter-purr"') : html.index("Reference (PyTorch)")]
    assert "Starter in Purr" in section and f'href="/tasks/{GEMM}/starter.purr"' in section
    assert "<script>alert(1)</script>" not in html  # the starter is text on the page, escaped
    response = client.get(f"/tasks/{GEMM}/starter.purr")
    assert response.status_code == 200 and response.content.decode() == task.starter("purr")
    assert response["Content-Disposition"] == f'attachment; filename="{GEMM}_starter.purr"'

    run = ModelRun(arch="sm_90a", language="purr", pack_variant=ModelRun.PackVariant.NONE)
    system, user = (m["content"] for m in opening_messages(run=run, task=task))
    assert f"```purr\n{task.starter('purr').strip()}\n```" in system and "```purr\npurr run(A; B; C)\n```" in user
