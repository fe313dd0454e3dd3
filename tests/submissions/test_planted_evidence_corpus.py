"""The corpus entry `triton_escape_planted_evidence` end to end: the real evaluator compiles a Triton file whose
compile plants look-alike evidence in its cache, then the portal's evidence collector reads that evaluator's work
folder. None of the planted files is kept, and the SASS kept is the trusted listing of the kernel that was built."""

from __future__ import annotations

import json

import pytest

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.verdict import OverallStatus
from portal.core.verdict_record import parse_verdict
from portal.submissions.evidence_files import collect
from tests.adversarial import corpus
from tests.support.sandbox import sandbox_problem

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}"),
]
PLANTED = ("0-kernel", "ncu-metrics", "filler-", "planted")


def test_files_the_compile_planted_in_its_cache_are_never_kept_as_evidence(tmp_path):
    entry = next(e for e in corpus.load()["entries"] if e["name"] == "triton_escape_planted_evidence")
    work = tmp_path / "evaluator"
    run = {**entry, "options": {**entry["options"], "workdir": str(work), "keep_workdir": True}}
    verdict = corpus.evaluate_entry(run)
    assert verdict.status == OverallStatus.STATIC_ONLY
    # The attack reached the trusted side's copy of the cache, where the portal once published it from.
    reached = [p for p in work.rglob("0-kernel.sass") if "-trusted" in str(p)]
    assert reached, sorted(str(p.relative_to(work)) for p in work.rglob("*"))[:50]

    document = json.loads(vm.to_json(verdict))
    kept = collect(
        work,
        source_name="kernel.py",
        source=(corpus.HERE / entry["file"]).read_text(),
        verdict_bytes=json.dumps(document).encode(),
        record=parse_verdict(document),
        max_bytes=32 << 20,
        log_max_bytes=64 << 10,
    )
    names = [f.name for f in kept.files]
    assert not [n for n in names if any(p in n for p in PLANTED)], names
    sass = next((f for f in kept.files if f.name.endswith("kernel.sass")), None)
    assert sass is not None and b"fill_kernel" in sass.data and b"HGMMA" not in sass.data
