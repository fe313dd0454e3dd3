"""Charts: each has a data function (selector output -> plain JSON data, served by its JSON endpoint)
and a pure figure function (that data -> plotly figure). Pages embed the figure's JSON in a data block
that static/js/leaderboard.js hands to the plotly.js served from the plotly package; nothing inline."""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from evaluator.arches import ARCHES
from portal.leaderboard import ranking, selectors
from portal.leaderboard.cache import KERNELS, MODELS, Generation
from portal.leaderboard.selectors import BoardQuery

TOP_RUNS = 8  # series per chart; more lines than this are unreadable
COLORS = ["#0b6bcb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bc4c00", "#0a7b83", "#6e7781"]


def plot_text(text: str, limit: int = 48) -> str:
    """User text (model names, kernel names) as plotly label text: plotly.js interprets a few HTML tags in
    labels, so every '<', '>' and '&' is escaped and the label shortened."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return html.escape(text, quote=False)


def _layout(fig: go.Figure, *, title: str, x: str, y: str, height: int = 380) -> go.Figure:
    fig.update_layout(
        template="none",
        title={"text": title, "x": 0, "font": {"size": 15}},
        xaxis={"title": {"text": x}, "gridcolor": "#eef1f4", "automargin": True},
        yaxis={"title": {"text": y}, "gridcolor": "#eef1f4", "zeroline": False, "automargin": True},
        colorway=COLORS,
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 60},
        legend={"orientation": "h", "y": -0.25},
        font={"family": "system-ui, sans-serif", "size": 12},
    )
    return fig


def _library_line(fig: go.Figure, *, axis: str = "y") -> None:
    """The vendor library's speed: above the line a kernel beats cuBLAS/cuDNN."""
    line = {"color": "#5b6470", "dash": "dash", "width": 1}
    if axis == "y":
        fig.add_hline(y=1.0, line=line, annotation_text="library 1.0x", annotation_position="top left")
    else:
        fig.add_vline(x=1.0, line=line, annotation_text="library 1.0x", annotation_position="top right")


def _top_runs(gen: Generation, query: BoardQuery) -> list[ranking.SummaryRow]:
    """The runs a chart draws: the first TOP_RUNS of the table the page shows (the task's board when a
    task is chosen, else the summary), in the page's sort order."""
    summaries = selectors.model_summary(gen, query)
    if not query.task:
        return summaries[:TOP_RUNS]
    by_id = {s.run_id: s for s in summaries}
    board = selectors.model_board(gen, query)
    return [by_id[r.run_id] for r in board if r.run_id in by_id][:TOP_RUNS]


# --------------------------------------------------------------------------- correctness vs turn limit


def correctness_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    by_k = selectors.correctness_by_turn_limit(gen, arch=query.arch, task=query.task, gpu=query.gpu)
    runs = {r.run_id for r in _top_runs(gen, query)}
    series: dict[int, dict[str, Any]] = {}
    for k, rows in by_k.items():
        for row in rows:
            if row.run_id not in runs:
                continue
            entry = series.setdefault(row.run_id, {"run_id": row.run_id, "model": row.model, "points": []})
            entry["points"].append({"k": k, "correct": row.correct, "n": row.trajectories, "rate": row.mean_correct})
    for entry in series.values():
        entry["points"].sort(key=lambda p: p["k"])
    return {"turn_limits": list(ranking.TURN_LIMITS), "task": query.task, "series": list(series.values())}


