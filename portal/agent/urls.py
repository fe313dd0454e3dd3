from django.urls import path

from portal.agent import views

app_name = "agent"

urlpatterns = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/mine/", views.run_mine, name="run_mine"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/trajectories/<int:trajectory_id>/", views.trajectory_detail, name="trajectory_detail"),
    path(
        "runs/<int:run_id>/trajectories/<int:trajectory_id>/export.json",
        views.trajectory_download,
        name="trajectory_export",
    ),
    path("api/v2/runs", views.api_runs, name="api_runs"),
    path("api/v2/runs/<int:run_id>", views.api_run, name="api_run"),
]
