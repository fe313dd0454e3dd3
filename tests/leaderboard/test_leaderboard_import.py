"""import_reference_verdicts: committed verdicts of the expert kernels become reference rows, once."""

from __future__ import annotations

import hashlib
import json
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from portal.leaderboard.boards.selectors import kernel_board
from portal.leaderboard.cache import Generation
from portal.leaderboard.evidence.selectors import submission_bundle
from portal.submissions.models import Artifact, Evaluation, Submission
from tests.support import leaderboard_factories as lf
from tests.support.factories import REPO, sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
SOLUTION = "hopper_tma_wgmma"


def _verdict_dir(tmp_path: Path, **fields) -> Path:
    source = (REPO / "tasks" / GEMM / "solutions" / SOLUTION / "kernel.cu").read_text()
    document = lf.verdict(
        source=source, speedup=1.18, ci=(1.16, 1.2), gpu="NVIDIA H200", tflops=720.0, peak=0.8, **fields
    )
    folder = tmp_path / "verdicts"
    folder.mkdir()
    (folder / "gemm-h200.json").write_text(json.dumps(document))
    (folder / "index.json").write_text(
        json.dumps([{"verdict": "gemm-h200.json", "task": GEMM, "solution": SOLUTION, "arch": "sm_90a"}])
    )
    return folder


def test_import_creates_a_reference_row_once(tmp_path):
    sync_catalog()
    folder = _verdict_dir(tmp_path)
    out = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=out)
    assert "1 imported" in out.getvalue()
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=out)
    assert "0 imported, 1 already there" in out.getvalue()

    (submission,) = Submission.objects.filter(kind="reference")
    source = (REPO / "tasks" / GEMM / "solutions" / SOLUTION / "kernel.cu").read_bytes()
    assert submission.user is None and submission.name == SOLUTION
    assert submission.source_sha256 == hashlib.sha256(source).hexdigest()
    (evaluation,) = Evaluation.objects.filter(submission=submission)
    assert (evaluation.state, evaluation.status, evaluation.speedup_factor, evaluation.gpu_name) == (
        "done",
        "PASSED",
        1.18,
        "NVIDIA H200",
    )
    assert evaluation.driver_version == "570.86.15"
    assert evaluation.finished_at == lf.T0  # the measurement's date, not the import's
    names = set(Artifact.objects.filter(evaluation=evaluation).values_list("name", flat=True))
    assert names == {"kernel.cu", "verdict.json", "compile.log"}
    assert (
        Artifact.objects.get(evaluation=evaluation, name="verdict.json").sha256
        == hashlib.sha256((folder / "gemm-h200.json").read_bytes()).hexdigest()
    )

    (row,) = kernel_board(Generation(), task=GEMM, arch="sm_90a")
    assert (row.is_reference, row.rank, row.name, row.speedup_factor, row.speedup_ci95_low) == (
        True,
        None,
        SOLUTION,
        1.18,
        1.16,
    )


def test_import_refuses_a_verdict_of_other_source(tmp_path):
    sync_catalog()
    folder = _verdict_dir(tmp_path)
    document = json.loads((folder / "gemm-h200.json").read_text())
    document["source_sha256"] = "0" * 64
    (folder / "gemm-h200.json").write_text(json.dumps(document))
    err = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=StringIO(), stderr=err)
    assert "kernel.cu now hashes to" in err.getvalue()
    assert not Submission.objects.filter(kind="reference").exists()
    with pytest.raises(CommandError):
        call_command(
            "import_reference_verdicts", "--dir", str(folder), "--strict", stdout=StringIO(), stderr=StringIO()
        )


def test_import_refuses_paths_that_leave_the_folder(tmp_path):
    sync_catalog()
    folder = _verdict_dir(tmp_path)
    (folder / "index.json").write_text(
        json.dumps([{"verdict": "../../etc/passwd", "task": GEMM, "solution": SOLUTION, "arch": "sm_90a"}])
    )
    err = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=StringIO(), stderr=err)
    assert "leaves its folder" in err.getvalue()


def test_missing_index_is_not_an_error(tmp_path):
    out = StringIO()
    call_command("import_reference_verdicts", "--dir", str(tmp_path), stdout=out)
    assert "no reference verdicts" in out.getvalue()


def test_committed_index_is_valid():
    from portal.leaderboard.services import read_index, solution_source

    entries = read_index(REPO / "docs" / "verdicts")
    assert {solution_source(REPO / "tasks", e)[1] for e in entries} == {"cuda", "triton"}
    for entry in entries:
        assert (REPO / "docs" / "verdicts" / entry.verdict).is_file()
        kernel_file, _ = solution_source(REPO / "tasks", entry)
        assert (REPO / "tasks" / entry.task / "solutions" / entry.solution / kernel_file).is_file()
        if entry.ncu_source:
            assert (REPO / "docs" / "verdicts" / entry.ncu_source).is_file()


