"""Which colour (and, past the palette, which dash and marker) each model gets on every chart: the boards' charts,
/compare/ and anything else that plots models. Colours are handed out over the sorted set of every model the
portal shows, so no two models share a style while there are no more models than styles, and a model keeps its
colour from chart to chart and page to page. A hash of the name could not promise the first: two of seven
models once drew in one red. Pure; charts/selectors.py reads the set of models."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Okabe and Ito's colour-blind-safe set (less its yellow, too faint on white, and its black, kept for text) then
# the darker tones of Paul Tol's "muted" set: twelve hues a reader with any common colour-vision deficiency still
# tells apart by hue or lightness, every one readable as a thin line on a white plot.
PALETTE = (
    "#0072b2",  # blue
    "#e69f00",  # orange
    "#009e73",  # bluish green
    "#d55e00",  # vermillion
    "#cc79a7",  # reddish purple
    "#56b4e9",  # sky blue
    "#882255",  # wine
    "#999933",  # olive
    "#332288",  # indigo
    "#44aa99",  # teal
    "#aa4499",  # purple
    "#5b6470",  # slate
)
# Beyond the palette the colours repeat with another dash, marker and bar pattern, so two models still differ.
DASHES = ("solid", "dash", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up")
PATTERNS = ("", "/", "x", ".")


@dataclass(frozen=True)
class SeriesStyle:
    """How one model's series is drawn on every chart."""

    color: str  # line and marker colour
    dash: str  # line dash where a measure does not set its own (plotly's names)
    symbol: str  # marker symbol (plotly's names)
    pattern: str  # bar fill pattern, "" for plain (plotly's names)


def _order(name: str) -> tuple[str, str]:
    return (name.casefold(), name)


def style_at(index: int) -> SeriesStyle:
    """The index-th style: palette colour index mod P, with dash and marker index div P."""
    variant = (index // len(PALETTE)) % len(DASHES)
    return SeriesStyle(PALETTE[index % len(PALETTE)], DASHES[variant], SYMBOLS[variant], PATTERNS[variant])


class ModelStyles:
    """The style of each model of a set: the models sorted, the i-th gets `style_at(i)`. A model outside the set
    (a run that became visible between two reads) takes a style after all of the set's, never one of theirs."""

    def __init__(self, models: Iterable[str]) -> None:
        self._index = {m: i for i, m in enumerate(sorted(set(models), key=_order))}

    def __call__(self, model: str) -> SeriesStyle:
        return style_at(self._index[model]) if model in self._index else self.including([model])(model)

    def including(self, models: Iterable[str]) -> ModelStyles:
        """These styles, plus styles for any of `models` not in the set, after the set's, in sorted order."""
        extra = sorted(set(models) - set(self._index), key=_order)
        if not extra:
            return self
        wider = ModelStyles([])
        wider._index = {**self._index, **{m: len(self._index) + i for i, m in enumerate(extra)}}
        return wider
