"""The kernel board's held rows sit behind a toggle that works without JavaScript: listed greyed with their reason
by default, left out of the table with `?held=hide` while the line above the board still counts them and links
back; each of the page's links keeps the other choices of the page."""

from __future__ import annotations

import html as htmllib
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
REASON = "inconsistent_figures: speedup disagrees with the latencies"


def _board(*, held_name: str = "held.cu"):
    """A verified row, a token row (behind "show all") and a held row with its reason."""
    sync_catalog()
    owner = lf.user("kim")
    lf.evaluation(owner=owner, name="fast.cu", speedup=1.2)
    lf.evaluation(owner=owner, name="token.cu", speedup=1.1, arch_status="token", full=False)
    lf.evaluation(owner=owner, name=held_name, speedup=1.05, review_state="held")
    from portal.submissions.models import Evaluation

    Evaluation.objects.filter(submission__name=held_name).update(review_reason=REASON)
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()


def _page(client, **params) -> str:
    response = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM, **params})
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def _line(page: str) -> str:
    """The line above the board."""
    return re.search(r'<p class="meta" id="board-toggle">(.*?)</p>', page, flags=re.S).group(1)


def _link(page: str, element_id: str) -> dict[str, list[str]]:
    href = re.search(rf'<a href="([^"]*)" id="{element_id}"', page).group(1)
    return parse_qs(urlsplit(htmllib.unescape(href)).query)


def _held_rows(page: str) -> list[str]:
    return re.findall(r'<tr class="[^"]*\bheld\b[^"]*"[^>]*>.*?</tr>', page, flags=re.S)


def test_held_rows_are_listed_greyed_with_their_reason_by_default(client):
    _board()
    page = _page(client)
    rows = _held_rows(page)
    assert len(rows) == 1 and "held.cu" in rows[0] and htmllib.escape(REASON) in rows[0]
    assert 'id="section-held"' in page
    line = _line(page)
    assert '<a href="#section-held" id="show-held">1 held for review</a>' in line
    # The toggle is on and points at the hidden view.
    assert re.search(r'id="toggle-held" class="toggle on" role="switch" aria-checked="true"', line)
    assert _link(page, "toggle-held")["held"] == ["hide"]


def test_with_the_toggle_the_held_rows_are_gone_and_the_line_counts_them_with_a_link_back(client):
    _board()
    _page(client)  # the default view rendered (and cached) first: the hidden view must not reuse it
    page = _page(client, held="hide")
    assert not _held_rows(page) and "held.cu" not in page and 'id="section-held"' not in page
    line = _line(page)
    assert "1 held for review, hidden from this table." in line and 'href="#section-held"' not in line
    assert re.search(r'id="toggle-held" class="toggle" role="switch" aria-checked="false"', line)
    back = _link(page, "toggle-held")
    assert "held" not in back and back["task"] == [GEMM] and back["arch"] == ["sm_90a"]
    # Following the link back shows them again.
    assert _held_rows(_page(client, **{k: v[0] for k, v in back.items()}))
    # The ranked rows are untouched.
    assert "fast.cu" in page


def test_the_toggle_and_the_other_links_keep_the_pages_other_choices(client):
    _board()
    params = {"gpu": "H200", "language": "cuda", "show": "all"}
    page = _page(client, **params)
    hide = _link(page, "toggle-held")
    assert hide == {"arch": ["sm_90a"], "task": [GEMM], "gpu": ["H200"], "language": ["cuda"],
                    "show": ["all"], "held": ["hide"]}  # fmt: skip

    hidden = _page(client, **params, held="hide")
    assert "token.cu" in hidden and "held.cu" not in hidden  # show=all kept, the held rows still hidden
    back = _link(hidden, "toggle-held")
    assert back == {k: [v] for k, v in {"arch": "sm_90a", "task": GEMM, **params}.items()}
    # Switching "show all" off keeps the held rows hidden, and switching it on again too.
    verified_only = _link(hidden, "show-verified")
    assert verified_only["held"] == ["hide"] and "show" not in verified_only
    narrow = _page(client, **{k: v[0] for k, v in verified_only.items()})
    assert "held.cu" not in narrow and _link(narrow, "show-all")["held"] == ["hide"]
    # The filter form keeps the choice when another task or GPU is picked.
    assert '<input type="hidden" name="held" value="hide">' in narrow
    assert 'name="held"' not in _page(client)


def test_the_downloads_keep_the_filters_and_their_held_list(client):
    """The CSV never had the held rows and the JSON lists them apart: hiding them on the page changes neither."""
    _board()
    page = _page(client, held="hide", show="all")
    assert not _held_rows(page) and "token.cu" in page
    links = re.search(r'<p class="downloads">(.*?)</p>', page, flags=re.S).group(1)
    hrefs = [htmllib.unescape(h) for h in re.findall(r'href="([^"]+)"', links)]
    assert hrefs and all("held=" not in h for h in hrefs)
    assert all(f"task={GEMM}" in h for h in hrefs)
    body = client.get(hrefs[1].replace("&download=1", "")).json()
    assert [r["name"] for r in body["held"]] == ["held.cu"]


def test_a_bad_toggle_value_is_a_clear_error_escaped(client):
    _board()
    response = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM, "held": PAYLOAD})
    assert response.status_code == 400
    page = response.content.decode()
    assert "<script>alert" not in page and "held must be" in page and "&lt;script&gt;" in page


def test_hostile_names_stay_escaped_with_the_held_rows_shown_and_hidden(client):
    _board(held_name=PAYLOAD)
    lf.evaluation(owner=lf.user("eve"), name=PAYLOAD + ".cu", speedup=1.3)
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    shown = _page(client)
    hidden = _page(client, **{k: v[0] for k, v in _link(shown, "toggle-held").items()})
    for page in (shown, hidden):
        assert "<script>alert" not in page and "<img src=x" not in page
        assert ESCAPED + ".cu" in page  # the ranked hostile row
    assert ESCAPED in "".join(_held_rows(shown)) and not _held_rows(hidden)
    assert "1 held for review, hidden" in _line(hidden)
