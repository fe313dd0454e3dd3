"""The kernel languages, each a seam registered here and nowhere else.

A language says how a submission's source is checked before anything runs, how it is built inside the sandbox,
which toolchain version the verdict records, and where its compiled kernels wait for the candidate process. The
pipeline and the compile stage ask the seam; they do not branch on the language's name. The candidate-process
side (evaluator/candidate_process/child.py) loads the built kernel by the job's `language` field, which comes from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluator.compile import CompiledKernel, compile_kernel
from evaluator.jail import Jail
from evaluator.policy import check_source
from evaluator.taskdata import Task, Workload
from evaluator.triton_compile import compile_triton, triton_version
from evaluator.triton_policy import check_source as check_triton_source
from evaluator.verdict import PolicyFinding

Build = Callable[[str, Task, list[Workload], str, Path, float, Jail], CompiledKernel]


@dataclass(frozen=True)
class Language:
    name: str  # the verdict's `language`
    suffix: str  # of a submitted file
    solution_file: str  # a solution folder's kernel file (tasks/<task>/solutions/<name>/)
    toolchain: str  # for messages: "nvcc", "the Triton compile"
    check_policy: Callable[[str, Task], list[PolicyFinding]]  # the source policy, before anything runs
    build: Build  # inside the sandbox, into the build folder
    version: Callable[[], str] | None = None  # the toolchain version the verdict records, if any
    kernel_cache: str | None = None  # the compiled kernels' folder in the compile's trusted folder, if any
    # A failed build's reason is the evaluator's last line in the log (the compile ran in a process of ours).
    reason_in_log: bool = False
    other_suffixes: tuple[str, ...] = ()  # further suffixes an uploaded file of this language may have

    @property
    def suffixes(self) -> tuple[str, ...]:
        return (self.suffix, *self.other_suffixes)


def _cuda_policy(source: str, task: Task) -> list[PolicyFinding]:
    return check_source(source)


def _triton_policy(source: str, task: Task) -> list[PolicyFinding]:
    params = [s.name for s in (*task.definition.inputs, *task.definition.outputs)]
    return check_triton_source(source, params)


def _nvcc(
    source: str, task: Task, chosen: list[Workload], arch: str, build: Path, timeout_s: float, jail: Jail
) -> CompiledKernel:
    return compile_kernel(source, arch, build, timeout_s=timeout_s, jail=jail)


def _triton(
    source: str, task: Task, chosen: list[Workload], arch: str, build: Path, timeout_s: float, jail: Jail
) -> CompiledKernel:
    return compile_triton(source, task, chosen, arch, build, timeout_s=timeout_s, jail=jail)


CUDA = Language("cuda", ".cu", "kernel.cu", "nvcc", _cuda_policy, _nvcc, other_suffixes=(".cuh",))
TRITON = Language(
    "triton",
    ".py",
    "kernel.py",
    "the Triton compile",
    _triton_policy,
    _triton,
    version=triton_version,
    kernel_cache="triton-cache",
    reason_in_log=True,
)
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (CUDA, TRITON)}


def language(name: str) -> Language:
    """The registered language of that name; ValueError names the known ones."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"unknown language {name!r} (known: {', '.join(LANGUAGES)})") from None


def language_of_file(path: Path) -> Language:
    """The language a submitted file's suffix says (a .py file is Triton); CUDA otherwise."""
    return next((lang for lang in LANGUAGES.values() if path.suffix == lang.suffix), CUDA)
