"""Fixit datasets end to end: an imported trajectory re-scored through real Redis and RQ (the real evaluator's CPU
stages for the failing kernel, a recorded H200 verdict standing in for the GPU on the passing one), rows built
from what is stored, held/hidden/banned sources never used, exports loaded with Hugging Face `datasets`."""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest
from django.core.management import call_command
from django.test import override_settings

from portal.agent.models import ModelRun, Turn
from portal.fixit.models import Dataset
from portal.fixit.services import DatasetRefused, dataset_create
from portal.fixit.storage import dataset_folder
from portal.submissions.models import Submission
from tests.support.agent_support import LOOP_SETTINGS, fenced
from tests.support.factories import BROKEN_KERNEL, GEMM, make_user, starter_source, sync_catalog
from tests.support.fixit_support import drain_with_gpu_stand_in, stored_trajectory
from tests.support.hf_offline import hf_offline
from tests.support.leaderboard_factories import verdict as verdict_document

pytestmark = [pytest.mark.django_db(transaction=True)]
FIXED = starter_source().rstrip() + "\n// fixed\n"


@pytest.fixture
def alice(settings, tmp_path):
    settings.FIXIT_DIR = tmp_path / "fixit"
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    sync_catalog()
    return make_user("alice")


def import_trajectory(tmp_path, replies: list[str], model: str = "paper-model") -> ModelRun:
    document = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"config": {"model": {"model_name": model}}, "ptxbench": {"task": GEMM}},
        "messages": [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "TASK"}]
        + [{"role": "assistant", "content": r} for r in replies],
    }
    path = tmp_path / f"{model}.json"
    path.write_text(json.dumps(document))
    call_command("import_trajectory", str(path), "--arch", "sm_90a", "--user", "alice")
    return ModelRun.objects.get(model=model)


