"""Chart layout in a real browser: on /leaderboard/ at 1400 px and at 390 px, no text plotly
draws (title, axis titles, tick labels, legend entries, the "library 1.0x" label) overlaps another or runs out of
its chart's box, and the legend of the tall per-task bar chart sits right under its axis title."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every text element plotly draws in a chart, by kind; tick labels of one axis may touch each other.
_COLLECT = """(root) => {
  const box = root.getBoundingClientRect();
  const kinds = {title: '.gtitle', xtitle: '.g-xtitle text', ytitle: '.g-ytitle text', legend: '.legend .legendtext',
                 annotation: '.annotation-text', xtick: '.xtick text', ytick: '.ytick text'};
  const items = [];
  for (const [kind, selector] of Object.entries(kinds)) {
    for (const el of root.querySelectorAll(selector)) {
      const r = el.getBoundingClientRect();
      if (!el.textContent.trim() || r.width === 0) continue;
      items.push({kind, text: el.textContent, l: r.left, t: r.top, r: r.right, b: r.bottom});
    }
  }
  return {box: {l: box.left, t: box.top, r: box.right, b: box.bottom}, items};
}"""

SLACK = 1.0  # px: anti-aliased glyph edges


def _overlap(a: dict, b: dict) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > SLACK and min(a["b"], b["b"]) - max(a["t"], b["t"]) > SLACK


def _layout_faults(layout: dict) -> list[str]:
    box, items = layout["box"], layout["items"]
    faults = [
        f"{i['kind']} {i['text']!r} cut by the chart's edge"
        for i in items
        if i["l"] < box["l"] - SLACK
        or i["r"] > box["r"] + SLACK
        or i["t"] < box["t"] - SLACK
        or i["b"] > box["b"] + SLACK
    ]
    for n, a in enumerate(items):
        for b in items[n + 1 :]:
            if a["kind"] == b["kind"] and a["kind"] in ("xtick", "ytick"):
                continue
            if _overlap(a, b):
                faults.append(f"{a['kind']} {a['text']!r} overlaps {b['kind']} {b['text']!r}")
    return faults


def _data():
    runs = lf.standard_runs()
    ok, fail = ("PASSED", "verified", 1.3, 400), ("COMPILE_ERROR", "", None, 250)
    lf.turns(runs["a"], GEMM, [[fail, ok, ("PASSED", "verified", 1.5, 300)], [fail, fail, ok]])
    lf.turns(runs["b"], GEMM, [[ok, fail, fail]])
    lf.turns(runs["b"], MHA, [[fail, ("PASSED", "verified", 0.9, 500), fail]])
    # Long model names: the legend entries are as wide as real ones ("meta-llama/Llama-4-Maverick · correct + ...").
    # Seven models in all: on a phone their legend is taller than the plot it goes under.
    for name in ("meta-llama/Llama-4-Maverick-17B-128E", "Qwen/Qwen3-Coder-480B-A35B-Instruct", "openai/gpt-oss-120b",
                 "moonshotai/Kimi-K2-Instruct"):  # fmt: skip
        run = lf.model_run(lf.user(name.split("/")[0].lower()), model=name)
        lf.metrics(run, GEMM, 8, 2, 1, 1, 1.1, 500)
        lf.turns(run, GEMM, [[fail, ok], [ok, fail]])


@pytest.mark.parametrize("width", [1400, 390])
def test_no_chart_text_overlaps_or_is_cut(live_server, width):
    """Catches the legend drawn over the x-axis title (legend at a fixed fraction below the plot), the
    "library 1.0x" label cut to "libr" at the right edge, titles longer than a phone screen, and the ~230 px
    gap between the per-task bars and their legend (a legend placed at a fraction of a tall plot's height)."""
    from portal.leaderboard.boards.views import MODEL_CHARTS

    _data()
    with chromium_page() as page:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/leaderboard/?arch=sm_90a&k=8")
        faults = {}
        for name in MODEL_CHARTS:
            page.wait_for_selector(f"#chart-{name}[data-drawn='1'] .main-svg", timeout=30_000)
            layout = page.eval_on_selector(f"#chart-{name}", _COLLECT)
            assert {i["kind"] for i in layout["items"]} >= {"legend", "xtick", "ytick"}, name
            faults[name] = _layout_faults(layout)
            if name == "best-speedup":  # 20 tasks: a tall plot
                xtitle = max(i["b"] for i in layout["items"] if i["kind"] in ("xtitle", "xtick"))
                legend = min(i["t"] for i in layout["items"] if i["kind"] == "legend")
                assert 0 <= legend - xtitle < 60, f"{legend - xtitle:.0f} px between the axis title and the legend"
        assert {n: f for n, f in faults.items() if f} == {}
        assert page.errors == []


# Per chart: each model's colours as plotly drew them (legend names "model · measure"; markers and lines).
_COLOURS = """(root) => {
  const seen = {};
  for (const trace of root.data || []) {
    const model = String(trace.name || '').split(' · ')[0];
    if (!model || model.startsWith('library')) continue;
    const colours = [(trace.line || {}).color, (trace.marker || {}).color].filter(c => typeof c === 'string');
    seen[model] = (seen[model] || []).concat(colours);
  }
  return seen;
}"""


def test_a_model_keeps_one_colour_on_every_chart_in_the_browser(live_server):
    """As a visitor sees it: every chart on /leaderboard/, as drawn by plotly in Chromium, gives
    each model one colour, the same on all of them. Mutation caught: colours taken from each chart's series
    order (one model brown, red, green across charts)."""
    from portal.leaderboard.boards.views import MODEL_CHARTS

    _data()
    with chromium_page() as page:
        page.set_viewport_size({"width": 1400, "height": 900})
        page.goto(f"{live_server.url}/leaderboard/?arch=sm_90a&k=8")
        per_model: dict[str, set[str]] = {}
        charts_seen = 0
        for name in MODEL_CHARTS:
            page.wait_for_selector(f"#chart-{name}[data-drawn='1'] .main-svg", timeout=30_000)
            for model, colours in page.eval_on_selector(f"#chart-{name}", _COLOURS).items():
                per_model.setdefault(model, set()).update(colours)
            charts_seen += 1
        assert charts_seen >= 3
        coloured = {m: c for m, c in per_model.items() if c}  # traces named by architecture carry no colour of theirs
        assert len(coloured) >= 3, per_model  # the models of _data() appear
        assert {m: c for m, c in coloured.items() if len(c) != 1} == {}
        assert page.errors == []
