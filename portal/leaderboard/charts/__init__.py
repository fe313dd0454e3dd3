"""The plotly charts: figures built on the server as plain plotly JSON (`figures.py`, `model_charts.py`,
`kernel_charts.py`) from the boards' reads and the per-turn reads (`turns.py`), each cached per results generation
and served as data at /api/v1/leaderboard/charts/<name> (`selectors.py`, `api.py`); plotly.js served from the plotly
package (`finders.py`). The board pages embed them."""