def correctness_figure(data: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    for s in data["series"]:
        points = s["points"]
        fig.add_trace(
            go.Scatter(
                x=[p["k"] for p in points],
                y=[None if p["rate"] is None else round(100 * p["rate"], 2) for p in points],
                customdata=[f"{p['correct']}/{p['n']}" for p in points],
                mode="lines+markers",
                name=plot_text(s["model"]),
                hovertemplate="k=%{x}: %{y:.1f}% correct (%{customdata})<extra></extra>",
            )
        )
    fig.update_xaxes(tickvals=data["turn_limits"], type="linear")
    fig.update_yaxes(range=[0, 105])
    where = data["task"] or "mean over tasks"
    return _layout(fig, title=f"Correctness vs turn limit ({where})", x="turn limit k", y="correct trajectories (%)")


# --------------------------------------------------------------------------- best speedup per task


def best_speedup_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    tasks = selectors.tasks_for_arch(gen, query.arch)
    series = [
        {"run_id": r.run_id, "model": r.model, "speedups": {t: r.per_task_speedup.get(t) for t in tasks}}
        for r in _top_runs(gen, query)
    ]
    return {"tasks": tasks, "k": query.k, "series": series}


def best_speedup_figure(data: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    for s in data["series"]:
        fig.add_trace(
            go.Bar(
                x=data["tasks"],
                y=[s["speedups"].get(t) for t in data["tasks"]],
                name=plot_text(s["model"]),
                hovertemplate="%{x}: %{y:.2f}x<extra></extra>",
            )
        )
    _library_line(fig)
    fig.update_layout(barmode="group")
    fig.update_xaxes(tickangle=-35)
    return _layout(
        fig,
        title=f"Best speedup per task at k={data['k']} (vs library)",
        x="task",
        y="speedup (x)",
        height=440,
    )


# --------------------------------------------------------------------------- speedup distribution


def histogram_bins(values: list[float], *, width: float = 0.05) -> list[dict[str, Any]]:
    """Counts per speedup bin [low, high): binned on the server so a chart over thousands of kernels stays small."""
    counts: dict[int, int] = {}
    for v in values:
        index = int(v // width)
        counts[index] = counts.get(index, 0) + 1
    return [{"low": round(i * width, 6), "high": round((i + 1) * width, 6), "count": counts[i]} for i in sorted(counts)]


def distribution_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    if query.task:
        boards = {query.task: selectors.kernel_board(gen, task=query.task, arch=query.arch, gpu=query.gpu)}
    else:
        boards = selectors.kernel_speedups(gen, arch=query.arch, gpu=query.gpu)
    speedups = [r.speedup for rows in boards.values() for r in rows if r.rank is not None and r.speedup is not None]
    references = [
        {"task": task, "name": r.name, "speedup": r.speedup}
        for task, rows in boards.items()
        for r in rows
        if r.is_reference and r.speedup is not None
    ]
    return {
        "task": query.task,
        "arch": query.arch,
        "n": len(speedups),
        "bins": histogram_bins(speedups),
        "references": references,
    }


def distribution_figure(data: dict[str, Any]) -> go.Figure:
    bins = data["bins"]
    fig = go.Figure(
        go.Bar(
            x=[(b["low"] + b["high"]) / 2 for b in bins],
            y=[b["count"] for b in bins],
            width=[b["high"] - b["low"] for b in bins],
            name="correct kernels",
            marker={"color": COLORS[0]},
            hovertemplate="%{x:.2f}x: %{y} kernels<extra></extra>",
        )
    )
    if data["references"]:
        fig.add_trace(
            go.Scatter(
                x=[r["speedup"] for r in data["references"]],
                y=[0 for _ in data["references"]],
                mode="markers",
                marker={"symbol": "diamond", "size": 11, "color": COLORS[1]},
                name="expert reference",
                customdata=[plot_text(f"{r['task']} / {r['name']}") for r in data["references"]],
                hovertemplate="%{customdata}: %{x:.2f}x<extra></extra>",
            )
        )
    _library_line(fig, axis="x")
    where = data["task"] or f"all tasks on {data['arch']}"
    return _layout(
        fig, title=f"Speedup of correct kernels ({where}, n={data['n']})", x="speedup vs library (x)", y="kernels"
    )


# --------------------------------------------------------------------------- Hopper vs Blackwell


def arch_comparison_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """Per model id, its best run (highest geometric-mean speedup) on each architecture at turn limit k."""
    models: dict[str, dict[str, Any]] = {}
    for arch in ARCHES:
        arch_query = BoardQuery(arch=arch, task="", k=query.k, gpu="", sort=ranking.DEFAULT_SORT)
        for row in selectors.model_summary(gen, arch_query):
            entry = models.setdefault(row.model_id, {"model_id": row.model_id, "label": row.model})
            best = entry.get(arch)
            if best is None or (row.geomean_speedup or 0) > (best["geomean_speedup"] or 0):
                entry[arch] = {
                    "run_id": row.run_id,
                    "geomean_speedup": row.geomean_speedup,
                    "tasks_solved": row.tasks_solved,
                    "tasks": row.tasks,
                    "mean_correct": row.mean_correct,
                }
    ordered = sorted(models.values(), key=lambda m: -max((m.get(a) or {}).get("geomean_speedup") or 0 for a in ARCHES))
    return {"k": query.k, "arches": list(ARCHES), "models": ordered[: TOP_RUNS * 2]}


def arch_comparison_figure(data: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    labels = [plot_text(m["label"]) for m in data["models"]]
    for arch in data["arches"]:
        cells = [m.get(arch) or {} for m in data["models"]]
        fig.add_trace(
            go.Bar(
                x=labels,
                y=[c.get("geomean_speedup") for c in cells],
                customdata=[f"{c.get('tasks_solved', 0)}/{c.get('tasks', 0)}" for c in cells],
                name=ARCHES[arch].label,
                hovertemplate="%{x}: %{y:.2f}x over %{customdata} tasks solved<extra></extra>",
            )
        )
    _library_line(fig)
    fig.update_layout(barmode="group")
    return _layout(
        fig,
        title=f"Hopper vs Blackwell: geometric-mean best speedup at k={data['k']}",
        x="model",
        y="geometric mean speedup (x)",
    )


# --------------------------------------------------------------------------- registry

CHARTS: dict[str, tuple[Callable[[Generation, BoardQuery], dict], Callable[[dict], go.Figure], bool]] = {
    # name: (data function, figure function, needs model runs)
    "correctness": (correctness_data, correctness_figure, True),
    "best-speedup": (best_speedup_data, best_speedup_figure, True),
    "distribution": (distribution_data, distribution_figure, False),
    "arch-comparison": (arch_comparison_data, arch_comparison_figure, True),
}


def figure_json(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON data (plotly's encoder handles numpy and dates)."""
    return json.loads(figure.to_json())


def chart(gen: Generation, name: str, query: BoardQuery) -> dict[str, Any]:
    """{"chart", "data", "figure"} for one chart, cached per results generation."""
    data_fn, figure_fn, _ = CHARTS[name]

    def compute() -> dict[str, Any]:
        data = data_fn(gen, query)
        return {"chart": name, "data": data, "figure": figure_json(figure_fn(data))}

    return gen.get(("chart", name, _key_query(name, query)), compute, scope=MODELS if CHARTS[name][2] else KERNELS)


def _key_query(name: str, query: BoardQuery) -> BoardQuery:
    """Only the parameters a chart depends on, so pages that differ in the others share one cached copy."""
    if name == "distribution":
        return dataclasses.replace(query, k=0, sort="")
    if name == "arch-comparison":
        return BoardQuery(arch="", task="", k=query.k, gpu="", sort="")
    return query
