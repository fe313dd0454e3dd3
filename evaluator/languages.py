"""The kernel languages, each a seam registered here and nowhere else.

A language says how a submission's source is checked before anything runs, how it is built inside the sandbox,
which toolchain version the verdict records, and where its compiled kernels wait for the candidate process. The
pipeline and the compile stage ask the seam; they do not branch on the language's name. The candidate process
(evaluator/candidate_process/child.py) never imports this registry (its build side is trusted-only code): the job
file names the language's `loader` module, and carries a private copy of its `kernel_cache` when it has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluator.both_sides.taskdata import Definition, Task, Workload
from evaluator.both_sides.verdict import PolicyFinding
from evaluator.build.compile import CompiledKernel, compile_kernel
from evaluator.build.kernel_abi import run_signature as cuda_run_signature
from evaluator.build.triton_compile import compile_triton, triton_version
from evaluator.isolation.jail import Jail
from evaluator.source_policy.policy import check_source
from evaluator.source_policy.triton_policy import check_source as check_triton_source
from evaluator.source_policy.triton_policy import run_signature as triton_run_signature

Build = Callable[[str, Task, list[Workload], str, Path, float, Jail], CompiledKernel]


@dataclass(frozen=True)
class Prompting:
    """How a model is told to write the language, and how its reply is read back (the portal's agent)."""

    rules: str  # the system prompt's opening: what is checked, in which order, and how to answer
    answer: str  # what to answer with: "the complete .cu file"
    kernel_file: str  # what a kernel block holds, for messages: "a complete .cu file that exports `run` ..."
    signature_verb: str  # what the file does with `run`: "export" (a library symbol), "define" (a function)
    # A reply's block may hold the kernel when its info string is one of these, or it has none.
    accepted_fences: frozenset[str]
    markers_all: tuple[str, ...] = ()  # a kernel block holds every one of these ...
    markers_any: tuple[str, ...] = ()  # ... and, when any are listed, at least one of these

    def looks_like_kernel(self, info: str, code: str) -> bool:
        """Whether a reply's code block (its info string, its text) may be this language's kernel file."""
        if info and info not in self.accepted_fences:
            return False
        if not all(marker in code for marker in self.markers_all):
            return False
        return not self.markers_any or any(marker in code for marker in self.markers_any)


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
    # The module that loads the build in the candidate process, run there by name: its `prepare()` runs before the
    # candidate's code exists (its failures are this host's), its `load(library, kernel_cache)` returns (what must
    # stay alive, the candidate's `run`) and is where the candidate's code first runs. It lives in
    # evaluator/candidate_process/ (the trust layout: what runs beside candidate code) and imports only what the
    # candidate process may load before that code. Empty: the language is built and checked but never run.
    loader: str = ""
    # A failed build's reason is the evaluator's last line in the log (the compile ran in a process of ours).
    reason_in_log: bool = False
    other_suffixes: tuple[str, ...] = ()  # further suffixes an uploaded file of this language may have
    label: str = ""  # for people: "CUDA"; the name when empty
    starter_file: str = ""  # a task folder's minimal correct kernel in this language, if the language has starters
    signature: Callable[[Definition], str] | None = None  # the `run` a kernel file provides, in its own syntax
    entry_point: str = ""  # Markdown for the task page: what the file must look like
    # Info strings of Markdown code blocks, which Pygments also knows: source in this language (a model's answer,
    # a starter), and the `run` signature.
    fence: str = ""
    signature_fence: str = ""
    prompting: Prompting | None = None  # absent: models are not asked to write it
    # Pasted source of unknown language that matches is taken as this one; the default language otherwise.
    pasted_marker: re.Pattern[str] | None = None

    @property
    def suffixes(self) -> tuple[str, ...]:
        return (self.suffix, *self.other_suffixes)

    @property
    def display_name(self) -> str:
        return self.label or self.name


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


_CUDA_RULES = """You are writing one CUDA kernel file for PTXBench, which checks three things in order:
1. correctness against a PyTorch reference on every workload (atol = rtol = 1e-2; an element fails only if both are exceeded);
2. that the architecture's target instructions are in the SASS and really execute on the timed workload;
3. speed against the library baseline (median of many timed calls).

How to answer:
- Reply with the complete .cu file in one fenced code block marked ```cuda. If your reply has several code blocks, the last one that looks like a kernel file is evaluated.
- The file follows the kernel ABI below exactly: it exports `run` with TVM_FFI_DLL_EXPORT_TYPED_FUNC, takes all inputs then all preallocated outputs, and launches on the framework's stream.
- After each attempt you get the evaluator's feedback (compile errors, per-workload status and errors, instruction report, speed); fix or improve the kernel and answer with the whole file again.
"""

_TRITON_RULES = """You are writing one Triton kernel file (Python) for PTXBench, which checks three things in order:
1. correctness against a PyTorch reference on every workload (atol = rtol = 1e-2; an element fails only if both are exceeded);
2. that the architecture's target instructions are in the SASS of your compiled kernels and really execute on the timed workload;
3. speed against the library baseline (median of many timed calls).

How to answer:
- Reply with the complete Python file in one fenced code block marked ```python. If your reply has several code blocks, the last one that looks like a Triton file is evaluated.
- The file defines @triton.jit kernels and a function `run` that takes all inputs then all preallocated outputs (PyTorch tensors on the GPU) and launches your kernels; it returns nothing.
- Host code may only read shapes, strides and dtypes, make views, allocate workspace with torch.empty and launch kernels: no PyTorch compute (no @, torch.matmul, torch.nn.functional, tensor methods that compute or copy), no imports other than triton, triton.language, triton.tools.tensor_descriptor, math and torch, no exec/eval/getattr. triton.autotune is not allowed: choose block sizes, num_warps and num_stages yourself.
- Kernels are compiled ahead of time from what `run` launches for each workload's shapes: decide what to launch from shapes only.
- After each attempt you get the evaluator's feedback (compile errors, per-workload status and errors, instruction report, speed); fix or improve the kernel and answer with the whole file again.
"""


def _triton_signature(definition: Definition) -> str:
    return triton_run_signature([s.name for s in (*definition.inputs, *definition.outputs)])


CUDA = Language(
    "cuda",
    ".cu",
    "kernel.cu",
    "nvcc",
    _cuda_policy,
    _nvcc,
    loader="evaluator.candidate_process.tvm_ffi_library",
    other_suffixes=(".cuh",),
    label="CUDA",
    starter_file="starter.cu",
    signature=cuda_run_signature,
    fence="cuda",
    signature_fence="cpp",
    entry_point=(
        "One self-contained `.cu` file exporting `run` through TVM-FFI (`TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...)`), "
        "destination-passing style: inputs in order, then the preallocated outputs; launch on the framework's stream."
    ),
    prompting=Prompting(
        rules=_CUDA_RULES,
        answer="the complete .cu file",
        kernel_file="a complete .cu file that exports `run` with TVM_FFI_DLL_EXPORT_TYPED_FUNC",
        signature_verb="export",
        accepted_fences=frozenset({"cuda", "cu", "cpp", "c++", "cxx", "c", "cc", "h", "hpp", "cuh"}),
        markers_any=("__global__", "TVM_FFI_DLL_EXPORT_TYPED_FUNC", "run_impl"),
    ),
)
TRITON = Language(
    "triton",
    ".py",
    "kernel.py",
    "the Triton compile",
    _triton_policy,
    _triton,
    version=triton_version,
    kernel_cache="triton-cache",
    loader="evaluator.candidate_process.triton_runtime",
    reason_in_log=True,
    label="Triton",
    starter_file="starter_triton.py",
    signature=_triton_signature,
    fence="python",
    signature_fence="python",
    entry_point=(
        "One Python file of `@triton.jit` kernels defining `run`: inputs in order, then the preallocated outputs, as "
        "PyTorch tensors; host code may only look at shapes, strides and dtypes, allocate workspace with "
        "`torch.empty` and launch."
    ),
    prompting=Prompting(
        rules=_TRITON_RULES,
        answer="the complete Python file",
        kernel_file="a complete Python file with @triton.jit kernels and a function `run`",
        signature_verb="define",
        accepted_fences=frozenset({"python", "py", "python3", "triton"}),
        markers_all=("triton.jit", "def run"),
    ),
    pasted_marker=re.compile(r"^\s*(import triton|from triton\b)", re.MULTILINE),
)
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (CUDA, TRITON)}
DEFAULT_LANGUAGE = CUDA  # what a kernel is when nothing says otherwise (a form left on "from the file")


def language(name: str) -> Language:
    """The registered language of that name; ValueError names the known ones."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"unknown language {name!r} (known: {', '.join(LANGUAGES)})") from None


def language_of_file(path: Path) -> Language:
    """The language a submitted file's suffix says (a .py file is Triton); CUDA otherwise."""
    return next((lang for lang in LANGUAGES.values() if path.suffix == lang.suffix), CUDA)
