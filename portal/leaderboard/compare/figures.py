"""The model comparison's figure: both models' correct and correct-plus-verified rates within every turn limit,
drawn as the board's correctness chart draws them: its layout, its colour per model, its line per measure."""

from __future__ import annotations

from typing import Any

from portal.leaderboard.charts.figures import PlainFigure, layout, plot_text, trace
from portal.leaderboard.charts.palette import ModelStyles


def curves_figure(data: dict[str, Any], styles: ModelStyles) -> PlainFigure:
    """Correct and correct-plus-verified rates against the turn limit, both models on one chart."""
    fig = PlainFigure()
    turns: list[int] = []
    for curve in data["curves"]:
        style = styles(curve["model_id"])
        points = curve["points"]
        turns = max(turns, [p["k"] for p in points], key=len)
        for field, label, dash in (  # as on the board: correct solid, correct + verified dotted
            ("correct_rate", "correct", "solid"),
            ("correct_arch_rate", "correct + verified", "dot"),
        ):
            fig.add_trace(
                trace(
                    "scatter",
                    x=[p["k"] for p in points],
                    y=[None if p[field] is None else round(100 * p[field], 2) for p in points],
                    customdata=[f"{p[field.replace('_rate', '')]}/{p['n']}" for p in points],
                    mode="lines+markers",
                    line={"color": style.color, "dash": dash},
                    marker={"color": style.color, "symbol": style.symbol},
                    name=f"{plot_text(curve['model'])} · {label}",
                    legendgroup=plot_text(curve["model"]),
                    hovertemplate="turn %{x}: %{y:.1f}% (%{customdata})<extra></extra>",
                )
            )
    fig.update_xaxes(tickvals=turns, type="linear")
    fig.update_yaxes(range=[0, 105])
    where = data["task"] or "all tasks"
    return layout(fig, title=f"Correct (solid) and correct + verified (dotted) within t turns — {where}",
                  x="turn limit t", y="trajectories (%)", height=460)  # fmt: skip
