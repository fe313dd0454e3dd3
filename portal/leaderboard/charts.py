"""Charts: each has a data function (selector output -> plain JSON data, served by its JSON endpoint)
and a pure figure function (that data -> plotly figure). Pages embed the figure's JSON in a data block
that static/js/leaderboard.js hands to the plotly.js served from the plotly package; nothing inline."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from evaluator.arches import ARCHES
from portal.core import serializers
from portal.leaderboard import ranking, selectors, turns
from portal.leaderboard.cache import KERNELS, MODELS, Generation
from portal.leaderboard.selectors import BoardQuery

MAX_MODELS = 12  # series per chart; the title says when more models exist
COLORS = [
    "#0b6bcb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bc4c00",
    "#0a7b83", "#6e7781", "#d4338b", "#3e63dd", "#7d8b00", "#a0522d",
]  # fmt: skip


def model_color(model: str) -> str:
    """One colour per model name on every chart and page (board, /compare/): taken from a hash of the name,
    never from the series' position, which differs from chart to chart as each sorts its series its own way."""
    digest = hashlib.sha256(model.encode("utf-8")).digest()
    return COLORS[int.from_bytes(digest[:4], "big") % len(COLORS)]


FAST_P = [round(0.05 * i, 2) for i in range(41)]  # p = 0, 0.05, ... 2.0


def plot_text(text: str, limit: int = 48) -> str:
    """User text (model names, kernel names) as plotly label text: plotly.js interprets a few HTML tags in
    labels, so every '<', '>' and '&' is escaped and the label shortened."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return html.escape(text, quote=False)


def _merge(target: dict, changes: dict) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


class PlainFigure:
    """A plotly figure as the plain dict plotly.js draws (data, layout), with the few plotly.py methods the
    charts use. plotly.py's own Figure objects cost about 0.1 s per chart to build here, most of an uncached
    board page; the tests check every figure served against plotly's schema (go.Figure(body["figure"]))."""

    def __init__(self) -> None:
        self.data: list[dict] = []
        self.layout: dict = {}

    def add_trace(self, trace: dict) -> None:
        self.data.append(trace)

    def update_layout(self, **changes) -> None:
        _merge(self.layout, changes)

    def update_xaxes(self, **changes) -> None:
        _merge(self.layout.setdefault("xaxis", {}), changes)

    def update_yaxes(self, **changes) -> None:
        _merge(self.layout.setdefault("yaxis", {}), changes)

    def _line(self, axis: str, value: float, line: dict, text: str) -> None:
        other = "x" if axis == "y" else "y"
        shape = {"type": "line", f"{other}ref": "paper", f"{other}0": 0, f"{other}1": 1}
        shape.update({f"{axis}ref": axis, f"{axis}0": value, f"{axis}1": value, "line": line})
        self.layout.setdefault("shapes", []).append(shape)
        if text:
            # Inside the plot area, where nothing else draws text: right-aligned above a horizontal line (a label
            # starting at the right edge ran out of the figure, "libr"), at the top right of a vertical one.
            note = {"text": text, "showarrow": False, f"{axis}ref": axis, axis: value, f"{other}ref": "paper"}
            if axis == "y":
                note.update({"x": 1, "xanchor": "right", "yanchor": "bottom"})
            else:
                note.update({"y": 1, "xanchor": "left", "yanchor": "top", "xshift": 3})
            note.update(bgcolor="rgba(255,255,255,0.85)", font={"size": 11, "color": "#5b6470"})
            self.layout.setdefault("annotations", []).append(note)

    def add_hline(self, *, y: float, line: dict, annotation_text: str = "", **_) -> None:
        self._line("y", y, line, annotation_text)

    def add_vline(self, *, x: float, line: dict, annotation_text: str = "", **_) -> None:
        self._line("x", x, line, annotation_text)

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data, "layout": self.layout}


def _trace(kind: str, **properties) -> dict:
    return {"type": kind, **properties}


def _figure() -> PlainFigure:
    return PlainFigure()


