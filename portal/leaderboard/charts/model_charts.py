"""The model charts, each a data function (the boards' model rows and the per-turn reads of turns.py -> plain JSON
data, served by its JSON endpoint) and a pure figure function (that data -> plotly figure): correctness and best
speedup within t turns, fast_p, reasoning tokens against speedup, best speedup per task, Hopper against
Blackwell."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evaluator.both_sides.arches import ARCHES
from portal.leaderboard.boards import ranking, selectors
from portal.leaderboard.boards.selectors import BoardQuery
from portal.leaderboard.cache import Generation
from portal.leaderboard.charts import turns
from portal.leaderboard.charts.figures import PlainFigure, layout, library_line, plot_text, trace
from portal.leaderboard.charts.palette import ModelStyles

MAX_MODELS = 12  # series per chart; the title says when more models exist
FAST_P = [round(0.05 * i, 2) for i in range(41)]  # p = 0, 0.05, ... 2.0


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


def correctness_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    fig = PlainFigure()
    for s in data["series"]:
        style = styles(s["model"])
        for kind, dash in (("correct", "solid"), ("verified", "dot")):  # the dash says the measure, so the marker
            # alone tells two models of one colour apart (past the palette's size)
            fig.add_trace(
                trace(
                    "scatter",
                    x=data["turns"],
                    y=[round(100 * c / s["n"], 2) for c in s[kind]],
                    customdata=[f"{c}/{s['n']}" for c in s[kind]],
                    mode="lines+markers",
                    line={"color": style.color, "dash": dash},
                    marker={"color": style.color, "symbol": style.symbol},
                    name=plot_text(s["model"]) + (" · correct + verified" if kind == "verified" else " · correct"),
                    legendgroup=plot_text(s["model"]),
                    hovertemplate="turn %{x}: %{y:.1f}% (%{customdata})<extra></extra>",
                )
            )
    fig.update_xaxes(tickvals=data["turns"], type="linear")
    fig.update_yaxes(range=[0, 105])
    return layout(
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


def speedup_by_turn_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    fig = PlainFigure()
    for s in data["series"]:
        style = styles(s["model"])
        fig.add_trace(
            trace(
                "scatter",
                x=data["turns"],
                y=[None if v is None else round(v, 4) for v in s["geomean"]],
                mode="lines+markers",
                line={"color": style.color, "dash": style.dash},
                marker={"color": style.color, "symbol": style.symbol},
                name=plot_text(s["model"]),
                legendgroup=plot_text(s["model"]),  # the model, whole, where a phone shortens the name
                customdata=[s["runs"]] * len(data["turns"]),
                hovertemplate="turn %{x}: %{y:.2f}x (mean of %{customdata} runs)<extra></extra>",
            )
        )
    library_line(fig)
    fig.update_xaxes(tickvals=data["turns"], type="linear")
    return layout(
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


def fast_p_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    fig = PlainFigure()
    for s in data["series"]:
        style = styles(s["model"])
        fig.add_trace(
            trace(
                "scatter",
                x=data["p"],
                y=[round(100 * v, 2) for v in s["fast_p"]],
                mode="lines",
                line={"color": style.color, "dash": style.dash},
                name=plot_text(s["model"]),
                legendgroup=plot_text(s["model"]),  # the model, whole, where a phone shortens the name
                hovertemplate="p=%{x}: %{y:.1f}% of tasks<extra></extra>",
            )
        )
    fig.add_vline(x=1.0, line={"color": "#5b6470", "dash": "dash", "width": 1})
    fig.update_yaxes(range=[0, 105])
    fig.update_xaxes(range=[-0.1, 2.05])  # the x tick "0" clear of the y tick "0" at the corner
    return layout(
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


def reasoning_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    fig = PlainFigure()
    for s in data["series"]:
        style = styles(s["model"])
        fig.add_trace(
            trace(
                "scatter",
                x=[p["reasoning_tokens"] for p in s["points"]],
                y=[p["speedup"] for p in s["points"]],
                customdata=[p["run_id"] for p in s["points"]],
                mode="markers",
                marker={"size": 9, "color": style.color, "symbol": style.symbol},
                name=plot_text(s["model"]),
                legendgroup=plot_text(s["model"]),  # the model, whole, where a phone shortens the name
                hovertemplate="run %{customdata}: %{x:.0f} tokens/turn, %{y:.2f}x<extra></extra>",
            )
        )
    library_line(fig)
    return layout(
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


def best_speedup_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    """Horizontal bars, tasks down the side: long task names stay readable at 20 tasks x several models."""
    fig = PlainFigure()
    tasks = list(reversed(data["tasks"]))  # first task on top
    for s in data["series"]:
        style = styles(s["model"])
        fig.add_trace(
            trace(
                "bar",
                y=tasks,
                x=[s["speedups"].get(t) for t in tasks],
                orientation="h",
                marker={"color": style.color, "pattern": {"shape": style.pattern}},
                name=plot_text(s["model"]),
                legendgroup=plot_text(s["model"]),  # the model, whole, where a phone shortens the name
                hovertemplate="%{y}: %{x:.2f}x<extra></extra>",
            )
        )
    library_line(fig, axis="x")
    fig.update_layout(barmode="group", bargap=0.25)
    height = max(380, 120 + len(tasks) * (8 * max(1, len(data["series"])) + 12))
    fig.update_yaxes(automargin=True, tickfont={"size": 11})
    return layout(
        fig,
        title=f"Best speedup per task at k={data['k']} (vs library) — {data['where']}{data['note']}",
        x="speedup vs library (x)",
        y="",
        height=min(height, 2400),
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


def arch_comparison_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    """One colour per architecture (the models are the x axis): `styles` is unused."""
    fig = PlainFigure()
    labels = [plot_text(m["label"]) for m in data["models"]]
    for arch in data["arches"]:
        cells = [m.get(arch) or {} for m in data["models"]]
        fig.add_trace(
            trace(
                "bar",
                x=labels,
                y=[c.get("geomean_speedup") for c in cells],
                customdata=[f"{c.get('tasks_solved', 0)}/{c.get('tasks', 0)}" for c in cells],
                name=ARCHES[arch].label,
                hovertemplate="%{x}: %{y:.2f}x over %{customdata} tasks solved<extra></extra>",
            )
        )
    library_line(fig)
    fig.update_layout(barmode="group")
    return layout(
        fig,
        title=f"Hopper vs Blackwell: geometric-mean best speedup at k={data['k']} ({data['task'] or 'all tasks'}){data['note']}",
        x="model",
        y="geo-mean speedup (x)",
        height=480,  # the model names under the bars take room from the plot
    )
