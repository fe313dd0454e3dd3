"""The compile and SASS stages of one evaluation: the submission built for the target, then read statically.

`compile_stage` builds with nvcc (CUDA) or ahead of time with Triton inside the sandbox, re-applies the policy to
what the compiler saw (macro-expanded source, the files it opened), and stops the verdict on any failure.
`sass_stage` counts the target instruction families in every cubin and reads each kernel's compiled footprint
(registers, shared memory), which the timed calls' launches are later held against (evaluator/checks/integrity.py);
cuobjdump reads the candidate's binaries in the compile sandbox, and its failure on them stops the verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from evaluator.arch_check import ncu as ncu_mod
from evaluator.binaries.binary_tools import ToolFailed
from evaluator.binaries.sass import (
    count_families,
    disassemble,
    dump_resource_usage,
    merge_resource_usage,
    resource_usage,
)
from evaluator.both_sides import hostile_files
from evaluator.both_sides.taskdata import Task, Workload
from evaluator.both_sides.verdict import KernelFootprint, OverallStatus, PolicyFinding, SassCounts, StageState
from evaluator.build import compile_cache
from evaluator.build.compile import CompiledKernel
from evaluator.build.includes import outside_finding
from evaluator.isolation.jail import Jail
from evaluator.languages import language
from evaluator.source_policy.policy import check_preprocessed
from evaluator.stage_book import StageBook

POLICY_WITHHELD = "[evaluator] the compile log is withheld: the source was rejected by policy after macro expansion"


def compile_stage(
    source: str,
    task: Task,
    arch: str,
    chosen: list[Workload],
    workdir: Path,
    book: StageBook,
    jail: Jail,
    timeout_s: float,
) -> CompiledKernel | None:
    """The compiled submission (its language's build, evaluator/languages.py), or None when the verdict stopped."""
    v = book.verdict
    t = time.monotonic()
    lang = language(v.language)
    book.report("compile", f"{lang.toolchain} for {arch}")
    compiled = lang.build(source, task, chosen, arch, workdir / "build", timeout_s, jail)
    v.compile = compiled.result
    if compiled.outside_files:
        # nvcc opened a file outside the include roots: its log (already withheld) could quote it.
        v.policy = [outside_finding(compiled.outside_files)]
        book.finish("compile", StageState.FAILED, t, v.policy[0].message)
        msg = f"rejected by policy while compiling: {v.policy[0].message}"
        book.stop("compile", OverallStatus.POLICY_REJECTED, "rejected by policy", chosen, msg)
        return None
    # Policy again on the macro-expanded source: token pasting cannot hide dlopen or cuBLAS. A failed compile is
    # checked too: the assembler may have run an `.include` before the failure, and its errors quote what it read,
    # so a rejected source's log is withheld either way. Text the compiler compiled that cannot be read back is
    # refused the same way, never skipped.
    findings = []
    if compiled.unchecked:
        findings = [PolicyFinding("preprocessed", compiled.unchecked)]
    elif compiled.preprocessed is not None:
        findings = check_preprocessed(compiled.preprocessed)
    if findings:
        v.policy = findings
        first = findings[0]
        v.compile.output = f"{POLICY_WITHHELD}: {first.message}"
        v.compile.output_truncated = False
        book.finish("compile", StageState.FAILED, t, f"policy after macro expansion: {first.message}")
        msg = f"rejected by policy after macro expansion: {first.message}"
        book.stop("compile", OverallStatus.POLICY_REJECTED, "rejected by policy", chosen, msg)
        return None
    if not compiled.result.ok or compiled.library is None:
        tool = lang.toolchain
        why = f"{tool} timed out" if compiled.result.timed_out else f"{tool} exited with {compiled.result.returncode}"
        if lang.reason_in_log and not compiled.result.timed_out:
            why = _last_evaluator_line(compiled.result.output) or why
        why = compiled.why or why  # a limit hit or an output refused, in the evaluator's words
        book.finish("compile", StageState.FAILED, t, why)
        book.stop("compile", OverallStatus.COMPILE_ERROR, "compilation failed", chosen, why)
        return None
    book.finish("compile", StageState.PASSED, t, f"{compiled.result.seconds:.1f} s")
    return compiled


def sass_stage(
    compiled: CompiledKernel, task: Task, arch: str, build: Path, book: StageBook, jail: Jail, chosen: list[Workload]
) -> tuple[SassCounts, dict[str, list[KernelFootprint]]] | None:
    """Static SASS counts of the compiled candidate (every cubin of it counted) and each kernel's footprint; the
    disassembly is kept for audits with --workdir. Decides `arch` statically when no target instruction exists.
    None when the verdict stopped: cuobjdump (run in the compile sandbox) could not read what the build made."""
    t = time.monotonic()
    book.report("sass", "disassembling")
    assert compiled.library is not None  # compile_stage stops the verdict before a build without one
    binaries = compiled.cubins or [compiled.library]  # the library: every ELF file it holds, as it is loaded
    try:
        text = kept_or_made(compiled, "kernel.sass", lambda: "\n".join(disassemble(b, jail=jail) for b in binaries))
        if compiled.cubins:
            usage = resource_usage(binaries, jail=jail)
        else:
            kept = kept_or_made(compiled, "resource-usage.txt", lambda: dump_resource_usage(binaries[0], jail=jail))
            usage = merge_resource_usage([kept])
    except ToolFailed as exc:
        # A file the candidate's build made that the toolkit cannot read is that build's failure: a verdict.
        why = f"the compiled code was refused: {exc}"
        if book.verdict.compile is not None:  # the log the submitter reads says it too, as for other refusals
            book.verdict.compile.ok = False
            book.verdict.compile.output += f"\n[evaluator] {why}"
        book.finish("sass", StageState.FAILED, t, why)
        book.stop("sass", OverallStatus.COMPILE_ERROR, "compilation failed", chosen, why)
        return None
    # Into the trusted side's own folder, never the build folder (where a planted link would take the write).
    hostile_files.write_private(trusted_sass_path(compiled, build), text)
    target = task.targets.get(arch)
    counts = count_families(text, arch, target.families if target else None)
    if counts.target_count == 0:
        # Answered statically: no GPU needed to say the target instructions are absent.
        book.verdict.arch_check = ncu_mod.decide_arch(arch=arch, sass=counts, kernels=None, task_flops=None)
    summary = ", ".join(f"{f}={counts.families[f]}" for f in counts.target_families)
    book.finish("sass", StageState.PASSED, t, summary)
    return counts, usage


def trusted_sass_path(compiled: CompiledKernel, build: Path) -> Path:
    """Where the SASS stage keeps the listing: the compile's trusted folder (beside the build folder)."""
    return (compiled.trusted_dir or hostile_files.trusted_beside(build)) / "kernel.sass"


def kept_or_made(compiled: CompiledKernel, name: str, make: Callable[[], str]) -> str:
    """What `make` reads from the compiled library; for a CUDA compile with a compile-cache entry, the text kept
    there under `name` for the library's digest (made and kept on the entry's first evaluation). Triton
    compiles (several cubins, no entry) always make it."""
    entry, digest = compiled.cache_entry, compiled.result.library_sha256
    if entry is None or compiled.cubins or not digest:
        return make()
    if (kept := compile_cache.load_text(entry, name, digest)) is not None:
        return kept
    text = make()
    compile_cache.store_text(entry, name, digest, text)
    return text


def _last_evaluator_line(output: str) -> str:
    """The evaluator's own summary line of a failed Triton compile ("[evaluator] TypeError in run ...")."""
    lines = [x for x in output.splitlines() if x.startswith("[evaluator] ")]
    return lines[-1].removeprefix("[evaluator] ")[:300] if lines else ""
