"""The evaluator's folders show its trust boundary (docs/architecture.md, "Evaluator modules").

`evaluator/candidate_process/` holds the code that executes inside processes of candidate shape (the candidate's
own process, the profiled process, the trusted-baseline process) and in the Triton ahead-of-time compile, which
runs the submission's Python: submitted code shares those interpreters, so what that code reports is a hint. The
rest of `evaluator/` is the trusted parent, except the modules used on both sides, listed below with why.

Checked by reading the source with `ast` (tests/support/evaluator_imports.py), every import counted: module level,
inside functions, and under `if TYPE_CHECKING:` for the rules on what imports what.
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

import pytest

from tests.support.evaluator_imports import (
    CANDIDATE_PACKAGE,
    EVALUATOR,
    import_edges,
    in_package,
    loaded_by,
    package_modules,
    trust_violations,
)

# The root modules that code in evaluator/candidate_process/ may import, and why each is needed on both sides.
USED_ON_BOTH_SIDES = {
    "evaluator.protocol": "the one message format: the child builds events and reads commands, the parent the reverse",
    "evaluator.inputs": "inputs drawn from the same per-call seeds on both sides; poisoning; the library baseline",
    "evaluator.taskdata": "the child loads its staged task (definition, workload, baselines) like the parent",
    "evaluator.shared_outputs": "batch outputs in memory the parent owns: it creates the region, the child maps it",
    "evaluator.launches": "the Launch record the child's CUPTI timer builds and the parent parses back",
    "evaluator.stats": "merge_intervals, the union of activity intervals the child's timer measures with",
    "evaluator.triton_settings": "the Triton settings (cache key) the compile and the candidate process must share",
}
# Root modules that the candidate side loads only because a module above imports them (nothing there calls them
# directly). A new entry here means more of the trusted side runs where candidate code can patch it: say why.
LOADED_AS_DEPENDENCY = {
    "evaluator": "the package's __init__ (docstring and version only), run by every process of the package",
    "evaluator.verdict": "evaluator.stats names TimingStats",
    "evaluator.arches": "evaluator.taskdata checks targets against the known architectures",
    "evaluator.flops": "evaluator.taskdata evaluates FLOP expressions",
    "evaluator.task_families": "evaluator.inputs draws each input by its task family's rule, the same on both sides",
    "evaluator.hostile_files": "evaluator.protocol reads the profile result file (a parent-side function) with it",
    "evaluator.gpu_share": "evaluator.shared_outputs maps device memory through it",
}
BOTH_SIDES_NOTE = "both sides of the trust boundary"


def test_the_trusted_side_never_imports_candidate_process_code_and_the_candidate_side_only_shared_modules():
    assert trust_violations(EVALUATOR, CANDIDATE_PACKAGE, set(USED_ON_BOTH_SIDES)) == []


def test_the_root_modules_loaded_in_candidate_processes_are_the_listed_ones_and_say_so():
    modules = package_modules(EVALUATOR)
    inside = {m for m in modules if in_package(m, CANDIDATE_PACKAGE)}
    loaded = {m for m in loaded_by(inside, import_edges()) if not in_package(m, CANDIDATE_PACKAGE)}
    listed = set(USED_ON_BOTH_SIDES) | set(LOADED_AS_DEPENDENCY)
    assert loaded <= listed, f"root modules loaded in candidate processes but not listed: {sorted(loaded - listed)}"
    assert listed <= loaded, f"listed but no longer loaded there (drop them): {sorted(listed - loaded)}"
    # Each says so in its docstring, and no other root module claims it.
    claims = set()
    for name, path in modules.items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if BOTH_SIDES_NOTE in " ".join(doc.split()):
            claims.add(name)
    shared = listed - {"evaluator"}  # the package docstring describes the whole layout instead
    assert shared - claims == set(), f"no '{BOTH_SIDES_NOTE}' note in the docstring of {sorted(shared - claims)}"
    assert claims - listed == set(), f"'{BOTH_SIDES_NOTE}' claimed by modules not listed here: {claims - listed}"


def test_the_processes_the_parent_starts_by_name_are_candidate_process_modules():
    from evaluator.candidate import CHILD_MODULE, child_command
    from evaluator.triton_compile import TRITON_AOT_MODULE

    modules = package_modules(EVALUATOR)
    for name in (CHILD_MODULE, TRITON_AOT_MODULE):
        assert in_package(name, CANDIDATE_PACKAGE) and name in modules, name
    assert child_command(Path("job.json"))[1:3] == ["-m", CHILD_MODULE]


def test_every_module_name_written_as_a_string_in_the_evaluator_exists():
    """`python -m evaluator.x` command lines, docstrings and comments naming a module: a moved module's old name
    left in a string (a command line the parent runs, or a payload it documents) fails here."""
    modules = package_modules(EVALUATOR)
    missing = []
    for path in modules.values():
        where = path.relative_to(EVALUATOR.parent)
        with path.open("rb") as fh:
            texts = [t.string for t in tokenize.tokenize(fh.readline) if t.type in (tokenize.STRING, tokenize.COMMENT)]
        for text in texts:
            for match in re.finditer(r"(?<![\w./])evaluator(?:\.[A-Za-z_]\w*)+", text):
                parts = match.group(0).split(".")  # a module, or a name inside one
                if not any(".".join(parts[:end]) in modules for end in range(2, len(parts) + 1)):
                    missing.append(f"{where}: {match.group(0)}")
            for match in re.finditer(r"(?<![\w./])evaluator/[\w/]+(?:\.schema)?\.(?:py|json)\b", text):
                if not (EVALUATOR.parent / match.group(0)).exists():
                    missing.append(f"{where}: {match.group(0)}")
    assert not missing, missing


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "evaluator"


BASE = {
    "evaluator/__init__.py": "",
    "evaluator/protocol.py": "",
    "evaluator/pipeline.py": "from evaluator import protocol\n",
    "evaluator/candidate_process/__init__.py": "",
    "evaluator/candidate_process/child.py": "from evaluator import protocol\nfrom . import timing\n",
    "evaluator/candidate_process/timing.py": "from evaluator.protocol import X\n",
}


@pytest.mark.parametrize(
    "module, source, expected",
    [
        # (a) the trusted side reaching into the candidate side, every spelling of it
        ("evaluator/pipeline.py", "from evaluator.candidate_process.timing import now\n", "pipeline:1 imports"),
        ("evaluator/pipeline.py", "def f():\n    import evaluator.candidate_process.child\n", "pipeline:2 imports"),
        ("evaluator/pipeline.py", "from evaluator import candidate_process\n", "imports evaluator.candidate_process "),
        ("evaluator/pipeline.py", "from .candidate_process import timing\n", "candidate_process.timing (the trusted"),
        (
            "evaluator/pipeline.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evaluator.candidate_process import child\n",
            "pipeline:3 imports evaluator.candidate_process.child",
        ),
        # (b) the candidate side importing a trusted module that is not on the list
        ("evaluator/candidate_process/timing.py", "from evaluator.pipeline import run\n", "timing:1 imports"),
        (
            "evaluator/candidate_process/timing.py",
            "def f():\n    from ..pipeline import run\n",
            "imports evaluator.pipeline",
        ),
        ("evaluator/candidate_process/timing.py", "import evaluator\n", "imports evaluator, which"),
    ],
)
def test_the_layout_check_catches_a_violation(tmp_path, module, source, expected):
    """The check itself, on a small package of the same shape: clean, then with one violating import."""
    package = _package(tmp_path, BASE)
    assert trust_violations(package, CANDIDATE_PACKAGE, {"evaluator.protocol"}) == []
    (tmp_path / module).write_text(source)
    found = trust_violations(package, CANDIDATE_PACKAGE, {"evaluator.protocol"})
    assert len(found) == 1 and expected in found[0], found
