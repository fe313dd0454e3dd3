from django.urls import path

from portal.datasets import views

app_name = "datasets"

# Versions are named v1, v2, ... in URLs (a slug, not an id: a version is public by construction).
urlpatterns = [
    path("datasets/", views.snapshot_list, name="list"),
    path("datasets/<slug:label>/<path:path>", views.snapshot_file, name="file"),
    path("api/v2/results-datasets", views.api_snapshots, name="api_list"),
]
