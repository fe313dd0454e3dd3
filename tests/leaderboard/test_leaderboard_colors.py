"""One colour per model name on every chart of /leaderboard/ and on /compare/, and one line style per
measure (correct solid, correct + verified dotted) on both pages (issue 29, item 2)."""

from __future__ import annotations

from portal.leaderboard.charts import figures, model_charts
from portal.leaderboard.compare.figures import curves_figure

A, B = "Llama-4-Maverick", "gpt-oss-120b"


def _figures(order: list[str]) -> list[figures.PlainFigure]:
    """Every model-series figure builder, fed its series in the given order (each chart sorts its own way)."""
    turns = [1, 2, 3]
    return [
        model_charts.correctness_figure(
            {"turns": turns, "series": [{"model": m, "n": 2, "correct": [1, 1, 2], "verified": [0, 1, 1]}
                                        for m in order], "where": "", "note": ""}),
        model_charts.speedup_by_turn_figure(
            {"turns": turns, "series": [{"model": m, "runs": 1, "geomean": [1.0, 1.1, 1.2]} for m in order],
             "where": "", "note": ""}),
        model_charts.fast_p_figure(
            {"p": [0.0, 1.0], "k": 1, "series": [{"model": m, "fast_p": [1.0, 0.5]} for m in order],
             "where": "", "note": ""}),
        model_charts.reasoning_figure(
            {"k": 1, "series": [{"model": m, "points": [{"reasoning_tokens": 10, "speedup": 1.0, "run_id": 1}]}
                                for m in order], "where": "", "note": ""}),
        model_charts.best_speedup_figure(
            {"tasks": ["gemm"], "k": 1, "series": [{"model": m, "speedups": {"gemm": 1.0}} for m in order],
             "where": "", "note": ""}),
    ]  # fmt: skip


def _colors(fig) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for trace in fig.data if isinstance(fig, figures.PlainFigure) else fig.to_dict()["data"]:
        model = trace["name"].split(" · ")[0]
        color = (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")
        seen.setdefault(model, set()).add(color)
    return seen


def test_model_color_is_a_function_of_the_name_alone():
    """Catches colours taken from the series' position: the same name must map to the same colour."""
    assert figures.model_color(A) == figures.model_color(A)
    assert figures.model_color(A) in figures.COLORS
    assert len({figures.model_color(f"model-{i}") for i in range(200)}) == len(figures.COLORS)


def test_same_model_same_colour_in_every_chart_whatever_the_order():
    """Catches the fault of issue 29 item 2: a model brown on one chart, red on the next, because colours
    followed each chart's own series order. Every trace of a model, in every chart and in either order,
    carries one colour, the one model_color gives."""
    for order in ([A, B], [B, A]):
        for fig in _figures(order):
            colors = _colors(fig)
            assert colors[A] == {figures.model_color(A)}, fig.layout["title"]["text"]
            assert colors[B] == {figures.model_color(B)}, fig.layout["title"]["text"]


def test_compare_curves_use_the_board_colours_and_line_styles():
    """Catches /compare/ colouring by side (a, b) and drawing 'correct' dotted where the board draws it solid."""
    points = [{"k": 1, "n": 2, "correct_rate": 0.5, "correct": 1, "correct_arch_rate": 0.5, "correct_arch": 1}]
    data = {"task": "", "curves": [{"side": "a", "model": B, "points": points},
                                   {"side": "b", "model": A, "points": points}]}  # fmt: skip
    fig = curves_figure(data).to_dict()
    for trace in fig["data"]:
        model, measure = trace["name"].split(" · ")
        assert trace["line"]["color"] == figures.model_color(model)
        assert trace["line"]["dash"] == ("solid" if measure == "correct" else "dot")
    board = model_charts.correctness_figure(
        {"turns": [1], "series": [{"model": A, "n": 1, "correct": [1], "verified": [1]}], "where": "", "note": ""}
    )
    dashes = {t["name"].split(" · ")[1]: t["line"]["dash"] for t in board.data}
    assert dashes == {"correct": "solid", "correct + verified": "dot"}
