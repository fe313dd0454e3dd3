"""Public result snapshots: built from the demo data, every config opens with Hugging Face `datasets` (offline,
local files) and the JSONL holds the same rows; the visibility rule keeps hidden, banned, held, rejected,
static-only and unmeasured results out of `ranked`; an empty snapshot still carries every column."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db.models import Count

from portal.datasets.models import ResultsSnapshot
from portal.datasets.schemas import CONFIGS
from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.hf_offline import hf_offline
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def results_dir(settings, tmp_path, monkeypatch):
    hf_offline(monkeypatch)
    settings.RESULTS_DATASETS_DIR = tmp_path / "results"
    return settings.RESULTS_DATASETS_DIR


def _build(*args: str) -> str:
    out = StringIO()
    call_command("build_results_dataset", *args, stdout=out)
    return out.getvalue()


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_config_of_a_demo_snapshot_opens_with_datasets(results_dir, tmp_path, monkeypatch, demo_leaderboard):
    import datasets

    monkeypatch.setenv("RESULTS_DATASET_LICENCE", "cc-by-4.0")
    from portal.accounts.models import Profile
    from portal.agent.models import ModelRun
    from portal.leaderboard.cache import leaderboard_changed
    from portal.submissions.models import Submission

    demo_leaderboard()
    # Ban the seed user with the most public submissions: none of their work may appear (the demo bans none of
    # its 8 users; the ban's own signal starts a new leaderboard generation after commit, here by hand).
    banned_user = Submission.objects.filter(is_hidden=False).values("user").annotate(n=Count("id")).order_by("-n")[0]
    profile = Profile.objects.get(user_id=banned_user["user"])
    profile.is_banned = True
    profile.save()
    leaderboard_changed()
    assert "built results v1" in _build()
    folder = results_dir / "v1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["files"]) == {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {
        "manifest.json"
    }
    for path, entry in manifest["files"].items():
        data = (folder / path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    assert manifest["format"] == "ptxbench-portal.results-4"  # the canonical names (docs/api.md)
    assert manifest["licence"] == "cc-by-4.0" and 'license: "cc-by-4.0"' in (folder / "README.md").read_text()
    row = ResultsSnapshot.objects.get(version=1)
    assert row.manifest_sha256 == hashlib.sha256((folder / "manifest.json").read_bytes()).hexdigest()

    for config, schema in CONFIGS.items():
        loaded = datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "hf"))
        assert len(loaded) == manifest["counts"][config] == row.counts[config] > 0, config
        assert loaded.column_names == schema.names
        assert pq.read_metadata(folder / config / "train.parquet").row_group(0).column(0).compression == "ZSTD"
        assert loaded.to_list() == _jsonl(folder / config / "train.jsonl")  # Parquet and JSONL: the same rows
        assert all(r["synthetic"] for r in loaded), config  # demo rows are kept only flagged

    ranked = _jsonl(folder / "ranked" / "train.jsonl")
    assert {r["status"] for r in ranked} == {"PASSED"} and all(r["speedup_factor"] is not None for r in ranked)
    assert {r["board_section"] for r in ranked if r["rank"] is not None} == {"verified"}
    assert all(r["review_state"] != "held" for r in ranked)
    held = _jsonl(folder / "held" / "train.jsonl")
    assert {r["review_state"] for r in held} == {"held"}
    # Nothing of the banned user, nor of a hidden submission.
    banned = set(Submission.objects.filter(user__profile__is_banned=True).values_list("id", flat=True))
    hidden = set(Submission.objects.filter(is_hidden=True).values_list("id", flat=True))
    assert banned and hidden
    assert not {r["submission_id"] for r in ranked + held} & (banned | hidden)
    shown_runs = {r["run_id"] for r in _jsonl(folder / "turns" / "train.jsonl")}
    assert not shown_runs & set(ModelRun.objects.filter(user__profile__is_banned=True).values_list("id", flat=True))


def test_ranked_holds_only_what_a_public_board_shows_measured(results_dir):
    sync_catalog()
    alice, mallory = lf.user("alice"), lf.user("mallory", banned=True)
    ranked = lf.evaluation(owner=alice, name="fast.cu", speedup=1.5)
    lf.evaluation(owner=None, kind="reference", name="expert.cu", speedup=1.0)
    lf.evaluation(owner=alice, name="token.cu", speedup=1.1, arch_status="token")
    never = {
        "hidden": lf.evaluation(owner=alice, name="hidden.cu", speedup=1.2, hidden=True),
        "banned": lf.evaluation(owner=mallory, name="banned.cu", speedup=1.3),
        "held": lf.evaluation(owner=alice, name="held.cu", speedup=1.4, review_state="held"),
        "rejected": lf.evaluation(owner=alice, name="rejected.cu", speedup=1.4, review_state="rejected"),
        "static": lf.evaluation(owner=alice, name="static.cu", status="STATIC_ONLY", speedup=None),
        "unmeasured": lf.evaluation(owner=alice, name="unmeasured.cu", speedup=None),
        "check failed": lf.evaluation(owner=alice, name="check.cu", speedup=1.2, ranked_check="INCORRECT_NUMERICAL"),
        "failed": lf.evaluation(owner=alice, name="broken.cu", status="COMPILE_ERROR", speedup=None),
    }
    banned_held = lf.evaluation(owner=mallory, name="banned-held.cu", speedup=1.4, review_state="held")
    # model runs: a public one, a hidden one, a banned user's, and one scored on the CPU stages only
    public_run = lf.model_run(alice, model="vendor/public")
    lf.turns(public_run, GEMM, [[("COMPILE_ERROR", "", None, 10), ("PASSED", "verified", 1.2, 20)]])
    for run in (
        lf.model_run(alice, model="vendor/hidden", hidden=True),
        lf.model_run(mallory, model="vendor/banned"),
        lf.model_run(alice, model="vendor/static"),
    ):
        lf.turns(run, GEMM, [[("STATIC_ONLY" if run.model == "vendor/static" else "PASSED", "verified", 1.0, 5)]])

    _build()
    folder = results_dir / "v1"
    rows = _jsonl(folder / "ranked" / "train.jsonl")
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) == {"fast.cu", "expert.cu", "token.cu"}
    assert (by_name["fast.cu"]["rank"], by_name["fast.cu"]["board_section"]) == (1, "verified")
    assert by_name["expert.cu"]["rank"] is None and by_name["expert.cu"]["kind"] == "reference"
    assert by_name["token.cu"]["rank"] is None and by_name["token.cu"]["board_section"] == "token"
    fast = by_name["fast.cu"]
    assert fast["evaluation_id"] == str(ranked.id) and fast["source"] == ranked.submission.source
    assert fast["source_sha256"] == hashlib.sha256(fast["source"].encode()).hexdigest()
    assert fast["synthetic"] is False and fast["submitter"] == "alice" and fast["evaluator_version"] == "0.1.0"
    assert (fast["gpu_name"], fast["driver_version"]) == ("NVIDIA H200", "570.86.15")
    assert (
        fast["speedup_factor"] == 1.5
        and fast["latency_ms"] == pytest.approx(1 / 1.5)
        and fast["baseline_latency_ms"] == 1.0
    )
    artifacts = {a["name"]: a for a in fast["artifacts"]}
    assert set(artifacts) == {"kernel.cu", "verdict.json"}
    assert fast["verdict_sha256"] == artifacts["verdict.json"]["sha256"]
    assert artifacts["kernel.cu"]["url"].endswith(f"/evidence/evaluations/{ranked.id}/artifacts/kernel.cu")
    assert {str(e.id) for e in never.values()}.isdisjoint(r["evaluation_id"] for r in rows)

    held = _jsonl(folder / "held" / "train.jsonl")
    assert [r["evaluation_id"] for r in held] == [str(never["held"].id)]  # not the banned user's held one
    assert str(banned_held.id) not in {r["evaluation_id"] for r in held}

    turns = _jsonl(folder / "turns" / "train.jsonl")
    assert [(t["model"], t["turn"], t["status"]) for t in turns] == [
        ("vendor/public", 0, "COMPILE_ERROR"),
        ("vendor/public", 1, "PASSED"),
    ]


def test_an_empty_snapshot_keeps_every_column_and_loads_streaming(results_dir, tmp_path):
    import datasets

    (results_dir / "v1").mkdir(parents=True)
    (results_dir / "v1" / "half-written.parquet").write_bytes(b"left by a build that crashed before its row")
    _build()
    folder = results_dir / "v1"
    assert not (folder / "half-written.parquet").exists()
    assert not [p for p in results_dir.iterdir() if p.name.startswith(".")]  # no temporary folder left
    for config, schema in CONFIGS.items():
        table = pq.read_table(folder / config / "train.parquet")
        assert table.num_rows == 0 and table.schema.names == schema.names
        assert (folder / config / "train.jsonl").read_bytes() == b""
        # `datasets` cannot materialise a split of 0 rows (huggingface/datasets#8401); streaming opens it.
        # A private cache: the shared one keeps the features of an earlier build of a folder with these file names.
        hf = str(tmp_path / "hf")
        streamed = datasets.load_dataset(str(folder), config, split="train", streaming=True, cache_dir=hf)
        assert list(streamed) == [] and list(streamed.features) == schema.names
    card = (folder / "README.md").read_text()
    assert card.count("- config_name: ") == len(CONFIGS)
    assert 'license: "other"' in card  # the operator's choice (RESULTS_DATASET_LICENCE); none claimed for them


def test_versions_are_built_only_when_rows_change_and_are_served_checked(results_dir, client):
    from portal.leaderboard.cache import leaderboard_changed

    sync_catalog()
    lf.evaluation(owner=lf.user("alice"), name="fast.cu", speedup=1.5)
    assert "built results v1" in _build()
    assert "unchanged" in _build()
    assert "built results v2" in _build("--force")
    lf.evaluation(owner=lf.user("bob"), name="faster.cu", speedup=1.7)
    leaderboard_changed()  # what a finished evaluation's signal does after its commit
    assert "built results v3" in _build()
    assert list(ResultsSnapshot.objects.values_list("version", flat=True)) == [3, 2, 1]

    page = client.get("/datasets/").content.decode()
    assert all(f'id="v{n}"' in page for n in (1, 2, 3)) and "ranked/train.parquet" in page
    listing = client.get("/api/v1/results-datasets").json()["versions"]
    assert [v["version"] for v in listing] == [3, 2, 1] and listing[0]["counts"]["ranked"] == 2
    parquet = next(f for f in listing[0]["files"] if f["path"] == "ranked/train.parquet")
    response = client.get(parquet["url"].removeprefix("http://testserver"))
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and hashlib.sha256(body).hexdigest() == parquet["sha256"]
    assert response["X-Content-SHA256"] == parquet["sha256"]
    assert client.get("/datasets/v3/../v1/manifest.json").status_code == 404
    assert client.get("/datasets/v3/ranked/other.parquet").status_code == 404
    assert client.get("/datasets/v9/README.md").status_code == 404
    (results_dir / "v3" / "ranked" / "train.parquet").write_bytes(b"tampered")
    assert client.get("/datasets/v3/ranked/train.parquet").status_code == 500


@pytest.mark.django_db(transaction=True)
def test_the_scheduled_build_is_an_rq_job_on_the_default_queue(results_dir):
    import django_rq

    from tests.support.rq_workers import PromptSimpleWorker

    sync_catalog()
    lf.evaluation(owner=lf.user("alice"), name="fast.cu", speedup=1.5)
    assert "enqueued results dataset build" in _build("--enqueue")
    queue = django_rq.get_queue("default")
    assert queue.count == 1 and queue.jobs[0].func_name == "portal.datasets.jobs.snapshot_build"
    django_rq.get_worker("default", worker_class=PromptSimpleWorker).work(burst=True)
    assert ResultsSnapshot.objects.get().counts == {"ranked": 1, "held": 0, "turns": 0}
    assert (results_dir / "v1" / "README.md").exists()


def test_a_board_generation_older_than_a_hide_or_a_hold_leaks_nothing(results_dir):
    """The boards are cached per results generation; the snapshot checks each row again, so work hidden or held
    a moment ago (before a new generation started) stays out of `ranked`."""
    from portal.submissions.models import Evaluation, Submission

    sync_catalog()
    alice = lf.user("alice")
    kept = lf.evaluation(owner=alice, name="kept.cu", speedup=1.1)
    hidden = lf.evaluation(owner=alice, name="hidden-later.cu", speedup=1.2)
    held = lf.evaluation(owner=alice, name="held-later.cu", speedup=1.3)
    _build()
    assert len(_jsonl(results_dir / "v1" / "ranked" / "train.jsonl")) == 3  # the boards are now cached
    Submission.objects.filter(id=hidden.submission_id).update(is_hidden=True)  # no signal: the cache stays
    Evaluation.objects.filter(id=held.id).update(review_state="held")
    _build()
    assert [r["evaluation_id"] for r in _jsonl(results_dir / "v2" / "ranked" / "train.jsonl")] == [str(kept.id)]
    assert [r["evaluation_id"] for r in _jsonl(results_dir / "v2" / "held" / "train.jsonl")] == [str(held.id)]
