"""Knowledge packs (and other long Markdown) as pages: heading anchors, a table of contents, code highlighted by
Pygments on the server. Raw HTML in the Markdown stays escaped (markdown-it with html=False); every heading
text and code token is escaped by markdown-it or Pygments before `mark_safe`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

register = template.Library()


@dataclass(frozen=True)
class Heading:
    level: int
    text: str  # plain text (escaped on output)
    anchor: str


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name((lang or "text").strip().split()[0] or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return pygments_highlight(code, lexer, HtmlFormatter(cssclass="code"))


def heading_anchor(text: str) -> str:
    """The id a heading with this text gets (the first of that text on its page)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def _slug(text: str, taken: set[str]) -> str:
    base = heading_anchor(text)
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def render_document(text: str) -> tuple[SafeString, list[Heading]]:
    """The Markdown as HTML with an id and a ¶ link on every heading, and the h2/h3 headings for a contents list."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight}).enable("table")
    tokens = md.parse(text or "")
    taken: set[str] = set()
    headings: list[Heading] = []
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[i + 1]
        plain = (
            "".join(c.content for c in (inline.children or []) if c.type in ("text", "code_inline")) or inline.content
        )
        anchor = _slug(plain, taken)
        token.attrSet("id", anchor)
        level = int(token.tag[1])
        if level in (2, 3):
            headings.append(Heading(level, plain, anchor))
        link = inline.children[-1].__class__  # a Token, to append the ¶ link inside the heading
        anchor_token = link("html_inline", "", 0)
        anchor_token.content = (
            f' <a class="headerlink" href="#{escape(anchor)}" aria-label="link to this section">¶</a>'
        )
        inline.children.append(anchor_token)
    html = md.renderer.render(tokens, md.options, {})
    return mark_safe(html), headings  # noqa: S308 - markdown-it (html=False) and Pygments escaped everything


@register.simple_tag
def markdown_document(text: str) -> dict:
    """{% markdown_document pack.text as doc %} -> doc.html, doc.headings"""
    html, headings = render_document(text)
    return {"html": html, "headings": headings}
