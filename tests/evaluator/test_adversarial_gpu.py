"""The whole adversarial corpus on an H100/H200 (sm_90a): every entry (GPU and host-code ones) against its
expected verdict, and a legitimate evaluation passing after each fault. scripts/gpu_tests.sh also prints the
expected-vs-actual table of two back-to-back rounds (tests/adversarial/corpus.py --repeat 2).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402
from gpu_requirements import hopper_problem  # noqa: E402

_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]
GPU_ENTRIES = corpus.entries(gpu=True)


@pytest.fixture(scope="module")
def caps():
    return corpus.capabilities()


@pytest.mark.parametrize("entry", GPU_ENTRIES, ids=[e["name"] for e in GPU_ENTRIES])
def test_gpu_entry_gets_its_expected_verdict(entry, caps):
    if entry["file"].startswith("../../tasks") and not (corpus.HERE / entry["file"]).is_file():
        pytest.skip("reference kernel not in the tree")
    outcome = corpus.run_entry(entry, caps)
    print(corpus.table([outcome]))
    assert outcome.ok, f"{entry['name']}: expected {outcome.expected}, got {outcome.actual}: {outcome.detail}"
    sandbox = outcome.verdict.get("sandbox")
    assert sandbox is not None and sandbox["mode"] in ("bubblewrap", "unsandboxed")
    if sandbox["mode"] == "unsandboxed":
        assert sandbox["reason"], "an unsandboxed verdict must say why"
