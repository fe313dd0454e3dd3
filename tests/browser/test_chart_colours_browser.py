"""Charts as a visitor's Chromium draws them, at 1400 and 390 px: on every chart page no two series of different
models share a colour and a model has one colour on every chart (boards and /compare/); the compare chart has
every turn limit on its x axis in the boards' look; and the plotly.js a page loads, served as `make run` serves it,
is the small bundle under a hashed name with a year's immutable cache."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from django.core.management import call_command

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The demo board's eight models: a hash of the name once drew Llama-4-Maverick and Qwen3-Coder both red, and
# gpt-oss-120b, Kimi-K2 both blue.
MODELS = ["deepseek-ai/DeepSeek-V3.2", "Qwen/Qwen3-Coder-480B-A35B", "moonshotai/Kimi-K2-Instruct",
          "openai/gpt-oss-120b", "zai-org/GLM-4.6", "meta-llama/Llama-4-Maverick", "mistralai/Devstral-2",
          "MiniMaxAI/MiniMax-M2"]  # fmt: skip
TURNS = 5  # the longest trajectory: the curves run over turn limits 1..5
COMPARE = f"/compare/?kind=models&a={MODELS[5]}&b={MODELS[1]}&arch=sm_90a&k=8"
PAGES = ["/leaderboard/?arch=sm_90a&k=8", f"/leaderboard/?arch=sm_90a&task={GEMM}&k=8", f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}",
         COMPARE]  # fmt: skip

# Per chart on the page: each series' model (its legend group, else its name before " · measure"), the colours plotly drew it in (its
# full data, after defaults and the colorway), the x axis' tick labels and the plot's background.
_SERIES = """() => Array.from(document.querySelectorAll('.chart[data-drawn="1"]')).map(el => ({
  chart: el.id,
  series: (el._fullData || []).filter(t => t.visible !== false).map(t => ({
    name: String(t.legendgroup || t.name || '').split(' · ')[0],  // a phone shortens names, not groups
    colours: [(t.line || {}).color, (t.marker || {}).color].filter(c => typeof c === 'string'),
  })),
  ticks: Array.from(el.querySelectorAll('.xtick text')).map(t => t.textContent),
  background: (el._fullLayout || {}).plot_bgcolor,
}))"""


def _data():
    from tests.support.factories import sync_catalog

    sync_catalog()
    ok, fail = ("PASSED", "verified", 1.3, 400), ("COMPILE_ERROR", "", None, 250)
    for i, name in enumerate(MODELS):
        run = lf.model_run(lf.user(f"user{i}"), model=name)
        lf.metrics(run, GEMM, 8, 2, 1, 1, 1.0 + i / 10, 500)
        lf.metrics(run, MHA, 8, 2, 1, 0, 0.8 + i / 20, 500)
        lf.turns(run, GEMM, [[fail] * (i % TURNS) + [ok], [fail, ("PASSED", "", 1.1 + i / 10, 300)]])
        lf.turns(run, MHA, [[fail] * (TURNS - 1) + [("PASSED", "verified", 0.9, 300)]])
    kim = lf.user("kim")
    for speedup in (0.8, 1.1, 1.3):
        lf.evaluation(owner=kim, speedup=speedup)


def _charts(page, url: str) -> list[dict]:
    page.goto(url)
    page.wait_for_load_state("load")
    expected = page.locator(".chart[data-figure]").count()
    page.wait_for_function(f"() => document.querySelectorAll('.chart[data-drawn=\"1\"]').length >= {expected}")
    return page.evaluate(_SERIES)


def _shared_colours(chart: dict) -> list[str]:
    """Differently named series of one chart drawn in one colour (fewer models here than palette colours)."""
    owner: dict[str, str] = {}
    faults = []
    for s in chart["series"]:
        for colour in {c.lower() for c in s["colours"]}:
            if owner.setdefault(colour, s["name"]) != s["name"]:
                faults.append(f"{chart['chart']}: {owner[colour]} and {s['name']} both {colour}")
    return faults


@pytest.mark.parametrize("width", [1400, 390])
def test_no_two_models_share_a_colour_and_each_keeps_one_everywhere(live_server, width):
    """Catches colours from a hash of the name (two pairs of the demo's models each one colour), colours from a
    chart's own series order, and /compare/ colouring by the label people see where the boards use the model id."""
    _data()
    faults: list[str] = []
    colour_of: dict[str, set[str]] = {}
    with chromium_page() as page:
        page.set_viewport_size({"width": width, "height": 900})
        for path in PAGES:
            charts = _charts(page, live_server.url + path)
            assert charts, path
            for chart in charts:
                faults += _shared_colours(chart)
                for s in chart["series"]:
                    if s["name"] in MODELS:
                        colour_of.setdefault(s["name"], set()).update(c.lower() for c in s["colours"])
        assert page.errors == []
    assert faults == []
    assert set(colour_of) == set(MODELS)
    assert {m: c for m, c in colour_of.items() if len(c) != 1} == {}  # one colour per model, every page


@pytest.mark.parametrize("width", [1400, 390])
def test_the_compare_chart_has_every_turn_limit_in_the_boards_look(live_server, width):
    """Catches the compare chart read only at k = 1, 4, 8 and drawn in plotly's grey default template."""
    _data()
    with chromium_page() as page:
        page.set_viewport_size({"width": width, "height": 900})
        (chart,) = _charts(page, live_server.url + COMPARE)
        (board,) = [c for c in _charts(page, f"{live_server.url}/leaderboard/?arch=sm_90a&k=8")
                    if c["chart"] == "chart-correctness"]  # fmt: skip
        assert page.errors == []
    assert chart["ticks"] == [str(t) for t in range(1, TURNS + 1)]
    assert chart["ticks"] == board["ticks"]
    assert chart["background"] == board["background"] == "#fff"


@contextmanager
def _served_as_make_run_serves(settings, tmp_path):
    """The portal with its collected static files served by WhiteNoise, as scripts/run_portal.sh serves them (the
    test live server serves the sources through Django's own static handler instead, headers and all)."""
    from django.test.testcases import LiveServerThread

    settings.STATIC_ROOT = tmp_path / "static"
    settings.WHITENOISE_USE_FINDERS = False
    settings.WHITENOISE_AUTOREFRESH = False
    call_command("collectstatic", "--noinput", verbosity=0)
    settings.DEBUG = True
    settings.STORAGES = {**settings.STORAGES}  # a fresh storage, reading the manifest just written
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]
    thread = LiveServerThread("localhost", static_handler=lambda app: app)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://localhost:{thread.port}"
    finally:
        thread.terminate()


def test_chart_pages_load_the_small_plotly_bundle_cached_for_good(settings, tmp_path):
    """Catches the full 4.8 MB plotly.min.js, and a bundle served `max-age=0` (revalidated and parsed on every
    chart page): the bundle must be the basic one, under a hashed name, gzipped, immutable for a year."""
    _data()
    scripts: list[dict] = []
    with _served_as_make_run_serves(settings, tmp_path) as url, chromium_page() as page:
        page.on("response", lambda r: scripts.append({"url": r.url, **r.all_headers()}) if ".js" in r.url else None)
        for path in ("/leaderboard/?arch=sm_90a&k=8", COMPARE):
            charts = _charts(page, url + path)
            assert charts and all(c["series"] for c in charts), path
        assert page.errors == []
    plotly = [s for s in scripts if "plotly" in s["url"]]
    assert plotly, scripts
    for s in plotly:
        assert re.search(r"/static/vendor/plotly-basic\.min\.[0-9a-f]{12}\.js$", s["url"]), s["url"]
        assert s["cache-control"] == "max-age=315360000, public, immutable", s
        assert s.get("content-encoding") in ("gzip", "br"), s
        assert int(s["content-length"]) < 500_000, s
