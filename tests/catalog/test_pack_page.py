"""The knowledge pack page: a table of contents, heading anchors, code highlighted on the server, raw HTML escaped."""

from __future__ import annotations

import pytest

from portal.catalog.models import KnowledgePack
from portal.core.templatetags.pack_tags import render_document
from tests.support.factories import sync_catalog

pytestmark = pytest.mark.django_db


def test_render_document_anchors_headings_highlights_code_and_escapes_html():
    html, headings = render_document(
        "# Pack\n\n## TMA <b>loads</b>\n\ntext <script>x()</script>\n\n### TMA <b>loads</b>\n\n"
        '```cuda\n__global__ void k() { asm("wgmma.fence;"); }\n```\n'
    )
    assert [(h.level, h.anchor) for h in headings] == [(2, "tma-b-loads-b"), (3, "tma-b-loads-b-2")]
    assert '<h2 id="tma-b-loads-b">TMA &lt;b&gt;loads&lt;/b&gt; <a class="headerlink" href="#tma-b-loads-b"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<div class="code"><pre>' in html and '<span class="kt">void</span>' in html


def test_pack_page_has_a_table_of_contents():
    from django.test import Client

    sync_catalog()
    pack = KnowledgePack.objects.exclude(text="").first()
    page = Client().get(f"/packs/{pack.slug}/").content.decode()
    assert 'id="pack-toc"' in page
    first = render_document(pack.text)[1][0]
    assert f'href="#{first.anchor}"' in page and f'id="{first.anchor}"' in page