def _layout(fig: PlainFigure, *, title: str, x: str, y: str, height: int = 400) -> PlainFigure:
    # Title and legend are placed against the figure's edges (yref "container") and reserve their own margin: the
    # legend used to sit at a fraction of the plot's height below it (y=-0.2), over the axis title on short charts
    # and ~230 px below it on the tall per-task chart. static/js/leaderboard.js wraps the title on narrow screens.
    fig.update_layout(
        title={"text": title, "x": 0, "xref": "container", "y": 1, "yref": "container", "yanchor": "top",
               "automargin": True, "pad": {"t": 6, "l": 4, "b": 8}, "font": {"size": 15}},
        xaxis={"title": {"text": x, "standoff": 8}, "gridcolor": "#eef1f4", "automargin": True},
        yaxis={"title": {"text": y, "standoff": 8}, "gridcolor": "#eef1f4", "zeroline": False, "automargin": True},
        colorway=COLORS,
        height=height,
        margin={"l": 50, "r": 12, "t": 30, "b": 10},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yref": "container", "yanchor": "bottom"},
        font={"family": "system-ui, sans-serif", "size": 12},
    )  # fmt: skip
    return fig


def empty_figure(message: str) -> PlainFigure:
    """No data: a message where the plot would be, never bare axes around -1..1."""
    fig = _figure()
    fig.update_layout(
        height=160,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[{"text": html.escape(message), "showarrow": False, "x": 0.5, "y": 0.5, "xref": "paper",
                      "yref": "paper", "font": {"size": 14, "color": "#5b6470"}}],
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )  # fmt: skip
    return fig


def _library_line(fig: PlainFigure, *, axis: str = "y") -> None:
    """The vendor library's speed: above the line a kernel beats cuBLAS/cuDNN."""
    line = {"color": "#5b6470", "dash": "dash", "width": 1}
    if axis == "y":
        fig.add_hline(y=1.0, line=line, annotation_text="library 1.0x", annotation_position="top left")
    else:
        fig.add_vline(x=1.0, line=line, annotation_text="library 1.0x", annotation_position="top right")


def _where(query: BoardQuery) -> str:
    parts = [query.task or "all tasks", query.arch] + ([query.gpu] if query.gpu else [])
    return " · ".join(parts)


def _capped(models: list[str]) -> tuple[list[str], str]:
    """The first MAX_MODELS models (already in the chart's order) and a title note when some were left out."""
    if len(models) <= MAX_MODELS:
        return models, ""
    return models[:MAX_MODELS], f" (top {MAX_MODELS} of {len(models)} models)"


def _runs_by_model(rows_by_task: dict[str, list[ranking.ModelRow]], task: str) -> dict[str, dict[int, list]]:
    """model id -> run id -> that run's per-task rows (one task when given)."""
    out: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for slug, rows in rows_by_task.items():
        if task and slug != task:
            continue
        for row in rows:
            out[row.model_id][row.run_id].append(row)
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


# --------------------------------------------------------------------------- per-turn curves


def correctness_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """For every turn t = 1..T: the share of trajectories with a correct kernel within t turns, and with a
    correct kernel whose target instructions were verified; pooled over the model's runs (n trajectories)."""
    folded = turns.trajectories(gen, arch=query.arch, task=query.task, gpu=query.gpu, language=query.language)
    last = max((t.turns for t in folded), default=0)
    by_model: dict[str, list[turns.TrajectoryTurns]] = defaultdict(list)
    for t in folded:
        by_model[t.model_id].append(t)
    series = []
    for model, items in by_model.items():
        correct = [sum(1 for i in items if i.first_correct and i.first_correct <= t) for t in range(1, last + 1)]
        verified = [sum(1 for i in items if i.first_verified and i.first_verified <= t) for t in range(1, last + 1)]
        series.append({"model": model, "n": len(items), "correct": correct, "verified": verified})
    series.sort(key=lambda s: (-(s["verified"][-1] / s["n"]), -(s["correct"][-1] / s["n"]), s["model"]))
    names, note = _capped([s["model"] for s in series])
    return {
        "where": _where(query),
        "turns": list(range(1, last + 1)),
        "series": series[: len(names)],
        "note": note,
        "empty": "" if series else "No model turns here yet.",
    }


