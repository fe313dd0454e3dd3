from django.urls import path

from portal.fixit import views

app_name = "fixit"

urlpatterns = [
    path("fixit/", views.dataset_list, name="dataset_list"),
    path("fixit/build", views.dataset_build, name="dataset_build"),
    path("fixit/<slug:name>/v<int:version>/", views.dataset_detail, name="dataset_detail"),
    path("fixit/<slug:name>/v<int:version>/files/<path:path>", views.dataset_file, name="dataset_file"),
    path("api/v2/fixit/repair-runs", views.api_repair_runs, name="api_repair_runs"),
    path(
        "api/v2/fixit/repair-runs/<int:run_id>/explanations",
        views.api_repair_run_explanations,
        name="api_repair_run_explanations",
    ),
    path("api/v2/fixit/runs/<int:run_id>/tuned-on", views.api_run_tuned_on, name="api_run_tuned_on"),
    path("api/v2/datasets", views.api_datasets, name="api_datasets"),
    path("api/v2/datasets/<slug:name>/<int:version>", views.api_dataset, name="api_dataset"),
    path(
        "api/v2/datasets/<slug:name>/<int:version>/files/<path:path>", views.api_dataset_file, name="api_dataset_file"
    ),
]
