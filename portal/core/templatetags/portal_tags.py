"""Template helpers. Anything user- or model-supplied passes through Pygments or Django's escaping;
the only `mark_safe` calls wrap HTML that those escapers produced."""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from evaluator.both_sides.verdict import ArchStatus, OverallStatus, Status, WorkloadResult
from portal.core import numbers, verdicts
from portal.core.numbers import significant

register = template.Library()

# html=False: raw HTML inside Markdown is escaped, never passed through.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


@register.filter
def highlight(code: str, language: str = "cuda") -> str:
    """Syntax-highlight `code` on the server. Pygments escapes every token it emits."""
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    html = pygments_highlight(code or "", lexer, HtmlFormatter(cssclass="code", nowrap=False))
    return mark_safe(html)  # noqa: S308 - Pygments output, all text escaped


@register.filter
def markdown(text: str) -> str:
    """Render trusted-format Markdown with raw HTML disabled (escaped), for knowledge packs and docs."""
    return mark_safe(_markdown.render(text or ""))  # noqa: S308 - markdown-it with html=False escapes input


@register.filter
def shape(spec: dict) -> str:
    dims = spec.get("shape")
    return "scalar" if dims is None else "[" + ", ".join(dims) + "]"


@register.filter
def axes_text(axes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in (axes or {}).items())


def _verdict_parts(obj) -> tuple[str, str, bool, str]:
    """(status, arch_status, arch_full, arch) of an Evaluation, a KernelRow or a dict with those keys."""
    get = obj.get if isinstance(obj, dict) else lambda name, default=None: getattr(obj, name, default)
    arch = get("arch", "") or getattr(get("submission", None), "arch", "") or ""
    return get("status", "") or "", get("arch_status", "") or "", bool(get("arch_full", False)), arch


@register.filter
def verdict_phrase(obj) -> str:
    """The one combined verdict phrase ("correct, but wgmma/TMA never executed"); see verdicts.verdict_phrase."""
    return verdicts.verdict_phrase(*_verdict_parts(obj))


@register.filter
def verdict_tone(obj) -> str:
    """Badge class for the phrase: ok (correct and verified), warn (correct, not verified), bad (incorrect)."""
    status, arch_status, _, _ = _verdict_parts(obj)
    return verdicts.verdict_tone(status, arch_status)


@register.filter
def arch_state(arch_status: str) -> str:
    """The one vocabulary word for an architecture state (an empty status reads as not_requested)."""
    return verdicts.arch_state(arch_status)


@register.filter
def human_count(value) -> str:
    """1234567 -> 1.2M (token counts)."""
    return numbers.human_count(value)


@register.simple_tag
def status_badge(word: str) -> str:
    """A row's status in the one vocabulary of verdicts.ROW_STATUS ("ranked", "held", "static-only", "synthetic"),
    as a badge whose title says what the word means, linked to the word in the glossary. format_html escapes
    every part."""
    from django.utils.html import format_html

    return format_html(
        '<a class="badge-link" href="{}"><span class="badge status status-{}" title="{}">{}</span></a>',
        glossary_url(word),
        word,
        verdicts.ROW_STATUS.get(word, ""),
        word,
    )


@register.filter
def glossary_url(word: str) -> str:
    """The glossary's entry for a word ("verified", "not_executed", "held"): its heading's anchor on /glossary/."""
    from django.urls import reverse

    from portal.core.templatetags.pack_tags import heading_anchor

    return f"{reverse('glossary')}#{heading_anchor(str(word or ''))}"


@register.filter
def arch_glossary_url(obj) -> str:
    """The glossary entry of a row's instruction-check badge: `full` for verified · full, else the state."""
    _, arch_status, arch_full, _ = _verdict_parts(obj)
    state = verdicts.arch_state(arch_status)
    return glossary_url("full" if state == ArchStatus.VERIFIED and arch_full else state)


@register.filter
def verdict_glossary_url(obj) -> str:
    """The glossary entry of a verdict phrase's badge: the instruction check's word for a correct kernel,
    static-only for one scored without a GPU, the verdict's statuses otherwise."""
    status = _verdict_parts(obj)[0]
    if status == OverallStatus.PASSED:
        return arch_glossary_url(obj)
    return glossary_url("static-only" if status == OverallStatus.STATIC_ONLY else "verdict")


@register.filter
def datasheet_peak(obj) -> str:
    """The denominator of an evaluation's "of peak" as its verdict used it (the GPU's dense peak for the task's
    dtype), "989.4 TFLOP/s": read back from the verdict's own two figures, never looked up again."""
    from portal.core.serializers import peak_denominator

    peak = peak_denominator(getattr(obj, "tflops", None), getattr(obj, "fraction_of_peak", None))
    return f"{peak:.5g} TFLOP/s" if peak else "unknown"


@register.filter
def sig(value, digits: int = 3) -> str:
    """A number for reading: `digits` significant digits (1.11, 0.910, 523; 3 unless given), "—" for None. Pages
    format with this; exports carry the raw values."""
    return significant(value, int(digits))


@register.filter
def error_vs_tolerance(workload) -> str:
    """A workload's error in words, against its tolerance. On a passing workload the element-wise maximum relative
    error is noise (an element near zero makes it 15258.8 on a kernel within every bound): it is left out there and
    the norm error is given against its bound; a failing one shows how many elements were outside tolerance."""
    record = workload if isinstance(workload, WorkloadResult) else None  # a workload of a typed verdict
    c = record.correctness if record is not None else None
    if c is None:
        return "—"
    norm, bound = c.relative_norm_error, c.relative_norm_bound
    against = ""
    if isinstance(norm, int | float) and isinstance(bound, int | float) and bound > 0:
        against = f"norm error {significant(norm)} = {significant(100 * norm / bound, 2)}% of its bound {bound:g}"
    if record.status == Status.PASSED:
        return f"within tolerance ({against})" if against else "within tolerance"
    parts = []
    failing, total = c.failing_elements, c.total_elements
    if isinstance(failing, int) and isinstance(total, int) and total:
        parts.append(f"{failing} of {total} elements outside tolerance")
    for count, label in ((c.nan_count, "NaN"), (c.inf_count, "inf")):
        if count:
            parts.append(f"{count} {label}")
    if against:
        parts.append(against)
    for value, label in ((c.max_absolute_error, "max abs error"), (c.max_relative_error, "max rel error")):
        if isinstance(value, int | float):
            parts.append(f"{label} {significant(value)}")
    return "; ".join(parts) or "—"


@register.filter
def percent(value) -> str:
    """0.6667 -> 67%; None -> —."""
    return "—" if value is None else f"{100 * value:.0f}%"