def correctness_figure(data: dict[str, Any]) -> PlainFigure:
    fig = _figure()
    for s in data["series"]:
        color = model_color(s["model"])
        for kind, dash in (("correct", "solid"), ("verified", "dot")):
            fig.add_trace(
                _trace(
                    "scatter",
                    x=data["turns"],
                    y=[round(100 * c / s["n"], 2) for c in s[kind]],
                    customdata=[f"{c}/{s['n']}" for c in s[kind]],
                    mode="lines+markers",
                    line={"color": color, "dash": dash},
                    name=plot_text(s["model"]) + (" · correct + verified" if kind == "verified" else " · correct"),
                    legendgroup=plot_text(s["model"]),
                    hovertemplate="turn %{x}: %{y:.1f}% (%{customdata})<extra></extra>",
                )
            )
    fig.update_xaxes(tickvals=data["turns"], type="linear")
    fig.update_yaxes(range=[0, 105])
    return _layout(
        fig,
        title=f"Correct (solid) and correct + verified (dotted) within t turns — {data['where']}{data['note']}",
        x="turn limit t",
        y="trajectories (%)",
        height=460,
    )


def speedup_by_turn_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """For every turn limit t: per run, the geometric mean over tasks of the best correct speedup within t turns
    (tasks with one); per model, the mean over its runs (n runs)."""
    folded = turns.trajectories(gen, arch=query.arch, task=query.task, gpu=query.gpu, language=query.language)
    last = max((t.turns for t in folded), default=0)
    best: dict[tuple[str, int, str], list[float]] = {}  # (model, run, task) -> best speedup within t, per t
    for trajectory in folded:
        row = best.setdefault((trajectory.model_id, trajectory.run_id, trajectory.task), [0.0] * last)
        for number, speedup in trajectory.speedups:
            for t in range(number - 1, last):
                row[t] = max(row[t], speedup)
    per_run: dict[tuple[str, int], list[list[float]]] = defaultdict(list)
    for (model, run, _task), row in best.items():
        per_run[(model, run)].append(row)
    by_model: dict[str, list[list[float | None]]] = defaultdict(list)
    for (model, _run), rows in per_run.items():
        by_model[model].append([ranking.geometric_mean([r[t] for r in rows]) for t in range(last)])
    series = []
    for model, runs in by_model.items():
        values = [_mean([r[t] for r in runs if r[t] is not None]) for t in range(last)]
        series.append({"model": model, "runs": len(runs), "geomean": values})
    series.sort(key=lambda s: (-(s["geomean"][-1] or 0) if s["geomean"] else 0, s["model"]))
    names, note = _capped([s["model"] for s in series])
    has_speedup = any(v is not None for s in series for v in s["geomean"])
    return {
        "where": _where(query),
        "turns": list(range(1, last + 1)),
        "series": series[: len(names)],
        "note": note,
        "empty": "" if has_speedup else "No timed correct kernel from a model here yet.",
    }


def speedup_by_turn_figure(data: dict[str, Any]) -> PlainFigure:
    fig = _figure()
    for s in data["series"]:
        fig.add_trace(
            _trace(
                "scatter",
                x=data["turns"],
                y=[None if v is None else round(v, 4) for v in s["geomean"]],
                mode="lines+markers",
                line={"color": model_color(s["model"])},
                marker={"color": model_color(s["model"])},
                name=plot_text(s["model"]),
                customdata=[s["runs"]] * len(data["turns"]),
                hovertemplate="turn %{x}: %{y:.2f}x (mean of %{customdata} runs)<extra></extra>",
            )
        )
    _library_line(fig)
    fig.update_xaxes(tickvals=data["turns"], type="linear")
    return _layout(
        fig,
        title=f"Best speedup within t turns (geometric mean over solved tasks) — {data['where']}{data['note']}",
        x="turn limit t",
        y="speedup vs library (x)",
    )


# --------------------------------------------------------------------------- fast_p


