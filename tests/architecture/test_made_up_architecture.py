"""An architecture added to the registry (evaluator/both_sides/arches.py) and nowhere else reaches every layer: SASS family
detection, the Nsight Compute decision with its share rule, the datasheet peaks, the task suite generator and the
task loader, the portal's model fields, submit form and board queries, the registry endpoint, and the command-line
client, which reads that answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from evaluator.arch_check import ncu
from evaluator.binaries import sass
from evaluator.both_sides import arches, taskdata
from evaluator.both_sides.verdict import ArchStatus
from evaluator.checks import peaks
from tests.support.cli_support import FakePortal, run_cli, serving
from tests.support.script_modules import load_script

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"

XMMA = arches.Family("xmma", ("XMMA",))
SM_999X = arches.Arch(
    name="sm_999x",
    label="Made up (sm_999x)",
    gencode="arch=compute_999x,code=sm_999x",
    queue="gpu-sm999",
    compute_capability=(99, 9),
    families=("xmma",),
    gpus=("X1",),
    tensor_share=arches.CounterShareRule(("xx__made_up_tensor_ops.sum",)),
    gpu_models=(arches.GpuModel(("X1",), {"bfloat16": 5000.0}, hbm_tbps=20.0, non_tensor_tflops=300.0),),
    target_note="xmma (XMMA in SASS)",
    knowledge_pack="made-up",
)


@pytest.fixture
def made_up(monkeypatch):
    """sm_999x and its family in the registry for one test: the only edit."""
    from portal.catalog.api import registry_document

    monkeypatch.setitem(arches.FAMILIES, "xmma", XMMA)
    monkeypatch.setitem(arches.ARCHES, "sm_999x", SM_999X)
    registry_document.cache_clear()  # the endpoint's answer is built once per process
    yield
    registry_document.cache_clear()


def _profiled_probe():
    """The captured H200 probe's source page with its one executed MMA made an XMMA."""
    text = (FIXTURES / "ncu" / "h200-probe-wgmma-executed.csv").read_text()
    return ncu.parse_source_page(text.replace("HGMMA.64x8x16.F32.BF16", "XMMA.64x8x16.F32.BF16"))


def _raw_page(ops: str) -> str:
    return (
        '"ID","Kernel Name","gpu__time_duration.sum","xx__made_up_tensor_ops.sum"\n'
        '"","","us",""\n'
        f'"0","probe(float *, int)","5.0","{ops}"\n'
    )


def test_the_evaluator_layers_pick_up_an_architecture_added_only_to_the_registry(made_up, tmp_path, monkeypatch):
    # SASS: the family is detected and counted as the architecture's target
    dump = "\tFunction : probe\n        /*0000*/   XMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ ;\n"
    assert sass.instruction_family("XMMA.64x8x16.F32.BF16") == "xmma"
    static = sass.count_families(dump, "sm_999x")
    assert static.families["xmma"] == 1 and static.target_count == 1

    # Nsight Compute: the profile collects the rule's counter, and the decision takes the share from it
    command = ncu.ncu_profile_command("ncu", Path("r"), ["python"], arch="sm_999x")
    assert command[command.index("--metrics") + 1] == "gpu__time_duration.sum,xx__made_up_tensor_ops.sum"
    kernels = _profiled_probe()
    verified = ncu.decide_arch(arch="sm_999x", sass=static, kernels=kernels, task_flops=1e6, raw_page=_raw_page("1e6"))
    assert verified.status == ArchStatus.VERIFIED and verified.tensor_core_share == pytest.approx(1.0)
    token = ncu.decide_arch(arch="sm_999x", sass=static, kernels=kernels, task_flops=1e9, raw_page=_raw_page("1e6"))
    assert token.status == ArchStatus.TOKEN
    unmeasured = ncu.decide_arch(arch="sm_999x", sass=static, kernels=kernels, task_flops=1e6, raw_page=None)
    assert unmeasured.status == ArchStatus.PROFILE_ERROR

    # Peaks: its GPU's datasheet figures
    assert peaks.peak_tflops("NVIDIA X1") == 5000.0 and peaks.tensor_peak_tflops("NVIDIA X1", "bfloat16") == 5000.0
    assert (peaks.hbm_tbps("NVIDIA X1"), peaks.non_tensor_peak_tflops("NVIDIA X1")) == (20.0, 300.0)

    # The suite generator writes its target and pack into every task, and the task loader accepts them
    make_suite = load_script(REPO / "scripts" / "make_suite.py", "make_suite_made_up", monkeypatch)
    task_files = make_suite.gemm_task(4096, 4096)
    written = json.loads(task_files.files["ptxbench.json"])
    assert written["targets"]["sm_999x"] == {"families": ["xmma"], "note": "xmma (XMMA in SASS)"}
    assert written["knowledge_packs"]["sm_999x"] == "made-up"
    folder = tmp_path / task_files.name
    folder.mkdir()
    for name, text in task_files.files.items():
        (folder / name).write_text(text)
    task = taskdata.load_task(folder)
    assert task.targets["sm_999x"].families == ("xmma",) and task.knowledge_packs["sm_999x"] == "made-up"


class _Portal(FakePortal):
    """Serves the real portal's registry answer, captured by the test, and an empty board."""

    registry: dict = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        if path.endswith("/registry"):  # whichever API version the client asks
            body = self.registry
        elif path.endswith("/leaderboard/kernels"):
            body = {"query": {}, "rows": []}
        else:
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        self._send(200, json.dumps(body).encode(), "application/json")


def test_the_portal_picks_up_an_architecture_added_only_to_the_registry(made_up, client):
    from portal.core.registry_fields import validate_arch
    from portal.submissions.forms import SubmissionForm

    validate_arch("sm_999x")  # model fields: no migration, no list of their own
    assert ("sm_999x", "Made up (sm_999x)") in SubmissionForm().fields["arch"].choices
    assert client.get("/api/v2/leaderboard/summary", {"arch": "sm_999x", "gpu": "X1"}).status_code == 200
    assert client.get("/api/v2/leaderboard/summary", {"arch": "sm_000z"}).status_code == 400


def test_the_registry_endpoint_and_the_client_pick_up_an_architecture_added_only_to_the_registry(
    made_up, client, tmp_path
):
    answer = client.get(reverse("catalog:api_registry")).json()
    listed = {a["name"]: a for a in answer["arches"]}
    assert list(listed) == list(arches.ARCHES) and listed["sm_999x"]["families"] == ["xmma"]
    assert listed["sm_999x"]["gpus"] == ["X1"] and listed["sm_999x"]["queue"] == "gpu-sm999"

    _Portal.registry = answer
    with serving(_Portal) as url:
        accepted = run_cli("board", "--task", "t", "--arch", "sm_999x", url=url, home=tmp_path)
        refused = run_cli("board", "--task", "t", "--arch", "sm_000z", url=url, home=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(f"this portal has: {', '.join(arches.ARCHES)}")
    assert "sm_999x" in refused.stderr
