"""Charts: each has a data function (selector output -> plain JSON data, served by its JSON endpoint)
and a pure figure function (that data -> plotly figure), registered in CHARTS. `chart` builds one, cached per
results generation. Pages embed the figure's JSON in a data block that static/js/leaderboard.js hands to the
vendored plotly.js basic bundle (static/vendor/: scatter and bar, all the charts draw); nothing inline."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from evaluator.both_sides.arches import ARCHES
from portal.leaderboard.boards import ranking
from portal.leaderboard.boards import selectors as boards
from portal.leaderboard.boards.selectors import BoardQuery
from portal.leaderboard.cache import KERNELS, MODELS, Generation
from portal.leaderboard.charts import turns
from portal.leaderboard.charts.figures import PlainFigure, empty_figure, figure_json
from portal.leaderboard.charts.kernel_charts import distribution_data, distribution_figure
from portal.leaderboard.charts.model_charts import (
    arch_comparison_data,
    arch_comparison_figure,
    best_speedup_data,
    best_speedup_figure,
    correctness_data,
    correctness_figure,
    fast_p_data,
    fast_p_figure,
    reasoning_data,
    reasoning_figure,
    speedup_by_turn_data,
    speedup_by_turn_figure,
)
from portal.leaderboard.charts.palette import ModelStyles

CHARTS: dict[str, tuple[Callable[[Generation, BoardQuery], dict], Callable[..., PlainFigure], bool]] = {
    # name: (data function, figure function, needs model runs: its figure function also takes the model styles)
    "correctness": (correctness_data, correctness_figure, True),
    "speedup-by-turn": (speedup_by_turn_data, speedup_by_turn_figure, True),
    "fast-p": (fast_p_data, fast_p_figure, True),
    "reasoning": (reasoning_data, reasoning_figure, True),
    "best-speedup": (best_speedup_data, best_speedup_figure, True),
    "distribution": (distribution_data, distribution_figure, False),
    "arch-comparison": (arch_comparison_data, arch_comparison_figure, True),
}


def chart(gen: Generation, name: str, query: BoardQuery) -> dict[str, Any]:
    """{"chart", "data", "figure"} for one chart, cached per results generation."""
    data_fn, figure_fn, _ = CHARTS[name]

    def compute() -> dict[str, Any]:
        data = data_fn(gen, query)
        empty = data.get("empty") or ""
        if empty:
            figure = empty_figure(empty)
        else:
            figure = figure_fn(data, model_styles(gen)) if CHARTS[name][2] else figure_fn(data)
        return {"chart": name, "data": data, "empty": empty, "figure": figure_json(figure)}

    return gen.get(("chart", name, _key_query(name, query)), compute, scope=MODELS if CHARTS[name][2] else KERNELS)


def model_styles(gen: Generation) -> ModelStyles:
    """The style of every model the portal shows, on any architecture, GPU, language or task: the one map every
    chart and /compare/ colour by, so a model has one colour everywhere and no two share one."""

    def compute() -> frozenset[str]:
        models: set[str] = set()
        for arch in ARCHES:
            models.update(t.model_id for t in turns.trajectories(gen, arch=arch))
            for rows in boards.model_rows(gen, arch=arch, k=ranking.TURN_LIMITS[-1]).values():
                models.update(r.model_id for r in rows)
        return frozenset(models)

    return ModelStyles(gen.get(("chart_models",), compute, scope=MODELS))


def _key_query(name: str, query: BoardQuery) -> BoardQuery:
    """Only the parameters a chart depends on, so pages that differ in the others share one cached copy."""
    if name == "distribution":
        return dataclasses.replace(query, k=0, sort="")
    if name == "arch-comparison":
        return BoardQuery(arch="", task=query.task, k=query.k, gpu="", sort="", language=query.language)
    if name in ("correctness", "speedup-by-turn"):
        return dataclasses.replace(query, k=0, sort="")  # every turn is drawn: k does not matter
    return dataclasses.replace(query, sort="")
