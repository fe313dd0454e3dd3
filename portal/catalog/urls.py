from django.urls import path

from portal.catalog import api, views

app_name = "catalog"

urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("tasks/<slug:slug>/", views.task_detail, name="task_detail"),
    path("packs/<slug:slug>/", views.pack_detail, name="pack_detail"),
    path("packs/<slug:slug>/download", views.pack_download, name="pack_download"),
    path("api/v2/registry", api.registry, name="api_registry"),
    # A starter by its file name in the languages registry (starter.cu ...); any other name is a 404. Last
    # here, and no other app routes below tasks/<slug>/, so it shadows nothing.
    path("tasks/<slug:slug>/<str:filename>", views.task_starter, name="task_starter"),
]
