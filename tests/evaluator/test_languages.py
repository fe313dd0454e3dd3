"""The kernel languages are seams registered in one place (evaluator/languages.py): the pipeline and the
compile stage ask the seam instead of branching on the language's name (tests/evaluator/test_language_seam.py: no
module names a language for behaviour, and a made-up one runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator import languages
from evaluator.suite.solutions import LANGUAGE_FILES


def test_each_language_is_found_by_name_and_by_file_suffix():
    assert languages.language("cuda") is languages.CUDA and languages.language("triton") is languages.TRITON
    assert languages.language_of_file(Path("k.py")) is languages.TRITON
    assert languages.language_of_file(Path("k.cu")) is languages.CUDA
    assert LANGUAGE_FILES == {"cuda": "kernel.cu", "triton": "kernel.py"}
    with pytest.raises(ValueError, match="known: cuda, triton"):
        languages.language("fortran")


def test_each_language_checks_its_own_policy():
    from evaluator.both_sides.taskdata import load_task

    task = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
    cuda_findings = languages.CUDA.check_policy('#include <dlfcn.h>\nvoid f(){ dlopen("x", 0); }\n', task)
    assert any(f.rule == "dynamic-loading" for f in cuda_findings)
    triton_findings = languages.TRITON.check_policy("import os\n", task)
    assert any("'os'" in f.message for f in triton_findings)
    # each language's policy is its own: Python is no CUDA source, and the reverse
    assert not any(f.rule == "dynamic-loading" for f in languages.TRITON.check_policy("import torch\n", task))
