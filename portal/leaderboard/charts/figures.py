"""What every chart looks like: plotly figures as the plain dict plotly.js draws (`PlainFigure`), label text made
safe, the shared layout, the library's 1.0x line, and a figure as plain JSON. Pure; the chart modules and
/compare/ build on it (each model's colour comes from palette.py)."""

from __future__ import annotations

import html
import json
from typing import Any

from portal.leaderboard.charts.palette import PALETTE

# Series that are not models (the kernel distribution, Hopper against Blackwell); models are styled by palette.py.
COLORS = list(PALETTE)


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


def trace(kind: str, **properties) -> dict:
    return {"type": kind, **properties}


def layout(fig: PlainFigure, *, title: str, x: str, y: str, height: int = 400) -> PlainFigure:
    # Title and legend are placed against the figure's edges (yref "container") and reserve their own margin: a
    # legend placed at a fraction of the plot's height below it (y=-0.2) lands over the axis title on short charts
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
    fig = PlainFigure()
    fig.update_layout(
        height=160,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[{"text": html.escape(message), "showarrow": False, "x": 0.5, "y": 0.5, "xref": "paper",
                      "yref": "paper", "font": {"size": 14, "color": "#5b6470"}}],
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )  # fmt: skip
    return fig


def library_line(fig: PlainFigure, *, axis: str = "y") -> None:
    """The vendor library's speed: above the line a kernel beats cuBLAS/cuDNN."""
    line = {"color": "#5b6470", "dash": "dash", "width": 1}
    if axis == "y":
        fig.add_hline(y=1.0, line=line, annotation_text="library 1.0x", annotation_position="top left")
    else:
        fig.add_vline(x=1.0, line=line, annotation_text="library 1.0x", annotation_position="top right")


def figure_title(figure: dict[str, Any]) -> str:
    """A figure's title as plain text, for the page's heading above the chart (escaped there by the template)."""
    title = (figure.get("layout") or {}).get("title") or {}
    return html.unescape(str(title.get("text") or "").replace("<br>", " "))


def figure_json(figure: PlainFigure) -> dict[str, Any]:
    """The figure as plain JSON data."""
    return json.loads(json.dumps(figure.to_dict()))
