"""Pure: the user message a model gets after each turn, built from the evaluator's verdict document.

It says, in this order: the overall status; policy findings; compile errors with the compiler's own lines;
per workload the status with error figures or speed and latencies; the static and dynamic instruction
report ("wgmma present but never executed", "no TMA found"); and a closing line telling the model what to do.
"""

from __future__ import annotations

import re
from typing import Any

COMPILE_LINES = 60
COMPILE_CHARS = 6000
_BUILD_PATH = re.compile(r"(/[\w.\-]+)+/(kernel\.cu)")

FAMILY_NAMES = {
    "gmma": "wgmma (HGMMA/QGMMA/IGMMA in SASS)",
    "tma": "TMA (UTMALDG/UTMASTG in SASS)",
    "tcgen05": "tcgen05 (UTC*/LDTM/STTM in SASS)",
}
SHORT_NAMES = {"gmma": "wgmma", "tma": "TMA", "tcgen05": "tcgen05"}

NO_KERNEL = (
    "Your reply contained no kernel: I look for the last fenced code block (```cuda ... ```) holding a complete "
    ".cu file that exports `run` with TVM_FFI_DLL_EXPORT_TYPED_FUNC. Nothing was evaluated this turn. "
    "Please answer with the complete kernel file in one ```cuda block."
)
TRUNCATED = (
    "Your reply ended inside a code block (it was probably cut off at the output token limit), so no kernel "
    "was evaluated this turn. Please answer with a shorter, complete kernel file in one ```cuda block."
)


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


def _workload_line(w: dict[str, Any]) -> str:
    axes = ", ".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items()) or w.get("uuid", "?")
    status = w.get("status", "?")
    line = f"- {axes}: {status}"
    perf = w.get("performance") or {}
    corr = w.get("correctness") or {}
    if status == "PASSED":
        if perf.get("speedup_factor") is not None:
            line += (
                f", {_fmt(perf.get('speedup_factor'), '.2f')}x vs {perf.get('baseline') or 'the library baseline'}"
                f" ({_fmt(perf.get('latency_ms'))} ms vs {_fmt(perf.get('reference_latency_ms'))} ms)"
            )
    elif status.startswith("INCORRECT") and corr:
        line += (
            f": max abs error {_fmt(corr.get('max_absolute_error'), '.4g')}, max rel error "
            f"{_fmt(corr.get('max_relative_error'), '.4g')}, {corr.get('failing_elements', 0)} of "
            f"{corr.get('total_elements', 0)} elements outside tolerance"
        )
        if corr.get("nan_count") or corr.get("inf_count"):
            line += f", {corr.get('nan_count', 0)} NaN, {corr.get('inf_count', 0)} Inf"
        if corr.get("inputs_modified"):
            line += f"; inputs modified: {', '.join(corr['inputs_modified'])}"
    if w.get("message") and status not in ("PASSED", "COMPILE_ERROR"):
        line += f" — {str(w['message'])[:500]}"
    if status == "RUNTIME_ERROR" and w.get("stderr_tail"):
        line += "\n  stderr: " + str(w["stderr_tail"])[-800:].replace("\n", "\n  ")
    return line


def instruction_report(verdict: dict[str, Any]) -> list[str]:
    arch = verdict.get("arch_check") or {}
    sass = verdict.get("sass") or {}
    targets = list(sass.get("target_families") or arch.get("families") or [])
    static = sass.get("families") or {}
    dynamic = arch.get("families") or {}
    status = arch.get("status", "")
    lines: list[str] = []
    for family in targets:
        name = SHORT_NAMES.get(family, family)
        count = static.get(family, (dynamic.get(family) or {}).get("static", 0)) or 0
        if not count:
            lines.append(f"- no {name} found: the SASS has no {FAMILY_NAMES.get(family, family)} instruction")
            continue
        run = dynamic.get(family)
        if run is None or status in ("not_requested", "profile_error", ""):
            lines.append(f"- {name} present: {count} instructions in the SASS (execution not measured)")
        elif not run.get("predicated_on"):
            lines.append(f"- {name} present ({count} in the SASS) but never executed on the profiled workload")
        else:
            lines.append(
                f"- {name} present ({count} in the SASS) and executed: {run.get('predicated_on')} "
                "predicated-on thread instructions"
            )
    if status == "token":
        share = arch.get("tensor_core_share")
        lines.append(
            f"- the tensor cores did only {_fmt(share * 100 if share is not None else None, '.1f')}% of the task's "
            "FLOPs: the target instructions are used as a token, not to do the work"
        )
    if status == "verified":
        lines.append("- architecture check: verified (the target instructions do the work)")
    elif arch.get("reason"):
        lines.append(f"- architecture check: {status}: {arch['reason']}")
    return lines


def closing_line(status: str, arch_status: str, speedup: float | None, target: float) -> str:
    if status == "PASSED":
        if speedup is not None and speedup >= target:
            return f"Target reached: correct, {speedup:.2f}x vs the library (target {target:g}x)."
        speed = f"{speedup:.2f}x" if speedup is not None else "an unmeasured speed"
        note = "" if arch_status == "verified" else " Make sure the architecture's target instructions do the work."
        return f"Correct, at {speed} vs the library (target {target:g}x): keep optimizing.{note}"
    if status == "STATIC_ONLY":
        return (
            "It compiles; correctness and speed were not measured on this evaluator host. "
            "Keep the kernel correct and make the target instructions do the work."
        )
    return "Please fix the kernel and answer with the complete file."


def verdict_feedback(verdict: dict[str, Any], *, speedup: float | None, target_speedup: float) -> str:
    status = str(verdict.get("status", "?"))
    parts: list[str] = [f"Evaluation result: {status}."]
    policy = verdict.get("policy") or []
    if policy:
        parts.append("Policy findings (the source was rejected before compiling):")
        for finding in policy[:20]:
            where = f" (line {finding['line']})" if finding.get("line") else ""
            text = f": `{finding['text']}`" if finding.get("text") else ""
            parts.append(f"- {finding.get('rule', '?')}{where}: {finding.get('message', '')}{text}")
    compile_result = verdict.get("compile") or {}
    if compile_result and not compile_result.get("ok", True):
        if compile_result.get("timed_out"):
            parts.append("Compilation ran past the time limit and was stopped.")
        parts.append("Compiler output:\n```\n" + compiler_excerpt(compile_result.get("output", "")) + "\n```")
    workloads = verdict.get("workloads") or []
    if workloads and status not in ("COMPILE_ERROR", "POLICY_REJECTED"):
        parts.append("Workloads:")
        parts.extend(_workload_line(w) for w in workloads)
    if status not in ("COMPILE_ERROR", "POLICY_REJECTED"):
        report = instruction_report(verdict)
        if report:
            parts.append(f"Instructions for {verdict.get('arch', 'the target architecture')}:")
            parts.extend(report)
    holds = [h for h in (verdict.get("integrity") or {}).get("holds") or [] if isinstance(h, dict)]
    if holds:
        parts.append("Held for review (not ranked), because the evaluator's own measurements disagreed:")
        parts.extend(f"- {h.get('code', 'hold')}: {str(h.get('message', ''))[:500]}" for h in holds)
    arch_status = str((verdict.get("arch_check") or {}).get("status", ""))
    parts.append(closing_line(status, arch_status, speedup, target_speedup))
    return "\n".join(parts)


def infrastructure_feedback(reason: str) -> str:
    return (
        "The evaluation of this kernel failed for reasons of the evaluation infrastructure, not of the kernel: "
        f"{reason[:500]}"
    )
