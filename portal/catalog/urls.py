from django.urls import path

from portal.catalog import api, views

app_name = "catalog"

urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("tasks/<slug:slug>/", views.task_detail, name="task_detail"),
    path("tasks/<slug:slug>/starter.cu", views.task_starter, name="task_starter"),
    path("tasks/<slug:slug>/starter_triton.py", views.task_starter_triton, name="task_starter_triton"),
    path("packs/<slug:slug>/", views.pack_detail, name="pack_detail"),
    path("packs/<slug:slug>/download", views.pack_download, name="pack_download"),
    path("api/v1/registry", api.registry, name="api_registry"),
]
