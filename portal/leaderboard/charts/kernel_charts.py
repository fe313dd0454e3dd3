"""The kernel chart: the distribution of the ranked kernels' speedups (binned on the server) with the expert
references and negative controls marked; a data function and a pure figure function, as in model_charts.py."""

from __future__ import annotations

from typing import Any

from portal.leaderboard.boards import selectors
from portal.leaderboard.boards.selectors import BoardQuery
from portal.leaderboard.cache import Generation
from portal.leaderboard.charts.figures import COLORS, PlainFigure, layout, library_line, plot_text, trace


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
    speedups = [
        r.speedup_factor
        for rows in boards.values()
        for r in rows
        if r.rank is not None and r.speedup_factor is not None
    ]
    # Expert references and negative controls (reference kernels written to fail the instruction check) are
    # drawn apart: a control is never an "expert reference" diamond.
    references, controls = [], []
    for task, rows in boards.items():
        for r in rows:
            if r.is_reference and r.speedup_factor is not None and not r.held_reason:
                point = {"task": task, "name": r.name, "speedup_factor": r.speedup_factor}
                (controls if r.is_negative_control else references).append(point)
    return {
        "task": query.task,
        "arch": query.arch,
        "n": len(speedups),
        "bins": histogram_bins(speedups),
        "references": references,
        "negative_controls": controls,
        "empty": "" if speedups or references or controls else "No ranked kernel here yet.",
    }


def distribution_figure(data: dict[str, Any]) -> PlainFigure:
    bins = data["bins"]
    fig = PlainFigure()
    fig.add_trace(
        trace(
            "bar",
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
            trace(
                "scatter",
                x=[r["speedup_factor"] for r in data["references"]],
                y=[0 for _ in data["references"]],
                mode="markers",
                marker={"symbol": "diamond", "size": 11, "color": COLORS[1]},
                name="expert reference",
                customdata=[plot_text(f"{r['task']} / {r['name']}") for r in data["references"]],
                hovertemplate="%{customdata}: %{x:.2f}x<extra></extra>",
            )
        )
    if data.get("negative_controls"):
        fig.add_trace(
            trace(
                "scatter",
                x=[r["speedup_factor"] for r in data["negative_controls"]],
                y=[0 for _ in data["negative_controls"]],
                mode="markers",
                marker={"symbol": "x-thin-open", "size": 10, "color": "#5b6470", "line": {"width": 2}},
                name="negative control (not verified, unranked)",
                customdata=[plot_text(f"{r['task']} / {r['name']}") for r in data["negative_controls"]],
                hovertemplate="%{customdata} (negative control): %{x:.2f}x<extra></extra>",
            )
        )
    library_line(fig, axis="x")
    where = data["task"] or f"all tasks on {data['arch']}"
    return layout(
        fig, title=f"Speedup of correct kernels ({where}, n={data['n']})", x="speedup vs library (x)", y="kernels"
    )
