from django.urls import path

from portal.leaderboard.boards import views as boards
from portal.leaderboard.compare import views as compare
from portal.leaderboard.evidence import views as evidence

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", boards.leaderboard, name="models"),
    path("leaderboard/kernels/", boards.kernel_leaderboard, name="kernels"),
    path("compare/", compare.compare_page, name="compare"),
    path("evidence/evaluations/<uuid:evaluation_id>/", evidence.evaluation_detail, name="evaluation"),
    path(
        "evidence/evaluations/<uuid:evaluation_id>/artifacts/<str:name>",
        evidence.evaluation_artifact,
        name="artifact",
    ),
    path("evidence/evaluations/<uuid:evaluation_id>/trace.jsonl", evidence.evaluation_trace, name="evaluation_trace"),
    path("evidence/submissions/<int:submission_id>/bundle.zip", evidence.submission_bundle, name="submission_bundle"),
    path("evidence/runs/<int:run_id>/bundle.zip", evidence.run_bundle, name="run_bundle"),
    path("evidence/runs/<int:run_id>/trajectories.json", evidence.run_trajectories, name="run_trajectories"),
]
