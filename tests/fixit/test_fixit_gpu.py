"""On an H200/H100 only: Fixit end to end through the portal's GPU path. A replayed student trajectory gives three
failing kernels; a repair run whose recorded teacher replies are the Hopper reference GEMM (TMA + wgmma) repairs
them; every attempt is scored by the real evaluator; the dataset built from it holds exactly three verified
repair pairs. With FIXIT_EXAMPLE_OUT set, the dataset's files (manifest included) are copied there
(scripts/gpu_fixit.sh puts them under $OUT/fixit-example for docs/examples/); with FIXIT_VERDICTS_OUT set, the
repair attempts' verdicts are written there (a failure's message names each attempt's review state and reason)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

# FIXIT_GPU_REHEARSAL=1 runs the same path on a machine without a GPU (CPU stages: attempts are STATIC_ONLY, so
# no pair), to check the script and the loop before spending GPU time.
REHEARSAL = os.environ.get("FIXIT_GPU_REHEARSAL") == "1"
pytestmark = [pytest.mark.gpu, pytest.mark.django_db(transaction=True)]
if not REHEARSAL:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: torch.cuda.is_available() is false", allow_module_level=True)
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (compute capability 9.0) for sm_90a", allow_module_level=True)

from django.test import override_settings  # noqa: E402

from portal.agent import services  # noqa: E402
from portal.agent.models import Turn  # noqa: E402
from portal.agent.services import RunRequest  # noqa: E402
from portal.fixit.repairs import repair_run_create  # noqa: E402
from portal.fixit.services import dataset_create  # noqa: E402
from portal.fixit.storage import dataset_folder  # noqa: E402
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, drain, fenced, replay  # noqa: E402, F401
from tests.support.factories import BROKEN_KERNEL, GEMM, REPO, make_user, sync_catalog  # noqa: E402

REFERENCE = next((REPO / "tasks" / GEMM / "solutions" / "hopper_tma_wgmma").glob("*.cu"))
# Three different kernels that fail to compile (distinct sources: pairs are deduplicated by the failing kernel).
FAILING = [BROKEN_KERNEL.replace("this is not C++", f"this is not C++ ({n})") for n in range(3)]


@override_settings(**{**LOOP_SETTINGS, "EVALUATOR_STAGES": "policy,compile,sass" if REHEARSAL else "all"})
def test_a_repair_run_on_the_gpu_gives_three_verified_pairs(replay, settings, tmp_path):  # noqa: F811
    settings.FIXIT_DIR = tmp_path / "fixit"
    sync_catalog()
    user = make_user("fixit")
    student = replay({"turns": [{"content": fenced(k)} for k in FAILING]})
    student_run = services.run_create(
        user=user,
        request=RunRequest(
            base_url=student.base_url,
            model="student-replay",
            arch="sm_90a",
            task_slugs=[GEMM],
            api_key=API_KEY,
            turns=3,
            trajectories_per_task=1,
        ),
    )
    drain()
    failing = list(Turn.objects.filter(trajectory__run=student_run).order_by("index"))
    assert [t.published_status for t in failing] == ["COMPILE_ERROR"] * 3

    teacher = replay(
        {"turns": [{"content": "The syntax error is fixed; the kernel:\n" + fenced(REFERENCE.read_text())}]}
    )
    repair_run = repair_run_create(
        user=user,
        request=RunRequest(
            base_url=teacher.base_url, model="teacher-replay", arch="sm_90a", task_slugs=[], api_key=API_KEY
        ),
        turn_ids=[t.id for t in failing],
        attempts=2,
    )
    drain()
    attempts = list(Turn.objects.filter(trajectory__run=repair_run).order_by("trajectory__index", "index"))
    if REHEARSAL:  # nothing is known correct without the GPU stages: every attempt used, no pair
        assert [t.published_status for t in attempts] == ["STATIC_ONLY"] * 6
        assert dataset_create(user=user, name="rehearsal", filters={}).repair_rows == 0
        return
    assert [(t.published_status, t.arch_status) for t in attempts] == [("PASSED", "verified")] * 3

    dataset = dataset_create(
        user=user,
        name="fixit-h200-example",
        filters={"verified_only": True},
        description="Three replayed compile errors repaired by a replayed teacher (the Hopper reference GEMM), H200.",
        licence="other",
    )
    # A held evaluation is not usable: the message says which attempt was held and why.
    why = [(t.evaluation.status, t.evaluation.review_state, t.evaluation.review_reason) for t in attempts]
    if os.environ.get("FIXIT_VERDICTS_OUT"):
        out = Path(os.environ["FIXIT_VERDICTS_OUT"])
        out.mkdir(parents=True, exist_ok=True)
        for t in attempts:
            (out / f"attempt-{t.trajectory.index}-{t.index}.verdict.json").write_text(json.dumps(t.evaluation.verdict))
    assert (dataset.repair_rows, dataset.generation_rows) == (3, 0), why
    folder = dataset_folder(dataset.id)
    rows = [json.loads(x) for x in (folder / "repair/train.jsonl").read_text().splitlines()]
    assert {(r["failed_turn"], r["fixed_turn"], r["source"], r["teacher"]) for r in rows} == {
        (i, 0, "repair_run", "teacher-replay") for i in range(3)
    }
    assert all(r["speedup_factor"] and r["arch_status"] == "verified" for r in rows)
    if os.environ.get("FIXIT_EXAMPLE_OUT"):
        shutil.copytree(folder, os.environ["FIXIT_EXAMPLE_OUT"], dirs_exist_ok=True)
