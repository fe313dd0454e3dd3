"""sync_tasks: loads the catalog idempotently, imports FlashInfer-Trace sets, and refuses bad data atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from portal.catalog.models import ArchitectureTarget, KnowledgePack, Task, Workload
from tests.support.factories import GEMM, REPO, copy_task

pytestmark = pytest.mark.django_db


def test_sync_loads_every_task_and_pack():
    call_command("sync_tasks")
    task_dirs = [p for p in (REPO / "tasks").iterdir() if (p / "definition.json").is_file()]
    assert Task.objects.filter(is_active=True).count() == len(task_dirs)
    gemm = Task.objects.get(slug=GEMM)
    assert gemm.group == "gemm"
    assert gemm.signature("cuda").startswith("void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B")
    assert gemm.signature("triton") == "def run(A, B, C) -> None"
    assert gemm.workloads.filter(is_headline=True).get().axes == {"M": 8192}
    assert set(gemm.targets.values_list("arch", flat=True)) == {"sm_90a", "sm_100a"}
    hopper = gemm.targets.get(arch="sm_90a")
    assert hopper.families == ["gmma", "tma"]
    assert hopper.pack is not None and hopper.pack.slug == "hopper"
    assert KnowledgePack.objects.filter(slug="hopper", token_count__gt=0).exists()


def test_sync_is_idempotent():
    call_command("sync_tasks")
    counts = (Task.objects.count(), Workload.objects.count(), ArchitectureTarget.objects.count())
    stamps = dict(Task.objects.values_list("slug", "synced_at"))
    call_command("sync_tasks")
    assert (Task.objects.count(), Workload.objects.count(), ArchitectureTarget.objects.count()) == counts
    assert dict(Task.objects.values_list("slug", "synced_at")) == stamps  # unchanged rows are not rewritten


def test_an_unchanged_sync_reads_a_few_tables_and_a_changed_pack_is_still_rewritten(
    settings, django_assert_max_num_queries
):
    import dataclasses

    from evaluator.both_sides.taskdata import load_tasks
    from evaluator.suite.packs import load_packs
    from portal.catalog.services import catalog_sync

    tasks, packs = load_tasks(settings.TASKS_DIR), load_packs(settings.TASKS_DIR / "packs")
    catalog_sync(tasks=tasks, packs=packs)
    with django_assert_max_num_queries(10):  # packs, tasks, targets, the retired tasks; not a query a row
        report = catalog_sync(tasks=tasks, packs=packs)
    assert (report.created, report.updated, len(report.unchanged)) == ([], [], len(tasks))

    # Packs may change while the tasks do not: the pack row and the targets' links follow.
    hopper = next(p for p in packs if p.id == "hopper")
    edited = dataclasses.replace(hopper, text=hopper.text + "\nOne more line.", sha256="0" * 64)
    catalog_sync(tasks=tasks, packs=[edited if p is hopper else p for p in packs])
    assert KnowledgePack.objects.get(slug="hopper").text.endswith("One more line.")
    catalog_sync(tasks=tasks, packs=[p for p in packs if p is not hopper])
    assert ArchitectureTarget.objects.get(task__slug=GEMM, arch="sm_90a").pack is None
    catalog_sync(tasks=tasks, packs=packs)
    assert ArchitectureTarget.objects.get(task__slug=GEMM, arch="sm_90a").pack.slug == "hopper"


def test_a_workload_listed_by_two_new_tasks_belongs_to_the_last(settings):
    import dataclasses

    from evaluator.both_sides.taskdata import load_tasks
    from portal.catalog.services import catalog_sync

    first, second = load_tasks(settings.TASKS_DIR)[:2]
    shared = first.workloads[0]
    second = dataclasses.replace(second, workloads=(*second.workloads, shared))
    catalog_sync(tasks=[first, second], packs=[], deactivate_missing=False)
    row = Workload.objects.get(uuid=shared.uuid)
    assert row.task.slug == second.name and row.position == len(second.workloads) - 1


def test_sync_updates_changed_task_and_retires_removed_one(tmp_path):
    root = copy_task(tmp_path)
    call_command("sync_tasks", tasks_dir=str(root))
    definition = root / GEMM / "definition.json"
    data = json.loads(definition.read_text())
    data["description"] = "changed description"
    definition.write_text(json.dumps(data))
    call_command("sync_tasks", tasks_dir=str(root))
    assert Task.objects.get(slug=GEMM).description == "changed description"

    empty = tmp_path / "empty"
    empty.mkdir()
    call_command("sync_tasks", tasks_dir=str(empty))
    assert not Task.objects.get(slug=GEMM).is_active  # kept for old results, hidden from the catalog


@pytest.mark.parametrize(
    ("file", "mutate", "field"),
    [
        ("definition.json", lambda d: d["inputs"]["A"].update(dtype="bfloat17"), "inputs.A.dtype"),
        ("definition.json", lambda d: d["axes"].pop("K"), "inputs.A.shape"),
        ("definition.json", lambda d: d.update(reference="def run(A):\n    return A\n"), "reference"),
        ("ptxbench.json", lambda d: d["targets"].update(sm_89={"families": ["gmma"]}), "targets.sm_89"),
        ("ptxbench.json", lambda d: d["targets"]["sm_90a"].update(families=["hmma"]), "targets.sm_90a.families"),
    ],
)
def test_malformed_task_names_file_and_field_and_changes_nothing(tmp_path, file, mutate, field):
    call_command("sync_tasks")
    before = list(Task.objects.order_by("slug").values_list("slug", "content_sha256", "is_active"))
    root = copy_task(tmp_path)
    path = root / GEMM / file
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError) as info:
        call_command("sync_tasks", tasks_dir=str(root))
    message = str(info.value)
    assert str(path) in message and f"'{field}'" in message
    assert list(Task.objects.order_by("slug").values_list("slug", "content_sha256", "is_active")) == before


def test_malformed_workload_line_is_reported_with_its_line(tmp_path):
    root = copy_task(tmp_path)
    path = root / GEMM / "workloads.jsonl"
    lines = path.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["workload"]["axes"] = {"M": -4}
    lines[1] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match=r"workloads.jsonl: field 'line 2: workload.axes.M'"):
        call_command("sync_tasks", tasks_dir=str(root))
    assert not Task.objects.exists()


def _flashinfer_set(root: Path, *, broken: bool = False) -> Path:
    (root / "definitions" / "gemm").mkdir(parents=True)
    (root / "workloads" / "gemm").mkdir(parents=True)
    definition = json.loads((REPO / "tasks" / GEMM / "definition.json").read_text())
    definition["name"] = "gemm_n512_k256"
    definition["axes"]["N"]["value"] = 512
    definition["axes"]["K"]["value"] = 256
    if broken:
        del definition["outputs"]["C"]["dtype"]
    (root / "definitions" / "gemm" / "gemm_n512_k256.json").write_text(json.dumps(definition))
    line = {"uuid": "0b0f8a52-1111-4c55-9d1e-000000000001", "axes": {"M": 64}, "inputs": {"A": {"type": "random"}}}
    (root / "workloads" / "gemm" / "gemm_n512_k256.jsonl").write_text(json.dumps(line) + "\n")
    return root


def test_import_flashinfer_trace_directory(tmp_path):
    call_command("sync_tasks", "--from", str(_flashinfer_set(tmp_path)))
    task = Task.objects.get(slug="gemm_n512_k256")
    assert task.source == Task.Source.IMPORT
    assert task.workloads.get().axes == {"M": 64}
    assert set(task.targets.values_list("arch", flat=True)) == {"sm_90a", "sm_100a"}


def test_import_rejects_malformed_definition_and_loads_nothing(tmp_path):
    root = _flashinfer_set(tmp_path, broken=True)
    with pytest.raises(CommandError, match=r"gemm_n512_k256.json: field 'outputs.C.dtype': is required"):
        call_command("sync_tasks", "--from", str(root))
    assert not Task.objects.exists()
