from django.urls import path

from portal.catalog import views

app_name = "catalog"

urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("tasks/<slug:slug>/", views.task_detail, name="task_detail"),
    path("tasks/<slug:slug>/starter.cu", views.task_starter, name="task_starter"),
    path("packs/<slug:slug>/", views.pack_detail, name="pack_detail"),
    path("packs/<slug:slug>/download", views.pack_download, name="pack_download"),
]