def fast_p_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """KernelBench's fast_p at turn limit k: the share of a run's tasks with a correct kernel faster than p times
    the library, p from 0 to 2; per model, the mean over its runs."""
    by_model = _runs_by_model(
        selectors.model_rows(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language), query.task
    )
    series = []
    for model, runs in by_model.items():
        curves = []
        for rows in runs.values():
            n = len(rows)
            curves.append(
                [sum(1 for r in rows if r.correct and (p == 0 or (r.best_speedup or 0) > p)) / n for p in FAST_P]
            )
        series.append(
            {"model": model, "runs": len(curves), "fast_p": [round(sum(c[i] for c in curves) / len(curves), 4)
                                                              for i in range(len(FAST_P))]}
        )  # fmt: skip
    series.sort(key=lambda s: (-s["fast_p"][FAST_P.index(1.0)], s["model"]))
    names, note = _capped([s["model"] for s in series])
    return {
        "where": _where(query),
        "k": query.k,
        "p": FAST_P,
        "series": series[: len(names)],
        "note": note,
        "empty": "" if series else "No model runs here yet.",
    }


def fast_p_figure(data: dict[str, Any]) -> PlainFigure:
    fig = _figure()
    for s in data["series"]:
        fig.add_trace(
            _trace(
                "scatter",
                x=data["p"],
                y=[round(100 * v, 2) for v in s["fast_p"]],
                mode="lines",
                line={"color": model_color(s["model"])},
                name=plot_text(s["model"]),
                hovertemplate="p=%{x}: %{y:.1f}% of tasks<extra></extra>",
            )
        )
    fig.add_vline(x=1.0, line={"color": "#5b6470", "dash": "dash", "width": 1})
    fig.update_yaxes(range=[0, 105])
    fig.update_xaxes(range=[-0.1, 2.05])  # the x tick "0" clear of the y tick "0" at the corner
    return _layout(
        fig,
        title=f"fast_p at k={data['k']}: tasks correct and faster than p × library — {data['where']}{data['note']}",
        x="p (speedup threshold)",
        y="tasks (%)",
    )


# --------------------------------------------------------------------------- reasoning tokens vs speedup


def reasoning_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """One point per run: mean reasoning tokens per turn (where the server reported them) against the run's
    geometric-mean best speedup at k."""
    tokens: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # run -> [tokens, turns that reported them]
    for t in turns.trajectories(gen, arch=query.arch, task=query.task, gpu=query.gpu, language=query.language):
        if t.reasoning_turns:
            tokens[t.run_id][0] += t.reasoning_tokens
            tokens[t.run_id][1] += t.reasoning_turns
    by_model = _runs_by_model(
        selectors.model_rows(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language), query.task
    )
    series = []
    for model, runs in by_model.items():
        points = []
        for run_id, rows in runs.items():
            speedup = ranking.geometric_mean(r.best_speedup for r in rows)
            if run_id in tokens and speedup is not None:
                points.append(
                    {
                        "run_id": run_id,
                        "reasoning_tokens": round(tokens[run_id][0] / tokens[run_id][1], 1),
                        "speedup": speedup,
                    }
                )
        if points:
            series.append({"model": model, "points": points})
    series.sort(key=lambda s: s["model"])
    names, note = _capped([s["model"] for s in series])
    return {
        "where": _where(query),
        "k": query.k,
        "series": series[: len(names)],
        "note": note,
        "empty": "" if series else "No run here reports reasoning tokens and a timed correct kernel.",
    }


def reasoning_figure(data: dict[str, Any]) -> PlainFigure:
    fig = _figure()
    for s in data["series"]:
        fig.add_trace(
            _trace(
                "scatter",
                x=[p["reasoning_tokens"] for p in s["points"]],
                y=[p["speedup"] for p in s["points"]],
                customdata=[p["run_id"] for p in s["points"]],
                mode="markers",
                marker={"size": 9, "color": model_color(s["model"])},
                name=plot_text(s["model"]),
                hovertemplate="run %{customdata}: %{x:.0f} tokens/turn, %{y:.2f}x<extra></extra>",
            )
        )
    _library_line(fig)
    return _layout(
        fig,
        title=f"Reasoning tokens vs speedup at k={data['k']}, one point per run — {data['where']}{data['note']}",
        x="mean reasoning tokens per turn",
        y="geometric-mean best speedup (x)",
    )


