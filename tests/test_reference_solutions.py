"""Every expert reference kernel under tasks/*/solutions/ builds for its architecture and its static SASS holds
what its solution.json promises (the GPU verdicts in docs/verdicts/ cover the run-time part on Hopper)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.jail import allow_unsandboxed_from_env, find_bwrap
from evaluator.pipeline import evaluate
from evaluator.taskdata import find_task
from tests.factories import REPO

SOLUTIONS = sorted((REPO / "tasks").glob("*/solutions/*/solution.json"))


@pytest.mark.parametrize("meta_path", SOLUTIONS, ids=lambda p: f"{p.parts[-4]}/{p.parts[-2]}")
def test_reference_solution_compiles_with_its_target_instructions(meta_path: Path):
    if find_bwrap() is None and not allow_unsandboxed_from_env():
        pytest.fail("bubblewrap is missing: `make test` installs it")
    meta = json.loads(meta_path.read_text())
    folder = meta_path.parent
    task = find_task(REPO / "tasks", meta["definition"])
    arch = meta["spec"]["arch"]
    verdict = evaluate((folder / "kernel.cu").read_text(), task, arch, stages=("policy", "compile", "sass"))
    assert verdict.status == "STATIC_ONLY", (verdict.status, verdict.compile.output[-2000:] if verdict.compile else "")
    assert verdict.compile.ok and all((r.spill_store_bytes or 0) == 0 for r in verdict.compile.resources)
    families = verdict.sass.families
    expected = meta["expected"]
    if arch == "sm_100a":
        assert families["tcgen05"] > 0 and families["tma"] > 0
    elif expected["arch_status"] in {"verified", "not_executed", "token"}:
        assert families["gmma"] > 0  # present statically in every Hopper reference, dead or not
        if expected.get("full"):
            assert families["tma"] > 0
