"""One style per model on every chart of /leaderboard/ and on /compare/, no two models of the portal sharing one
while there are no more models than palette colours, and one line style per measure (correct solid, correct +
verified dotted) on both pages."""

from __future__ import annotations

from portal.leaderboard.charts import figures, model_charts, palette
from portal.leaderboard.charts.palette import ModelStyles
from portal.leaderboard.compare.figures import curves_figure

A, B = "Llama-4-Maverick", "gpt-oss-120b"
# The eight models of the demo board: a hash of the name gave two pairs of them one colour each.
DEMO = ["deepseek-ai/DeepSeek-V3.2", "Qwen/Qwen3-Coder-480B-A35B", "moonshotai/Kimi-K2-Instruct", "openai/gpt-oss-120b",
        "zai-org/GLM-4.6", "meta-llama/Llama-4-Maverick", "mistralai/Devstral-2", "MiniMaxAI/MiniMax-M2"]  # fmt: skip


def _figures(order: list[str], styles: ModelStyles) -> list[figures.PlainFigure]:
    """Every model-series figure builder, fed its series in the given order (each chart sorts its own way)."""
    turns = [1, 2, 3]
    return [
        model_charts.correctness_figure(
            {"turns": turns, "series": [{"model": m, "n": 2, "correct": [1, 1, 2], "verified": [0, 1, 1]}
                                        for m in order], "where": "", "note": ""}, styles),
        model_charts.speedup_by_turn_figure(
            {"turns": turns, "series": [{"model": m, "runs": 1, "geomean": [1.0, 1.1, 1.2]} for m in order],
             "where": "", "note": ""}, styles),
        model_charts.fast_p_figure(
            {"p": [0.0, 1.0], "k": 1, "series": [{"model": m, "fast_p": [1.0, 0.5]} for m in order],
             "where": "", "note": ""}, styles),
        model_charts.reasoning_figure(
            {"k": 1, "series": [{"model": m, "points": [{"reasoning_tokens": 10, "speedup": 1.0, "run_id": 1}]}
                                for m in order], "where": "", "note": ""}, styles),
        model_charts.best_speedup_figure(
            {"tasks": ["gemm"], "k": 1, "series": [{"model": m, "speedups": {"gemm": 1.0}} for m in order],
             "where": "", "note": ""}, styles),
    ]  # fmt: skip


def _looks(fig) -> dict[str, set[tuple]]:
    """model -> the (colour, dash or bar pattern, marker) its traces are drawn in; the dash is left out where it
    says the measure (correct solid, verified dotted) rather than the model."""
    seen: dict[str, set[tuple]] = {}
    for trace in fig.data:
        model, *measure = trace["name"].split(" · ")
        line, marker = trace.get("line") or {}, trace.get("marker") or {}
        dash = "" if measure else line.get("dash") or (marker.get("pattern") or {}).get("shape")
        color = line.get("color") or marker.get("color")
        seen.setdefault(model, set()).add((color, dash, marker.get("symbol") if trace["type"] == "scatter" else ""))
    return seen


def test_the_demo_models_get_eight_different_colours():
    """Catches a hash that gave Llama-4-Maverick and Qwen3-Coder both red, gpt-oss-120b and Kimi-K2
    both blue."""
    styles = ModelStyles(DEMO)
    assert len({styles(m).color for m in DEMO}) == len(DEMO)
    assert {styles(m).color for m in DEMO} <= set(palette.PALETTE)


def test_styles_follow_the_set_not_the_order_and_stay_distinct_past_the_palette():
    models = [f"org/model-{i:02d}" for i in range(2 * len(palette.PALETTE) + 3)]
    forward, backward = ModelStyles(models), ModelStyles(reversed(models))
    assert all(forward(m) == backward(m) for m in models)
    assert len({forward(m).color for m in models[: len(palette.PALETTE)]}) == len(palette.PALETTE)
    # Past the palette a colour repeats, never with the same dash, marker or bar pattern.
    for part in ("dash", "symbol", "pattern"):
        assert len({(forward(m).color, getattr(forward(m), part)) for m in models}) == len(models), part


def test_a_model_outside_the_set_never_borrows_a_colour():
    styles = ModelStyles(DEMO[:3])
    assert styles("zz/new") not in {styles(m) for m in DEMO[:3]}
    wider = styles.including(["aa/new", "zz/new"])
    assert [wider(m) for m in DEMO[:3]] == [styles(m) for m in DEMO[:3]]
    assert len({wider(m) for m in [*DEMO[:3], "aa/new", "zz/new"]}) == 5


def test_same_model_same_style_in_every_chart_whatever_the_order():
    """Catches colours that follow each chart's own series order: a model brown on one chart, red on the next.
    Every trace of a model, in every chart and in either order, is drawn in the one style its model has."""
    styles = ModelStyles([A, B])
    for order in ([A, B], [B, A]):
        for fig in _figures(order, styles):
            looks = _looks(fig)
            title = fig.layout["title"]["text"]
            assert {color for color, _, _ in looks[A]} == {styles(A).color}, title
            assert {color for color, _, _ in looks[B]} == {styles(B).color}, title
            assert looks[A].isdisjoint(looks[B]), title


def test_compare_curves_use_the_board_styles_and_line_styles():
    """Catches /compare/ colouring by side (a, b) or by the label people see (the board colours by model id), and
    drawing 'correct' dotted where the board draws it solid."""
    styles = ModelStyles([A, B, "other"])
    points = [{"k": k, "n": 2, "correct_rate": 0.5, "correct": 1, "correct_arch_rate": 0.5, "correct_arch": 1}
              for k in (1, 2, 3)]  # fmt: skip
    data = {"task": "", "curves": [{"side": "a", "model": "Label of B", "model_id": B, "points": points},
                                   {"side": "b", "model": "Label of A", "model_id": A, "points": points}]}  # fmt: skip
    fig = curves_figure(data, styles)
    for trace in fig.data:
        label, measure = trace["name"].split(" · ")
        model = {"Label of A": A, "Label of B": B}[label]
        assert trace["line"]["color"] == styles(model).color
        assert trace["line"]["dash"] == ("solid" if measure == "correct" else "dot")
    assert fig.layout["xaxis"]["tickvals"] == [1, 2, 3]
    board = model_charts.correctness_figure(
        {"turns": [1], "series": [{"model": A, "n": 1, "correct": [1], "verified": [1]}], "where": "", "note": ""},
        styles,
    )
    dashes = {t["name"].split(" · ")[1]: t["line"]["dash"] for t in board.data}
    assert dashes == {"correct": "solid", "correct + verified": "dot"}
    assert fig.layout.keys() >= {"colorway", "font", "legend"} and "template" not in fig.layout  # the boards' layout