# --------------------------------------------------------------------------- best speedup per task


def best_speedup_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """Per model and task, the best speedup over its runs at turn limit k (None: no correct kernel)."""
    tasks = [query.task] if query.task else selectors.tasks_for_arch(gen, query.arch)
    by_model = _runs_by_model(
        selectors.model_rows(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language), query.task
    )
    series = []
    for model, runs in by_model.items():
        best: dict[str, float | None] = {t: None for t in tasks}
        for rows in runs.values():
            for r in rows:
                if r.best_speedup is not None and r.task in best:
                    best[r.task] = max(best[r.task] or 0.0, r.best_speedup)
        series.append({"model": model, "runs": len(runs), "speedups": best})
    series.sort(key=lambda s: (-(ranking.geometric_mean(s["speedups"].values()) or 0), s["model"]))
    names, note = _capped([s["model"] for s in series])
    has_speedup = any(v is not None for s in series for v in s["speedups"].values())
    return {
        "where": _where(query),
        "tasks": tasks,
        "k": query.k,
        "series": series[: len(names)],
        "note": note,
        "empty": "" if has_speedup else "No timed correct kernel from a model here yet.",
    }


def best_speedup_figure(data: dict[str, Any]) -> PlainFigure:
    """Horizontal bars, tasks down the side: long task names stay readable at 17 tasks x several models."""
    fig = _figure()
    tasks = list(reversed(data["tasks"]))  # first task on top
    for s in data["series"]:
        fig.add_trace(
            _trace(
                "bar",
                y=tasks,
                x=[s["speedups"].get(t) for t in tasks],
                orientation="h",
                marker={"color": model_color(s["model"])},
                name=plot_text(s["model"]),
                hovertemplate="%{y}: %{x:.2f}x<extra></extra>",
            )
        )
    _library_line(fig, axis="x")
    fig.update_layout(barmode="group", bargap=0.25)
    height = max(380, 120 + len(tasks) * (8 * max(1, len(data["series"])) + 12))
    fig.update_yaxes(automargin=True, tickfont={"size": 11})
    return _layout(
        fig,
        title=f"Best speedup per task at k={data['k']} (vs library) — {data['where']}{data['note']}",
        x="speedup vs library (x)",
        y="",
        height=min(height, 2400),
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
    fig = _figure()
    fig.add_trace(
        _trace(
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
            _trace(
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
            _trace(
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
    _library_line(fig, axis="x")
    where = data["task"] or f"all tasks on {data['arch']}"
    return _layout(
        fig, title=f"Speedup of correct kernels ({where}, n={data['n']})", x="speedup vs library (x)", y="kernels"
    )


# --------------------------------------------------------------------------- Hopper vs Blackwell


def arch_comparison_data(gen: Generation, query: BoardQuery) -> dict[str, Any]:
    """Per model id, its best run (highest geometric-mean best speedup over the tasks, or the chosen task) on
    each architecture at turn limit k."""
    models: dict[str, dict[str, Any]] = {}
    for arch in ARCHES:
        by_model = _runs_by_model(selectors.model_rows(gen, arch=arch, k=query.k, language=query.language), query.task)
        for model, runs in by_model.items():
            entry = models.setdefault(model, {"model_id": model, "label": model})
            for run_id, rows in runs.items():
                geomean = ranking.geometric_mean(r.best_speedup for r in rows)
                best = entry.get(arch)
                if best is None or (geomean or 0) > (best["geomean_speedup"] or 0):
                    entry[arch] = {
                        "run_id": run_id,
                        "geomean_speedup": geomean,
                        "tasks_solved": sum(1 for r in rows if r.best_speedup is not None),
                        "tasks": len(rows),
                    }
    ordered = sorted(
        models.values(), key=lambda m: (-max((m.get(a) or {}).get("geomean_speedup") or 0 for a in ARCHES), m["label"])
    )
    names, note = _capped([m["label"] for m in ordered])
    # A comparison needs a model measured on both: with each model on one architecture the chart compared
    # nothing (the page leaves it out then).
    paired = any(all(m.get(a) for a in ARCHES) for m in ordered)
    return {
        "k": query.k,
        "task": query.task,
        "arches": list(ARCHES),
        "models": ordered[: len(names)],
        "note": note,
        "empty": "" if paired else "No model has runs on both Hopper and Blackwell yet: nothing to compare.",
    }


def arch_comparison_figure(data: dict[str, Any]) -> PlainFigure:
    fig = _figure()
    labels = [plot_text(m["label"]) for m in data["models"]]
    for arch in data["arches"]:
        cells = [m.get(arch) or {} for m in data["models"]]
        fig.add_trace(
            _trace(
                "bar",
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
        title=f"Hopper vs Blackwell: geometric-mean best speedup at k={data['k']} ({data['task'] or 'all tasks'}){data['note']}",
        x="model",
        y="geo-mean speedup (x)",
        height=480,  # the model names under the bars take room from the plot
    )


# --------------------------------------------------------------------------- registry

CHARTS: dict[str, tuple[Callable[[Generation, BoardQuery], dict], Callable[[dict], PlainFigure], bool]] = {
    # name: (data function, figure function, needs model runs)
    "correctness": (correctness_data, correctness_figure, True),
    "speedup-by-turn": (speedup_by_turn_data, speedup_by_turn_figure, True),
    "fast-p": (fast_p_data, fast_p_figure, True),
    "reasoning": (reasoning_data, reasoning_figure, True),
    "best-speedup": (best_speedup_data, best_speedup_figure, True),
    "distribution": (distribution_data, distribution_figure, False),
    "arch-comparison": (arch_comparison_data, arch_comparison_figure, True),
}


def as_version(result: dict[str, Any], v: int) -> dict[str, Any]:
    """A chart (`chart`) as the API's version `v` names its data: the reference kernels of `distribution` carry their
    `speedup_factor` (`speedup` in version 1); every other chart's data names its own axes and is the same in both."""
    data = result.get("data") or {}
    if v >= 2 or result.get("chart") != "distribution":
        return result
    points = {
        key: [serializers.to_version(p, v) for p in data.get(key) or []] for key in ("references", "negative_controls")
    }
    return {**result, "data": {**data, **points}}


def figure_title(figure: dict[str, Any]) -> str:
    """A figure's title as plain text, for the page's heading above the chart (escaped there by the template)."""
    title = (figure.get("layout") or {}).get("title") or {}
    return html.unescape(str(title.get("text") or "").replace("<br>", " "))


def figure_json(figure: PlainFigure) -> dict[str, Any]:
    """The figure as plain JSON data."""
    return json.loads(json.dumps(figure.to_dict()))


def chart(gen: Generation, name: str, query: BoardQuery) -> dict[str, Any]:
    """{"chart", "data", "figure"} for one chart, cached per results generation."""
    data_fn, figure_fn, _ = CHARTS[name]

    def compute() -> dict[str, Any]:
        data = data_fn(gen, query)
        empty = data.get("empty") or ""
        figure = empty_figure(empty) if empty else figure_fn(data)
        return {"chart": name, "data": data, "empty": empty, "figure": figure_json(figure)}

    return gen.get(("chart", name, _key_query(name, query)), compute, scope=MODELS if CHARTS[name][2] else KERNELS)


def _key_query(name: str, query: BoardQuery) -> BoardQuery:
    """Only the parameters a chart depends on, so pages that differ in the others share one cached copy."""
    if name == "distribution":
        return dataclasses.replace(query, k=0, sort="")
    if name == "arch-comparison":
        return BoardQuery(arch="", task=query.task, k=query.k, gpu="", sort="", language=query.language)
    if name in ("correctness", "speedup-by-turn"):
        return dataclasses.replace(query, k=0, sort="")  # every turn is drawn: k does not matter
    return dataclasses.replace(query, sort="")
