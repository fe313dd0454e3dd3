from django.urls import path

from portal.leaderboard.boards import api as boards
from portal.leaderboard.charts import api as charts
from portal.leaderboard.evidence import api as evidence

app_name = "leaderboard_api"

urlpatterns = [
    path("kernels", boards.kernels, name="kernels"),
    path("kernels/traces.jsonl", evidence.kernel_traces, name="kernel_traces"),
    path("models", boards.models, name="models"),
    path("summary", boards.summary, name="summary"),
    path("charts/<slug:name>", charts.chart, name="chart"),
]
