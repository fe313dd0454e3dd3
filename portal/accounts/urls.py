from django.contrib.auth import views as auth_views
from django.urls import path

from portal.accounts import views

app_name = "accounts"

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/tokens/", views.tokens, name="tokens"),
    path("accounts/tokens/<int:token_id>/revoke", views.token_revoke_view, name="token_revoke"),
]
