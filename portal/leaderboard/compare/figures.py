"""The model comparison's figure: both models' correct and correct-plus-verified rates against the turn limit,
in the colours and layout of the board's charts (charts/figures.py)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from portal.leaderboard.boards import ranking
from portal.leaderboard.charts.figures import layout, model_color, plot_text


def curves_figure(data: dict[str, Any]) -> go.Figure:
    """Correct and correct-plus-verified rates against the turn limit, both models on one chart."""
    fig = go.Figure()
    for curve in data["curves"]:
        color = model_color(curve["model"])
        for field, label, dash in (  # as on the board: correct solid, correct + verified dotted
            ("correct_rate", "correct", "solid"),
            ("correct_arch_rate", "correct + verified", "dot"),
        ):
            points = curve["points"]
            fig.add_trace(
                go.Scatter(
                    x=[p["k"] for p in points],
                    y=[None if p[field] is None else round(100 * p[field], 2) for p in points],
                    customdata=[f"{p[field.replace('_rate', '')]}/{p['n']}" for p in points],
                    mode="lines+markers",
                    line={"color": color, "dash": dash},
                    name=f"{plot_text(curve['model'])} · {label}",
                    hovertemplate="k=%{x}: %{y:.1f}% (%{customdata})<extra></extra>",
                )
            )
    fig.update_xaxes(tickvals=list(ranking.TURN_LIMITS), type="linear")
    fig.update_yaxes(range=[0, 105])
    where = data["task"] or "all tasks"
    return layout(fig, title=f"Per turn limit ({where})", x="turn limit k", y="trajectories (%)")
