"""Evidence: the evaluation page (`views.evaluation_detail`, the SASS listing of `sass_view.py`), every artifact
checked against its sha256, bundles of a submission or a model run, trajectories and FlashInfer Trace JSONL
(`selectors.py` reads them, `downloads.py` holds the pure builders), under /evidence/ and the board's traces under
/api/v2/leaderboard/ (`api.py`)."""
