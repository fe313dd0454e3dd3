"""Pure: what a model is told. The conversation's opening messages (system: the language's rules, the knowledge
pack and the ABI starter; first user message: the task definition with its `run` signature) and how to answer when
a reply held no kernel. What differs between kernel languages (the rules, code block info strings, how `run` is
named) comes from the languages registry."""

from __future__ import annotations

from typing import Any

from evaluator.languages import DEFAULT_LANGUAGE, LANGUAGES, Language, Prompting, language


def prompted_languages() -> list[Language]:
    """The registered languages models may be asked to write, in the registry's order."""
    return [lang for lang in LANGUAGES.values() if lang.prompting is not None]


def prompted_language(name: str) -> tuple[Language, Prompting]:
    """The registered language of that name and how a model is told to write it; ValueError when models are not
    asked to write it (unknown, or registered without prompt wording)."""
    lang = language(name)
    if lang.prompting is None:
        raise ValueError(f"models are not asked to write {lang.display_name}")
    return lang, lang.prompting


def system_prompt(*, arch: str, pack_text: str, starter: str, language: str = DEFAULT_LANGUAGE.name) -> str:
    lang, prompting = prompted_language(language)
    parts = [prompting.rules.strip(), f"Target architecture: {arch}."]
    if pack_text.strip():
        parts.append("# Knowledge pack\n\n" + pack_text.strip())
    if starter.strip():
        parts.append(
            "# ABI starter\n\nA minimal correct kernel file for this task (slow; it shows the ABI, not the method):\n\n"
            f"```{lang.fence}\n{starter.strip()}\n```"
        )
    return "\n\n".join(parts) + "\n"


def no_kernel(language: str = DEFAULT_LANGUAGE.name) -> str:
    """What a model is told when its reply holds no kernel, in the words of the run's language."""
    lang, prompting = prompted_language(language)
    return (
        f"Your reply contained no kernel: I look for the last fenced code block (```{lang.fence} ... ```) holding "
        f"{prompting.kernel_file}. Nothing was evaluated this turn. Please answer with {prompting.answer} in one "
        f"```{lang.fence} block."
    )


def truncated(language: str = DEFAULT_LANGUAGE.name) -> str:
    """What a model is told when its reply ended inside what would have been the kernel."""
    lang, prompting = prompted_language(language)
    return (
        "Your reply ended inside a code block (it was probably cut off at the output token limit), so no kernel "
        f"was evaluated this turn. Please answer with a shorter version of {prompting.answer} in one "
        f"```{lang.fence} block."
    )


def _shape(spec: dict[str, Any]) -> str:
    dims = spec.get("shape")
    return "scalar" if dims is None else "[" + ", ".join(str(d) for d in dims) + "]"


def task_message(
    *,
    name: str,
    description: str,
    definition: dict[str, Any],
    workloads: list[dict[str, Any]],
    run_signature: str,
    families: list[str],
    arch: str,
    language: str = DEFAULT_LANGUAGE.name,
) -> str:
    lang, prompting = prompted_language(language)
    lines = [f"# Task: {name}", "", description.strip(), ""]
    lines += ["## Signature", "", "| name | role | shape | dtype | description |", "| --- | --- | --- | --- | --- |"]
    for role, key in (("input", "inputs"), ("output", "outputs")):
        for tensor, spec in (definition.get(key) or {}).items():
            lines.append(
                f"| {tensor} | {role} | {_shape(spec)} | {spec.get('dtype', '')} | {spec.get('description', '')} |"
            )
    lines += ["", "## Axes", ""]
    for axis, spec in (definition.get("axes") or {}).items():
        value = f" = {spec['value']}" if spec.get("type") == "const" else " (varies by workload)"
        note = f": {spec['description']}" if spec.get("description") else ""
        lines.append(f"- {axis}{value}{note}")
    lines += ["", "## Workloads (every one is checked for correctness)", ""]
    for w in workloads:
        axes = ", ".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items())
        lines.append(
            f"- {axes}" + (" (headline: instructions and speed are measured here)" if w.get("headline") else "")
        )
    reference = definition.get("reference")
    if reference:
        lines += ["", "## PyTorch reference", "", "```python", str(reference).strip(), "```"]
    lines += [
        "",
        f"## The function your file must {prompting.signature_verb}",
        "",
        f"```{lang.signature_fence}",
        run_signature.strip(),
        "```",
        "",
        f"Target architecture {arch}: the instructions that count are {', '.join(families) or 'none listed'}.",
        f"Answer with {prompting.answer} in one ```{lang.fence} block.",
    ]
    return "\n".join(lines) + "\n"