@override_settings(**LOOP_SETTINGS)
def test_an_imported_failing_then_passing_trajectory_gives_exactly_the_expected_pair(alice, tmp_path):
    run = import_trajectory(tmp_path, ["first try\n" + fenced(BROKEN_KERNEL), "fixed:\n" + fenced(FIXED)])
    passed = verdict_document(source=FIXED, status="PASSED", speedup=1.25, arch_status="verified")
    drain_with_gpu_stand_in({FIXED.rstrip(): passed, FIXED: passed})
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("index"))
    assert [(t.published_status, t.arch_status) for t in turns] == [
        ("COMPILE_ERROR", "not_requested"),
        ("PASSED", "verified"),
    ]

    dataset = dataset_create(user=alice, name="gemm-fixit", filters={"verified_only": True})
    assert (dataset.version, dataset.repair_rows, dataset.generation_rows) == (1, 1, 1)
    rows = [json.loads(line) for line in (dataset_folder(dataset.id) / "repair/train.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row["run"], row["model"], row["task"], row["arch"]) == (run.id, "paper-model", GEMM, "sm_90a")
    assert (row["failed_turn"], row["fixed_turn"], row["failed_status"]) == (0, 1, "COMPILE_ERROR")
    assert (row["failed_evaluation"], row["fixed_evaluation"]) == (
        str(turns[0].evaluation_id),
        str(turns[1].evaluation_id),
    )
    assert row["evaluator_version"] == "0.1.0" and row["speedup_factor"] == 1.25
    messages = row["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert [m["loss"] for m in messages] == [False, False, False, False, True]
    assert messages[0]["content"] == "SYSTEM" and messages[1]["content"] == "TASK"
    assert messages[2]["content"] == fenced(turns[0].kernel)
    assert messages[3]["content"] == turns[0].feedback and messages[3]["content"].startswith(
        "Evaluation result: COMPILE_ERROR."
    )
    assert messages[4]["content"] == fenced(turns[1].kernel)


def test_held_hidden_ranked_check_and_banned_sources_never_appear(alice):
    from portal.accounts.models import Profile

    good = [{"status": "COMPILE_ERROR", "kernel": "// a\n"}, {"status": "PASSED", "kernel": "// A\n", "speedup": 1.1}]
    stored_trajectory(alice, good, model="kept")
    held = stored_trajectory(
        alice,
        [{"status": "COMPILE_ERROR", "kernel": "// b\n"}, {"status": "PASSED", "kernel": "// B\n", "review": "held"}],
        model="held",
    )
    rejected = stored_trajectory(
        alice,
        [
            {"status": "RUNTIME_ERROR", "kernel": "// c\n"},
            {"status": "PASSED", "kernel": "// C\n", "review": "rejected"},
        ],
        model="rejected",
    )
    ranked = stored_trajectory(
        alice,
        [
            {"status": "TIMEOUT", "kernel": "// d\n", "purpose": "hidden"},
            {"status": "PASSED", "kernel": "// D\n", "purpose": "hidden"},
        ],
        model="ranked-check",
    )
    hidden = stored_trajectory(
        alice,
        [{"status": "COMPILE_ERROR", "kernel": "// e\n"}, {"status": "PASSED", "kernel": "// E\n"}],
        model="hidden",
    )
    ModelRun.objects.filter(id=hidden.run.id).update(is_hidden=True, hidden_reason="test")
    mallory = make_user("mallory")
    stored_trajectory(
        mallory,
        [{"status": "COMPILE_ERROR", "kernel": "// f\n"}, {"status": "PASSED", "kernel": "// F\n"}],
        model="banned",
    )
    Profile.objects.create(user=mallory, is_banned=True, banned_reason="test")
    hidden_submission = stored_trajectory(
        alice,
        [{"status": "COMPILE_ERROR", "kernel": "// g\n"}, {"status": "PASSED", "kernel": "// G\n"}],
        model="hidden-sub",
    )
    Submission.objects.filter(evaluations__id=hidden_submission.turns.get(index=1).evaluation_id).update(is_hidden=True)
    synthetic = stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": "// s\n"}, {"status": "PASSED", "kernel": "// S\n"}], model="demo"
    )
    ModelRun.objects.filter(id=synthetic.run_id).update(is_synthetic=True)
    del held, rejected, ranked

    dataset = dataset_create(user=alice, name="everything", filters={})
    folder = dataset_folder(dataset.id)
    text = "".join(p.read_text() for p in folder.rglob("*.jsonl"))
    assert {json.loads(line)["model"] for line in text.splitlines()} == {"kept"}
    assert (dataset.repair_rows, dataset.generation_rows) == (1, 1)
    for marker in (
        "// b",
        "// B",
        "// c",
        "// C",
        "// d",
        "// D",
        "// e",
        "// E",
        "// f",
        "// F",
        "// g",
        "// G",
        "// s",
        "// S",
    ):
        assert marker not in text


def test_jsonl_and_parquet_load_with_datasets_hold_the_same_rows_and_the_manifest_sha256s_match(alice, monkeypatch):
    hf_offline(monkeypatch)
    stored_trajectory(
        alice,
        [
            {"status": "COMPILE_ERROR", "kernel": "// one\n"},
            {"status": "INCORRECT_NUMERICAL", "kernel": "// two\n"},
            {"status": "PASSED", "kernel": "// three\n", "speedup": 1.4},
            {"status": "PASSED", "kernel": "// four\n", "speedup": None, "arch": "absent"},
        ],
    )
    dataset = dataset_create(user=alice, name="roundtrip", filters={}, licence="cc-by-4.0", attribution="tests")
    folder = dataset_folder(dataset.id)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["files"]) == {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {
        "manifest.json"
    }
    for path, entry in manifest["files"].items():
        data = (folder / path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    assert hashlib.sha256((folder / "manifest.json").read_bytes()).hexdigest() == dataset.manifest_sha256
    assert manifest["counts"]["repair"] == {
        "rows": 2,
        "by_task": {GEMM: 2},
        "by_arch": {"sm_90a": 2},
        "by_status": {"COMPILE_ERROR": 1, "INCORRECT_NUMERICAL": 1},
    }
    assert manifest["licence"] == "cc-by-4.0" and manifest["attribution"] == "tests"
    assert manifest["format"] == "ptxbench-portal.fixit-2"  # the measurements by their canonical names
    assert manifest["evaluator_versions"] == ["0.1.0"] and manifest["filters"]["verified_only"] is False

    import datasets

    cache = str(folder.parent / "hf-cache")
    for kind, count in (("repair", 2), ("generation", 2)):
        from_json = datasets.load_dataset(
            "json", data_files=str(folder / kind / "train.jsonl"), split="train", cache_dir=cache
        ).to_list()
        from_parquet = datasets.load_dataset(
            "parquet", data_files=str(folder / kind / "train.parquet"), split="train", cache_dir=cache
        ).to_list()
        from_card = datasets.load_dataset(str(folder), kind, split="train", cache_dir=cache).to_list()
        assert len(from_json) == count
        assert from_json == from_parquet == from_card
    assert [m["loss"] for m in from_card[0]["messages"]] == [False, False, True]  # generation: three messages
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_versions_are_immutable_and_names_belong_to_their_first_builder(alice):
    stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": "// x\n"}, {"status": "PASSED", "kernel": "// X\n"}]
    )
    first = dataset_create(user=alice, name="mine", filters={})
    stored_trajectory(
        alice, [{"status": "TIMEOUT", "kernel": "// y\n"}, {"status": "PASSED", "kernel": "// Y\n"}], model="second"
    )
    second = dataset_create(user=alice, name="mine", filters={})
    assert (first.version, first.repair_rows, second.version, second.repair_rows) == (1, 1, 2, 2)
    first_bytes = (dataset_folder(first.id) / "repair/train.jsonl").read_bytes()
    assert first_bytes.count(b"\n") == 1  # the first version still holds what it held
    with pytest.raises(DatasetRefused, match="belongs to another user"):
        dataset_create(user=make_user("bob"), name="mine", filters={})
    with pytest.raises(DatasetRefused, match="name must be"):
        dataset_create(user=alice, name="../etc", filters={})
    assert Dataset.objects.count() == 2
    assert str(uuid.UUID(second.source_evaluations[0]))  # sources are evaluation ids
