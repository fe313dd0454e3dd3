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
