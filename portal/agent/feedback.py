"""Pure: the user message a model gets after each turn, built from the evaluator's verdict (typed records).

It says, in this order: the overall status; policy findings; compile errors with the compiler's own lines;
per workload the status with error figures or speed and latencies; the static and dynamic instruction
report ("wgmma present but never executed", "no TMA found"); and a closing line telling the model what to do.
"""

from __future__ import annotations

import re

from evaluator.both_sides.verdict import ArchStatus, OverallStatus, Status, Verdict, WorkloadResult

COMPILE_LINES = 60
COMPILE_CHARS = 6000
_BUILD_PATH = re.compile(r"(/[\w.\-]+)+/(kernel\.cu)")

FAMILY_NAMES = {
    "gmma": "wgmma (HGMMA/QGMMA/IGMMA in SASS)",
    "tma": "TMA (UTMALDG/UTMASTG in SASS)",
    "tcgen05": "tcgen05 (UTC*/LDTM/STTM in SASS)",
}
SHORT_NAMES = {"gmma": "wgmma", "tma": "TMA", "tcgen05": "tcgen05"}


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "?" if value is None else format(value, spec)


def compiler_excerpt(output: str) -> str:
    """The compiler lines that matter: every error/warning line with the two after it (nvcc prints the
    offending source and a caret there), with build-directory paths shortened to kernel.cu."""
    lines = [_BUILD_PATH.sub(r"\2", line.rstrip()) for line in (output or "").splitlines()]
    lines = [line for line in lines if not line.startswith("ptxas info")]
    keep: list[int] = []
    for i, line in enumerate(lines):
        if re.search(r"\b(error|warning|fatal)\b", line, re.IGNORECASE):
            keep.extend(range(i, min(i + 3, len(lines))))
    chosen = sorted(set(keep)) or list(range(min(len(lines), COMPILE_LINES)))
    text = "\n".join(lines[i] for i in chosen[:COMPILE_LINES])
    if len(chosen) > COMPILE_LINES or len(text) > COMPILE_CHARS:
        text = text[:COMPILE_CHARS] + "\n[... compiler output truncated]"
    return text


_INCORRECT = (Status.INCORRECT_SHAPE, Status.INCORRECT_DTYPE, Status.INCORRECT_NUMERICAL)
_NOT_MEASURED = (ArchStatus.NOT_REQUESTED, ArchStatus.PROFILE_ERROR, "")
_NOTHING_RAN = (OverallStatus.COMPILE_ERROR, OverallStatus.POLICY_REJECTED)


def _workload_line(w: WorkloadResult) -> str:
    axes = ", ".join(f"{k}={v}" for k, v in (w.axes or {}).items()) or w.uuid or "?"
    status = w.status
    line = f"- {axes}: {status}"
    perf = w.performance
    corr = w.correctness
    if status == Status.PASSED:
        if perf is not None and perf.speedup_factor is not None:
            line += (
                f", {_fmt(perf.speedup_factor, '.2f')}x vs {perf.baseline or 'the library baseline'}"
                f" ({_fmt(perf.latency_ms)} ms vs {_fmt(perf.baseline_latency_ms)} ms)"
            )
    elif status in _INCORRECT and corr is not None:
        line += (
            f": max abs error {_fmt(corr.max_absolute_error, '.4g')}, max rel error "
            f"{_fmt(corr.max_relative_error, '.4g')}, {corr.failing_elements} of "
            f"{corr.total_elements} elements outside tolerance"
        )
        if corr.nan_count or corr.inf_count:
            line += f", {corr.nan_count} NaN, {corr.inf_count} Inf"
        if corr.inputs_modified:
            line += f"; inputs modified: {', '.join(corr.inputs_modified)}"
    if w.message and status not in (Status.PASSED, Status.COMPILE_ERROR):
        line += f" — {str(w.message)[:500]}"
    if status == Status.RUNTIME_ERROR and w.stderr_tail:
        line += "\n  stderr: " + str(w.stderr_tail)[-800:].replace("\n", "\n  ")
    return line


