"""The one evaluation page: workloads, the target-instruction table, the SASS with target opcodes marked (escaped,
capped with a link to the whole file), every artifact; the submission's status page links to it."""

from __future__ import annotations

import pytest

from portal.leaderboard.evidence import sass_view
from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

SASS = (
    "        Function : gemm_kernel\n"
    "        /*0a00*/                   UTMALDG.2D [UR8], [UR4] ;\n"
    "        /*0a10*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;\n"
    "        /*0a20*/              @P0  FFMA R1, R2, R3, R4 ;\n"
    "        /*0a30*/                   MOV R1, 0x1 ;  // <script>alert(1)</script>\n"
)


def test_sass_listing_marks_target_families_only():
    listing = sass_view.sass_listing(SASS, families=("gmma", "tma"))
    assert [line.family for line in listing.lines] == ["", "tma", "gmma", "", ""]
    assert listing.family_lines == {"gmma": 1, "tma": 1}
    assert not listing.truncated
    # On Blackwell neither family is a target: nothing is marked.
    assert {line.family for line in sass_view.sass_listing(SASS, families=("tcgen05",)).lines} == {""}
    capped = sass_view.sass_listing(SASS * 10, families=("gmma",), limit=7)
    assert len(capped.lines) == 7 and capped.truncated and capped.family_lines == {"gmma": 10}


def test_evaluation_page_shows_workloads_instructions_and_marked_escaped_sass(client):
    sync_catalog()
    families = {"gmma": {"static": 12, "executed": 3072, "predicated_on": 98304}}
    evaluation = lf.evaluation(owner=lf.user("ada"), files={"kernel.sass": SASS.encode()}, families=families)
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert 'id="workloads-table"' in page and "M=4096" in page.replace(" ", "")
    assert '<h2 id="instructions">Target instructions</h2>' in page
    table = page.split('id="instruction-table"', 1)[1].split("</table>", 1)[0]
    assert '<tr><td>gmma</td><td class="num">12</td><td class="num">3072</td><td class="num">98304</td></tr>' in table
    assert '<span class="sass-target sass-gmma">        /*0a10*/' in page
    assert '<span class="sass-target sass-tma">' in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"/submissions/{evaluation.submission_id}/" in page  # back to the status page
    assert f"/evidence/evaluations/{evaluation.id}/artifacts/kernel.sass" in page


def test_long_sass_is_capped_with_a_link_to_the_whole_file(client, monkeypatch):
    sync_catalog()
    monkeypatch.setattr(sass_view, "SASS_LINES_SHOWN", 3)
    evaluation = lf.evaluation(owner=lf.user("ada"), files={"kernel.sass": (SASS * 4).encode()})
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert "The first 3 of 20 lines" in page
    assert "download the full listing" in page


def test_status_page_links_the_evaluation_page_and_shows_unknown_resources_as_a_dash(client):
    sync_catalog()
    owner = lf.user("ada")
    evaluation = lf.evaluation(owner=owner)
    verdict = dict(evaluation.verdict)
    verdict["compile"] = {**verdict["compile"], "resources": [{"registers": 168, "shared_bytes": None}]}
    type(evaluation).objects.filter(id=evaluation.id).update(verdict=verdict)
    client.force_login(owner)
    page = client.get(f"/submissions/{evaluation.submission_id}/").content.decode()
    assert f"/evidence/evaluations/{evaluation.id}/" in page
    evidence = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert "168 registers, – B shared" in evidence
    assert "None B shared" not in evidence and "None B shared" not in page


def test_evaluation_page_shows_the_gpus_own_witness_of_the_tensor_work(client):
    """The share the GPU's counters saw over the timed process (evaluator/arch_check/tensor_witness.py) is shown beside the
    profile's; without a reading, the verdict's note says why."""
    sync_catalog()
    witnessed = {"witness_tensor_share": 1.2893, "witness_any_tensor_pct": 1.8745, "witness_seconds": 4.765}
    page = client.get(f"/evidence/evaluations/{lf.evaluation(owner=lf.user('ada'), witness=witnessed).id}/")
    text = page.content.decode()
    assert "over the timed process: 1.29 of the task's FLOPs (1.875% tensor-busy over 4.77 s)" in text
    # GPM counts instructions that do no tensor math (docs/threat-model.md, property 4): a high reading is not shown
    # as proof
    assert "a high one does not establish it" in text
    # The workload it was read over (the one whose calls do the most FLOPs) is named by its axes
    of_headline = {**witnessed, "witness_workload": lf.HEADLINE}
    page = client.get(f"/evidence/evaluations/{lf.evaluation(owner=lf.user('cy'), witness=of_headline).id}/")
    assert "over the timed process of workload M=4096: 1.29 of the task's FLOPs" in page.content.decode()
    note = {"witness_note": "tensor work not witnessed: this GPU does not support GPM metrics"}
    page = client.get(f"/evidence/evaluations/{lf.evaluation(owner=lf.user('bob'), witness=note).id}/")
    assert "tensor work not witnessed: this GPU does not support GPM metrics" in page.content.decode()
