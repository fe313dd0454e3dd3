"""The evaluator's folders show its trust boundary (docs/architecture.md, "Evaluator modules").

`evaluator/candidate_process/` holds the code that executes inside processes of candidate shape (the candidate's
own process, the profiled process, the trusted-baseline process) and in the Triton ahead-of-time compile, which
runs the submission's Python: submitted code shares those interpreters, so what that code reports is a hint.
`evaluator/both_sides/` holds the modules those processes load from the rest of the package, each for the reason
listed below; every other folder is the trusted parent only.

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
    SHARED_PACKAGE,
    import_edges,
    in_package,
    loaded_by,
    package_modules,
    trust_violations,
)

# Why each module of evaluator/both_sides/ runs in candidate processes too. A new entry means more of the trusted
# side runs where candidate code can patch it: say why.
WHY_ON_BOTH_SIDES = {
    "evaluator.both_sides.protocol": "the one message format: the child builds events and reads commands",
    "evaluator.both_sides.inputs": "the layout of each call's inputs on the lent slots, the same on both sides",
    "evaluator.both_sides.taskdata": "the child loads its staged task (definition, workload, baselines) like the parent",
    "evaluator.both_sides.shared_outputs": "the lent slots: the parent creates the regions, the child maps them",
    "evaluator.both_sides.launches": "the Launch record the child's CUPTI timer builds and the parent parses back",
    "evaluator.both_sides.stats": "merge_intervals, the union of activity intervals the child's timer measures with",
    "evaluator.both_sides.triton_settings": "the Triton settings (cache key) the compile and the candidate share",
    "evaluator.both_sides.verdict": "evaluator.both_sides.stats names TimingStats",
    "evaluator.both_sides.arches": "evaluator.both_sides.taskdata checks targets against the known architectures",
    "evaluator.both_sides.flops": "evaluator.both_sides.taskdata evaluates FLOP expressions",
    "evaluator.both_sides.task_families": "evaluator.both_sides.inputs draws each input by its family's rule",
    "evaluator.both_sides.hostile_files": "evaluator.both_sides.protocol reads the profile result file with it",
    "evaluator.both_sides.gpu_share": "evaluator.both_sides.shared_outputs maps device memory through it",
}
# Package files every such process runs on the way to the modules above: docstrings only.
PACKAGE_FILES = {"evaluator", SHARED_PACKAGE}


def test_the_trusted_side_never_imports_candidate_process_code_and_the_candidate_side_only_both_sides():
    assert trust_violations(EVALUATOR, CANDIDATE_PACKAGE, SHARED_PACKAGE) == []


def test_both_sides_holds_exactly_what_candidate_processes_load_and_says_why():
    modules = package_modules(EVALUATOR)
    inside = {m for m in modules if in_package(m, CANDIDATE_PACKAGE)}
    loaded = {m for m in loaded_by(inside, import_edges()) if not in_package(m, CANDIDATE_PACKAGE)}
    shared = {m for m in modules if in_package(m, SHARED_PACKAGE)}
    assert loaded - PACKAGE_FILES == set(WHY_ON_BOTH_SIDES), "loaded in candidate processes, or listed, but not both"
    assert shared - {SHARED_PACKAGE} == set(WHY_ON_BOTH_SIDES), "a module of both_sides/ that no candidate loads"
    for package in PACKAGE_FILES:  # run by every such process: nothing there but the docstring and a version
        tree = ast.parse(modules[package].read_text(encoding="utf-8"))
        assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], package


def test_the_processes_the_parent_starts_by_name_are_candidate_process_modules():
    from evaluator.build.triton_compile import TRITON_AOT_MODULE
    from evaluator.measure.candidate import CHILD_MODULE, child_command

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
    "evaluator/both_sides/__init__.py": "",
    "evaluator/both_sides/protocol.py": "from evaluator.both_sides import launches\n",
    "evaluator/both_sides/launches.py": "",
    "evaluator/pipeline.py": "from evaluator.both_sides import protocol\n",
    "evaluator/candidate_process/__init__.py": "",
    "evaluator/candidate_process/child.py": "from evaluator.both_sides import protocol\nfrom . import timing\n",
    "evaluator/candidate_process/timing.py": "from evaluator.both_sides.protocol import X\n",
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
        # (b) the candidate side importing a module from outside both_sides/
        ("evaluator/candidate_process/timing.py", "from evaluator.pipeline import run\n", "timing:1 imports"),
        (
            "evaluator/candidate_process/timing.py",
            "def f():\n    from ..pipeline import run\n",
            "imports evaluator.pipeline",
        ),
        ("evaluator/candidate_process/timing.py", "import evaluator\n", "imports evaluator, which"),
        ("evaluator/candidate_process/timing.py", "import evaluator.both_sides\n", "imports evaluator.both_sides,"),
        # (c) both_sides/ reaching the trusted side, which would then run in candidate processes
        ("evaluator/both_sides/launches.py", "from evaluator.pipeline import run\n", "imports only its own"),
        ("evaluator/both_sides/launches.py", "def f():\n    from .. import pipeline\n", "imports only"),
    ],
)
def test_the_layout_check_catches_a_violation(tmp_path, module, source, expected):
    """The check itself, on a small package of the same shape: clean, then with one violating import."""
    package = _package(tmp_path, BASE)
    assert trust_violations(package, CANDIDATE_PACKAGE, SHARED_PACKAGE) == []
    (tmp_path / module).write_text(source)
    found = trust_violations(package, CANDIDATE_PACKAGE, SHARED_PACKAGE)
    assert len(found) == 1 and expected in found[0], found