def instruction_report(verdict: Verdict) -> list[str]:
    arch = verdict.arch_check
    sass = verdict.sass
    dynamic = (arch.families if arch else None) or {}
    targets = list((sass.target_families if sass else None) or dynamic or [])
    static = (sass.families if sass else None) or {}
    status = arch.status if arch else ""
    lines: list[str] = []
    for family in targets:
        name = SHORT_NAMES.get(family, family)
        run = dynamic.get(family)
        count = static.get(family, run.static if run is not None else 0) or 0
        if not count:
            lines.append(f"- no {name} found: the SASS has no {FAMILY_NAMES.get(family, family)} instruction")
            continue
        if run is None or status in _NOT_MEASURED:
            lines.append(f"- {name} present: {count} instructions in the SASS (execution not measured)")
        elif not run.predicated_on:
            lines.append(f"- {name} present ({count} in the SASS) but never executed on the profiled workload")
        else:
            lines.append(
                f"- {name} present ({count} in the SASS) and executed: {run.predicated_on} "
                "predicated-on thread instructions"
            )
    if status == ArchStatus.TOKEN:
        share = arch.tensor_core_share
        lines.append(
            f"- the tensor cores did only {_fmt(share * 100 if share is not None else None, '.1f')}% of the task's "
            "FLOPs: the target instructions are used as a token, not to do the work"
        )
    if status == ArchStatus.VERIFIED:
        lines.append("- architecture check: verified (the target instructions do the work)")
    elif arch and arch.reason:
        lines.append(f"- architecture check: {status}: {arch.reason}")
    return lines


def closing_line(status: str, arch_status: str, speedup: float | None, target: float) -> str:
    if status == OverallStatus.PASSED:
        if speedup is not None and speedup >= target:
            return f"Target reached: correct, {speedup:.2f}x vs the library (target {target:g}x)."
        speed = f"{speedup:.2f}x" if speedup is not None else "an unmeasured speed"
        note = (
            ""
            if arch_status == ArchStatus.VERIFIED
            else " Make sure the architecture's target instructions do the work."
        )
        return f"Correct, at {speed} vs the library (target {target:g}x): keep optimizing.{note}"
    if status == OverallStatus.STATIC_ONLY:
        return (
            "It compiles; correctness and speed were not measured on this evaluator host. "
            "Keep the kernel correct and make the target instructions do the work."
        )
    return "Please fix the kernel and answer with the complete file."


def verdict_feedback(record: Verdict | None, *, speedup: float | None, target_speedup: float) -> str:
    """The feedback for a verdict (the typed record, portal/core/verdict_record.py); None: no readable verdict."""
    if record is None:
        return "\n".join(["Evaluation result: ?.", closing_line("?", "", speedup, target_speedup)])
    status = record.status.value
    parts: list[str] = [f"Evaluation result: {status}."]
    if record.policy:
        parts.append("Policy findings (the source was rejected before compiling):")
        for finding in record.policy[:20]:
            where = f" (line {finding.line})" if finding.line else ""
            text = f": `{finding.text}`" if finding.text else ""
            parts.append(f"- {finding.rule or '?'}{where}: {finding.message}{text}")
    compiled = record.compile
    if compiled is not None and not compiled.ok:
        if compiled.timed_out:
            parts.append("Compilation ran past the time limit and was stopped.")
        parts.append("Compiler output:\n```\n" + compiler_excerpt(compiled.output or "") + "\n```")
    if record.workloads and status not in _NOTHING_RAN:
        parts.append("Workloads:")
        parts.extend(_workload_line(w) for w in record.workloads)
    if status not in _NOTHING_RAN:
        report = instruction_report(record)
        if report:
            parts.append(f"Instructions for {record.arch or 'the target architecture'}:")
            parts.extend(report)
    holds = record.integrity.holds if record.integrity else []
    if holds:
        parts.append("Held for review (not ranked), because the evaluator's own measurements disagreed:")
        parts.extend(f"- {h.code or 'hold'}: {str(h.message or '')[:500]}" for h in holds)
    arch_status = record.arch_check.status.value if record.arch_check else ""
    parts.append(closing_line(status, arch_status, speedup, target_speedup))
    return "\n".join(parts)


def infrastructure_feedback(reason: str) -> str:
    return (
        "The evaluation of this kernel failed for reasons of the evaluation infrastructure, not of the kernel: "
        f"{reason[:500]}"
    )
