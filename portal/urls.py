from django.contrib import admin
from django.urls import include, path

from portal.core import views as core_views

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("", include("portal.catalog.urls")),
    path("", include("portal.leaderboard.urls")),
    path("api/v1/leaderboard/", include("portal.leaderboard.api_urls")),
    path("", include("portal.accounts.urls")),
    path("", include("portal.submissions.urls")),
    path("", include("portal.agent.urls")),
    path("", include("portal.fixit.urls")),
    # The RQ dashboard is registered inside the admin by django-rq: /admin/django_rq/dashboard/ (staff only).
    path("admin/", admin.site.urls),
]
