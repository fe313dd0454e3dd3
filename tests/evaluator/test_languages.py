"""The kernel languages are seams registered in one place (evaluator/languages.py): the pipeline and the
compile stage ask the seam instead of branching on the language's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evaluator import languages
from evaluator.solutions import LANGUAGE_FILES

EVALUATOR = Path(languages.__file__).resolve().parent
# The candidate-process side (evaluator/candidate_process/, not scanned: only the root's modules are) loads by the
# job's language (a different process, no registry import wanted there).
SEAM_FILES = {"languages.py", "candidate.py", "verdict.py", "__main__.py"}


def test_each_language_is_found_by_name_and_by_file_suffix():
    assert languages.language("cuda") is languages.CUDA and languages.language("triton") is languages.TRITON
    assert languages.language_of_file(Path("k.py")) is languages.TRITON
    assert languages.language_of_file(Path("k.cu")) is languages.CUDA
    assert LANGUAGE_FILES == {"cuda": "kernel.cu", "triton": "kernel.py"}
    with pytest.raises(ValueError, match="known: cuda, triton"):
        languages.language("fortran")


def test_each_language_checks_its_own_policy():
    from evaluator.taskdata import load_task

    task = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
    cuda_findings = languages.CUDA.check_policy('#include <dlfcn.h>\nvoid f(){ dlopen("x", 0); }\n', task)
    assert any(f.rule == "dynamic-loading" for f in cuda_findings)
    triton_findings = languages.TRITON.check_policy("import os\n", task)
    assert any("'os'" in f.message for f in triton_findings)
    # each language's policy is its own: Python is no CUDA source, and the reverse
    assert not any(f.rule == "dynamic-loading" for f in languages.TRITON.check_policy("import torch\n", task))


def test_no_stage_module_branches_on_a_language_name():
    """`== "triton"` / `== "cuda"` outside the seam module and the candidate side is a second registry."""
    offenders = []
    for path in sorted(EVALUATOR.glob("*.py")):
        if path.name in SEAM_FILES or path.name.startswith("triton_"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value in ("triton", "cuda") for c in node.comparators
            ):
                left = ast.unparse(node.left)
                if "language" in left:
                    offenders.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not offenders, offenders
