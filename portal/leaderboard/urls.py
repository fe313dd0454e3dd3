from django.urls import path

from portal.leaderboard import compare_views, views

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="models"),
    path("leaderboard/kernels/", views.kernel_leaderboard, name="kernels"),
    path("compare/", compare_views.compare_page, name="compare"),
    path("evidence/evaluations/<uuid:evaluation_id>/", views.evaluation_detail, name="evaluation"),
    path(
        "evidence/evaluations/<uuid:evaluation_id>/artifacts/<str:name>",
        views.evaluation_artifact,
        name="artifact",
    ),
    path("evidence/evaluations/<uuid:evaluation_id>/trace.jsonl", views.evaluation_trace, name="evaluation_trace"),
    path("evidence/submissions/<int:submission_id>/bundle.zip", views.submission_bundle, name="submission_bundle"),
    path("evidence/runs/<int:run_id>/bundle.zip", views.run_bundle, name="run_bundle"),
    path("evidence/runs/<int:run_id>/trajectories.json", views.run_trajectories, name="run_trajectories"),
]