def test_import_attaches_the_profiler_csv_and_its_sass_even_to_an_earlier_import(tmp_path, client):
    sync_catalog()
    folder = _verdict_dir(tmp_path)
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=StringIO())
    (evaluation,) = Evaluation.objects.filter(submission__kind="reference")
    assert not evaluation.artifacts.filter(name="ncu_source.csv").exists()
    committed = REPO / "docs" / "verdicts" / "raw" / "2026-11-30_h200" / f"ncu_source_{GEMM}__{SOLUTION}.csv"
    (folder / "ncu.csv").write_bytes(committed.read_bytes())
    index = json.loads((folder / "index.json").read_text())
    index[0]["ncu_source"] = "ncu.csv"
    (folder / "index.json").write_text(json.dumps(index))
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=StringIO())
    names = set(evaluation.artifacts.values_list("name", flat=True))
    assert {"ncu_source.csv", "kernel.sass"} <= names
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert '<span class="sass-target sass-gmma">' in page and '<span class="sass-target sass-tma">' in page
    assert "/* executed " in page  # each line carries its executed count from the profiler


def test_the_committed_triton_reference_verdicts_import_as_triton_rows(tmp_path):
    """The H200 verdicts of the Triton GEMM and attention references: rows of language triton, kernel.py kept."""
    sync_catalog()
    folder = tmp_path / "verdicts"
    folder.mkdir()
    entries = [
        e for e in json.loads((REPO / "docs" / "verdicts" / "index.json").read_text()) if "triton" in e["solution"]
    ]
    assert len(entries) == 2
    for e in entries:
        (folder / e["verdict"]).write_bytes((REPO / "docs" / "verdicts" / e["verdict"]).read_bytes())
    (folder / "index.json").write_text(json.dumps(entries))
    out = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), "--strict", stdout=out)
    assert "2 imported" in out.getvalue()
    for e in entries:
        submission = Submission.objects.get(kind="reference", name=e["solution"], task__slug=e["task"])
        assert submission.language == "triton"
        (evaluation,) = submission.evaluations.all()
        assert evaluation.status == "PASSED" and evaluation.arch_status == "verified" and evaluation.speedup_factor > 0
        names = set(evaluation.artifacts.values_list("name", flat=True))
        assert "kernel.py" in names and "kernel.cu" not in names
        with zipfile.ZipFile(submission_bundle(submission).file) as bundle:
            assert "kernel.py" in bundle.namelist() and "kernel.cu" not in bundle.namelist()
            assert bundle.read("kernel.py").decode() == submission.source
    # A CUDA verdict listed for a Triton solution is refused: the language must agree.
    cuda = json.loads((REPO / "docs" / "verdicts" / "gemm_n7168_k5120-hopper_tma_wgmma-h200.json").read_text())
    forged = {**json.loads((folder / entries[0]["verdict"]).read_text()), "language": "cuda"}
    assert cuda.get("language", "cuda") == "cuda"
    (folder / "forged.json").write_text(json.dumps(forged))
    (folder / "index.json").write_text(json.dumps([{**entries[0], "verdict": "forged.json"}]))
    err = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), stdout=StringIO(), stderr=err)
    assert "the solution is triton" in err.getvalue()


def test_every_committed_verdict_imports_through_the_import_command_as_its_row():
    """The real files of docs/verdicts/ (not hand-built documents), read from that folder by the command `make run`
    runs: every entry imports (--strict), each stored verdict is the file itself, its row's status, arch status and
    speedup come from it, and each one, read as the evaluator reads verdicts, is a valid verdict of today's schema
    (the older CUDA files predate fields added since, which the evaluator's defaults fill)."""
    from evaluator.both_sides import verdict as vm
    from portal.submissions import artifacts
    from tests.support.verdicts import validate

    sync_catalog()
    folder = REPO / "docs" / "verdicts"
    entries = json.loads((folder / "index.json").read_text())
    out = StringIO()
    call_command("import_reference_verdicts", "--dir", str(folder), "--strict", stdout=out)
    assert f"{len(entries)} imported, 0 already there, 0 skipped" in out.getvalue()
    for e in entries:
        document = json.loads((folder / e["verdict"]).read_text())
        validate(json.loads(vm.to_json(vm.from_dict(document))))
        (evaluation,) = Evaluation.objects.filter(
            submission__kind="reference", submission__name=e["solution"], submission__task__slug=e["task"]
        )
        assert evaluation.verdict == document, e["verdict"]
        assert (evaluation.state, evaluation.status, evaluation.arch_status) == (
            "done",
            document["status"],
            document["arch_check"]["status"],
        ), e["verdict"]
        speedups = {w["performance"]["speedup_factor"] for w in document["workloads"] if w.get("performance")}
        assert evaluation.speedup_factor in speedups and evaluation.gpu_name == document["environment"]["gpu_name"]
        stored = json.loads(artifacts.read(Artifact.objects.get(evaluation=evaluation, name="verdict.json")))
        assert stored == document
    for e in entries:  # every expert kernel ranks on its task's board, the new families' too
        board = {row.name: row for row in kernel_board(Generation(), task=e["task"], arch=e["arch"])}
        row = board[e["solution"]]
        assert (
            row.is_reference
            and row.arch_status == json.loads((folder / e["verdict"]).read_text())["arch_check"]["status"]
        )
    assert {"gemm_fp8_n7168_k5120", "mha_with_lse_d256", "mha_with_lse_d256_causal"} <= {e["task"] for e in entries}
