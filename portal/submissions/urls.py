from django.urls import path

from portal.submissions import views

app_name = "submissions"

urlpatterns = [
    path("submit/", views.submit, name="submit"),
    path("submissions/mine/", views.mine, name="mine"),
    path("submissions/<int:submission_id>/", views.detail, name="detail"),
    path("submissions/<int:submission_id>/verdict", views.verdict_fragment, name="verdict_fragment"),
    path("workers/", views.workers, name="workers"),
    path("api/v2/submissions", views.api_submit, name="api_submit"),
    path("api/v2/submissions/<int:submission_id>", views.api_submission, name="api_submission"),
    path("api/v2/evaluations/<uuid:evaluation_id>", views.api_evaluation, name="api_evaluation"),
]
