"""The boards: a task's kernel board and the model board. The ranking rules (`ranking.py`), the reads every other
part of the leaderboard builds on (`selectors.py`), their JSON and CSV (`serializers.py`), the two pages
(`views.py`), their API (`api.py`) and the task page's panel (`task_highlights.py`)."""
