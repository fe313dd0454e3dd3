from django.contrib import admin
from django.urls import include, path

from portal.accounts import views as accounts_views
from portal.catalog import views as catalog_views
from portal.core import views as core_views
from portal.core.api_versions import v1_routes

urlpatterns = [
    path("", catalog_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("api/", core_views.api_docs, name="api_docs"),
    path("glossary/", core_views.glossary, name="glossary"),
    path("", include("portal.catalog.urls")),
    path("", include("portal.leaderboard.urls")),
    path("api/v2/leaderboard/", include("portal.leaderboard.api_urls")),
    path("", include("portal.accounts.urls")),
    path("", include("portal.submissions.urls")),
    path("", include("portal.agent.urls")),
    path("", include("portal.fixit.urls")),
    path("", include("portal.datasets.urls")),
    # The RQ dashboard is registered inside the admin by django-rq: /admin/django_rq/dashboard/ (staff only).
    # Before the admin's own URLs: its login goes through the site's failed-login throttle.
    path("admin/login/", accounts_views.admin_login, name="admin_login"),
    path("admin/", admin.site.urls),
]
# Version 1 of the API: every /api/v2/ route above, answered with version 1's names (portal/core/api_versions.py).
urlpatterns += v1_routes(urlpatterns)
