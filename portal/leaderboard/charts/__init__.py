"""The plotly charts: figures built on the server as plain plotly JSON (`figures.py`, `model_charts.py`,
`kernel_charts.py`) from the boards' reads and the per-turn reads (`turns.py`), each cached per results generation
and served as data at /api/v2/leaderboard/charts/<name> (`selectors.py`, `api.py`); each model's colour from
`palette.py`. The board pages embed them and draw them with the vendored plotly.js basic bundle (static/vendor/)."""
