"""scripts/tree_digest.sh: the digest a GPU run's log prints of the files it ran, matched against a commit's."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "tree_digest.sh"


def _digest(cwd: Path, *args: str) -> str:
    out = subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _checkout_of_head(tmp_path: Path) -> Path:
    """HEAD's files as the device tool's copy has them: a folder with the files and no git history of its own."""
    copy = tmp_path / "copy"
    copy.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(copy)], input=archive, check=True)
    return copy


def test_a_copy_of_a_commits_files_has_that_commits_digest_and_one_changed_byte_changes_it(tmp_path):
    copy = _checkout_of_head(tmp_path)
    head = _digest(REPO, "HEAD")
    assert len(head) == 16 and _digest(copy) == head
    # Python's byte-code caches are written where the code runs; they are not the tree.
    cache = copy / "evaluator" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "pipeline.cpython-311.pyc").write_bytes(b"\0" * 64)
    assert _digest(copy) == head
    policy = copy / "evaluator" / "source_policy" / "policy.py"
    original = policy.read_bytes()
    policy.write_bytes(original + b"\n")
    assert _digest(copy) != head
    policy.write_bytes(original)
    assert _digest(copy) == head
    added = copy / "tests" / "adversarial" / "extra.cu"
    added.write_text("// a file the commit does not have\n", encoding="utf-8")
    assert _digest(copy) != head
