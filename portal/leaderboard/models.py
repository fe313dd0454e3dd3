"""One row that says which generation of results the leaderboards show.

Every process (gunicorn workers, RQ workers, management commands) sees the same row, so a result
recorded anywhere invalidates the cached tables everywhere; the cached values are keyed by the token, in each
process's memory and in the shared Redis store (cache.py)."""

from __future__ import annotations

from django.db import models


class LeaderboardVersion(models.Model):
    # A random token rather than a counter: a rolled-back transaction can bring back an old counter value,
    # never an old token, so a cache entry can never be mistaken for the current generation.
    scope = models.CharField(max_length=32, primary_key=True)
    token = models.CharField(max_length=32)
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.scope}: {self.token}"
