from django.urls import path

from portal.leaderboard import api

app_name = "leaderboard_api"

urlpatterns = [
    path("kernels", api.kernels, name="kernels"),
    path("kernels/traces.jsonl", api.kernel_traces, name="kernel_traces"),
    path("models", api.models, name="models"),
    path("summary", api.summary, name="summary"),
    path("charts/<slug:name>", api.chart, name="chart"),
]
