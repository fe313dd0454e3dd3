"""The words a newcomer meets are explained where they appear: a glossary page linked from the header and from
every badge, one word per thing on pages, the API and the CLI, and no issue numbers or source paths on a page."""

from __future__ import annotations

import csv
import io
import re

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

BADGE_WORDS = ("verified", "full", "token", "absent", "not_executed", "held", "ranked", "static-only", "synthetic")
# What a source path or an issue reference looks like in a page's text (file names a user runs or downloads,
# manage.py, kernel.py, the starter files, are not source paths).
INTERNALS = re.compile(
    r"\bissues? #?\d+|#\d{3,}\b|\b(?:portal|evaluator|tests|client|scripts)/[\w/]*|\b(?!manage\.py|starter\w*\.py|kernel\.py)\w+\.py\b"
)


def _text(html: str) -> str:
    """What a reader can see: the page's text and its tooltips (title attributes); scripts, styles and the other
    attribute values (hrefs, ids) dropped."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    titles = " ".join(re.findall(r'\btitle="([^"]*)"', html))
    return re.sub(r"<[^>]+>", " ", html) + " " + titles


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', html))


def _board_with_every_state():
    sync_catalog()
    owner = lf.user("kim")
    lf.evaluation(owner=owner, name="full.cu", speedup=1.2, arch_status="verified", full=True)
    lf.evaluation(owner=owner, name="token.cu", speedup=1.1, arch_status="token", full=False)
    lf.evaluation(owner=owner, name="absent.cu", speedup=0.5, arch_status="absent", full=False, tflops=20.0,
                  peak=0.02)  # fmt: skip
    held = lf.evaluation(owner=owner, name="held.cu", speedup=1.05)
    type(held).objects.filter(id=held.id).update(review_state="held", review_reason="inconsistent_figures: test")
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()


def test_the_glossary_is_a_page_linked_from_the_header_with_an_entry_for_every_badge_word(client):
    page = client.get("/glossary/")
    assert page.status_code == 200
    html = page.content.decode()
    anchors = _anchors(html)
    from portal.core.templatetags.portal_tags import glossary_url

    for word in BADGE_WORDS:
        url = glossary_url(word)
        assert url.startswith("/glossary/#") and url.split("#")[1] in anchors, word
    home = client.get("/").content.decode()
    assert 'href="/glossary/"' in home


def test_every_badge_on_the_kernel_board_links_to_its_word_in_the_glossary(client):
    _board_with_every_state()
    html = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM, "show": "all"}).content.decode()
    glossary = _anchors(client.get("/glossary/").content.decode())
    linked = re.findall(r'<a class="badge-link" href="/glossary/#([^"]+)"><span class="badge[^"]*"', html)
    assert {"full", "token", "absent", "held"} <= set(linked)
    assert set(linked) <= glossary
    # Every badge on the board is inside such a link: none is left unexplained.
    assert html.count('<span class="badge') == html.count('<a class="badge-link"'), "a badge without its link"
    held_row = re.search(r'<tr class="[^"]*\bheld\b[^"]*"[^>]*>.*?</tr>', html, flags=re.S)
    assert held_row and "inconsistent_figures: test" in held_row.group(0)
    verified_only = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM}).content.decode()
    assert '<a href="#section-held" id="show-held">1 held for review</a>' in verified_only
    assert 'id="section-held"' in verified_only


def test_no_page_names_an_issue_or_a_source_path(client):
    _board_with_every_state()
    for path in ("/", "/api/", "/glossary/", "/leaderboard/kernels/", f"/tasks/{GEMM}/", "/submit/", "/datasets/"):
        response = client.get(path, follow=True)
        assert response.status_code == 200, path
        found = INTERNALS.findall(_text(response.content.decode()))
        assert not found, (path, found[:5])


def test_the_task_page_says_baseline_and_names_each_tag_once(client):
    sync_catalog()
    html = client.get(f"/tasks/{GEMM}/").content.decode()
    assert "speedup reference" not in html and "speedup baseline" in html
    tags = re.search(r'<p class="meta" id="task-tags">(.*?)</p>', html, flags=re.S).group(1)
    words = re.findall(r'<span class="(?:badge|tag)">([^<]+)</span>', tags)
    assert words and len(words) == len(set(words)), words


def test_a_static_only_verdict_is_scored_without_a_gpu_in_a_neutral_tone_and_promises_no_ranked_check(client):
    sync_catalog()
    static = lf.evaluation(owner=lf.user("kim"), status="STATIC_ONLY", arch_status="not_requested", speedup=None)
    html = client.get(f"/submissions/{static.submission_id}/").content.decode()
    assert "scored without a GPU" in html
    phrase = re.search(r'<span class="badge ([^"]*)" id="verdict-phrase">', html).group(1)
    assert "bad" not in phrase.split()
    assert "runs once the evaluation passes" not in html
    assert '<a class="badge-link" href="/glossary/#static-only"><span class="badge " id="verdict-phrase">' in html
    passed = lf.evaluation(owner=lf.user("lee"), ranked_check="PASSED")
    page = client.get(f"/submissions/{passed.submission_id}/").content.decode()
    check = re.search(r'<p id="ranked-check"[^>]*>(.*?)</p>', page, flags=re.S).group(1)
    assert "passed passed" not in " ".join(_text(check).split()) and "eligible to rank" in check
    body = client.get(f"/api/v1/submissions/{static.submission_id}").json()
    assert body["ranked_check"]["state"] == "needs_gpu"


def test_the_submit_form_says_uploads_are_public(client):
    sync_catalog()
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("kim", password="x-unused-password-123"))
    html = client.get("/submit/").content.decode()
    assert 'id="public-notice"' in html and "public once evaluated" in html


def test_the_413_page_knows_who_is_logged_in(client, settings):
    from django.contrib.auth.models import User

    settings.MAX_REQUEST_BYTES = 1024
    client.force_login(User.objects.create_user("kim", password="x-unused-password-123"))
    response = client.post("/submit/", data=b"x" * 4096, content_type="application/octet-stream")
    assert response.status_code == 413
    html = response.content.decode()
    assert "Log out kim" in html and ">Log in<" not in html


def test_the_boards_csv_link_downloads_the_canonical_names(client):
    _board_with_every_state()
    html = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM}).content.decode()
    href = re.search(r'<a href="([^"]+)">CSV</a>', html).group(1).replace("&amp;", "&")
    header = next(csv.reader(io.StringIO(client.get(href).content.decode())))
    assert "speedup_factor" in header and "speedup" not in header


def test_every_data_link_on_the_boards_and_compare_asks_for_the_current_version(client):
    _board_with_every_state()
    lf.standard_runs()
    pages = ["/leaderboard/?arch=sm_90a", f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}", "/compare/"]
    for path in pages:
        html = client.get(path).content.decode().replace("&amp;", "&")
        links = re.findall(r'href="([^"]*(?:format=(?:csv|json)|download=1|/api/v\d/leaderboard/charts/)[^"]*)"', html)
        assert links, path
        for link in links:  # the current version: its path, or (a page's own JSON) no version asked, so the default
            assert "/api/v1/" not in link and not re.search(r"[?&]v=1(&|$)", link), (path, link)
            assert link.startswith("/api/v2/") or not link.startswith("/api/"), (path, link)
