"""Expert reference kernels as data: `tasks/<task>/solutions/<name>/solution.json` and the file it names.

`solution.json` gives the task (`definition`), `spec.arch`, `spec.language` (cuda when absent) and
`spec.entry_point` ("kernel.cu::run", "kernel.py::run"; the language's default file when absent), what a
verdict must show (`expected`) and its `role`: an expert kernel (`expert`, the default) or a `negative_control`, a
kernel written to fail the instruction check (the boards never call it an expert reference). Read by the reference-solution tests, scripts/gpu_references.py and the portal's
import of committed reference verdicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.languages import DEFAULT_LANGUAGE, LANGUAGES

LANGUAGE_FILES = {name: lang.solution_file for name, lang in LANGUAGES.items()}
ROLES = ("expert", "negative_control")


@dataclass(frozen=True)
class Solution:
    folder: Path
    task: str
    arch: str
    language: str
    kernel_file: str  # a file name inside `folder`
    expected: dict[str, Any] = field(default_factory=dict)
    role: str = "expert"  # one of ROLES

    @property
    def label(self) -> str:
        return f"{self.task}/{self.folder.name}"

    def source(self) -> str:
        return (self.folder / self.kernel_file).read_text(encoding="utf-8")


def read_solution(meta_path: Path) -> Solution:
    """The solution described by `meta_path`; ValueError (naming the file) when it is malformed."""
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        spec = meta.get("spec") or {}
    except (ValueError, AttributeError):
        raise ValueError(f"{meta_path.parent.name}/solution.json is not a JSON object") from None
    language = str(spec.get("language") or DEFAULT_LANGUAGE.name)
    if language not in LANGUAGE_FILES:
        raise ValueError(f"{meta_path.parent.name}/solution.json names an unknown language {language!r}")
    kernel_file = str(spec.get("entry_point") or LANGUAGE_FILES[language]).split("::", 1)[0]
    if "/" in kernel_file or kernel_file.startswith("."):
        raise ValueError(f"{meta_path.parent.name}/solution.json: entry point {kernel_file!r} is not a file name")
    role = str(meta.get("role") or "expert")
    if role not in ROLES:
        raise ValueError(f"{meta_path.parent.name}/solution.json names an unknown role {role!r}")
    return Solution(
        meta_path.parent,
        str(meta.get("definition") or ""),
        str(spec.get("arch") or ""),
        language,
        kernel_file,
        dict(meta.get("expected") or {}),
        role,
    )


def find_solutions(tasks_dir: Path, arch: str | None = None) -> list[Solution]:
    """Every solution under `tasks_dir` (of one architecture when given), in path order."""
    found = [read_solution(p) for p in sorted(tasks_dir.glob("*/solutions/*/solution.json"))]
    return [s for s in found if arch is None or s.arch == arch]
