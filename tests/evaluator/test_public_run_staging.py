"""A public run's candidate never gets the task's hidden workloads: the task folder its job names holds no
hidden-workloads file and no hidden uuid or shape (the ranked check's inputs stay unknown until it runs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evaluator.both_sides.taskdata import HIDDEN_WORKLOADS_FILE, load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.pipeline import Options, evaluate
from tests.support.variants import SOURCE

TINY = Path(__file__).resolve().parent / "tasks" / "tiny_gemm"
PUBLIC = "00000000-0000-4000-8000-000000000016"
HIDDEN = ["00000000-0000-4000-8000-0000000000c7", "00000000-0000-4000-8000-0000000000d3"]


def test_a_public_run_stages_no_hidden_workload(tmp_path):
    """Mutation caught: `stage_task` (evaluator/measure/candidate.py) copying hidden_workloads.jsonl for a public run (the
    hidden run's filtering left as it is)."""
    task_dir = tmp_path / "tiny_gemm"
    shutil.copytree(TINY, task_dir)
    lines = [
        {"uuid": u, "axes": {"M": m}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}
        for u, m in zip(HIDDEN, (37, 83), strict=True)
    ]
    (task_dir / HIDDEN_WORKLOADS_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    task = load_task(task_dir)
    assert [w.uuid for w in task.hidden_workloads] == HIDDEN
    work = tmp_path / "work"
    opts = Options(device_type="cpu", timeout_s=60, workdir=work, keep_workdir=True, allow_unsandboxed=True)
    v = evaluate(SOURCE, task, "sm_90a", workloads=PUBLIC, stages=["correctness"], options=opts)
    assert v.status == OverallStatus.PASSED and v.workload_set != "hidden"
    jobs = sorted(work.glob("job-*.json"))
    assert jobs, "the candidate process was given no job file"
    for job in jobs:
        staged = Path(json.loads(job.read_text())["task_dir"])  # the task folder the candidate process loads
        assert staged.is_dir() and staged != task_dir
        assert sorted(p.name for p in staged.iterdir()) == sorted(
            p.name for p in task_dir.iterdir() if p.name not in (HIDDEN_WORKLOADS_FILE, "solutions", "__pycache__")
        )
        seen = b"".join(p.read_bytes() for p in staged.rglob("*") if p.is_file())
        assert not any(u.encode() in seen for u in HIDDEN)
