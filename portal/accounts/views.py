from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from portal.accounts import throttle
from portal.accounts.forms import LoginForm, SignupForm, TokenForm
from portal.accounts.models import ApiToken
from portal.accounts.services import token_create, token_revoke

_login = auth_views.LoginView.as_view(authentication_form=LoginForm)


@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    """Django's login, behind a failed-attempt throttle per client address and username."""
    if request.method != "POST":
        return _login(request)
    address = request.META.get("REMOTE_ADDR", "")
    username = request.POST.get("username", "")
    wait = throttle.seconds_blocked(address, username)
    if wait:
        minutes = (wait + 59) // 60
        form = LoginForm(request, data=None)
        response = render(
            request,
            "registration/login.html",
            {
                "form": form,
                "throttled": f"Too many failed logins. Try again in {minutes} minute{'s' if minutes > 1 else ''}.",
            },
            status=429,
        )
        response["Retry-After"] = str(wait)
        return response
    response = _login(request)
    if response.status_code == 302:
        throttle.clear(address, username)
    else:
        throttle.record_failure(address, username)
    return response


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Welcome! You can now submit kernels.")
        return redirect("home")
    return render(request, "accounts/signup.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        _, new_token = token_create(user=request.user, name=form.cleaned_data["name"])
        form = TokenForm()
    response = render(
        request,
        "accounts/tokens.html",
        {"form": form, "tokens": ApiToken.objects.filter(user=request.user), "new_token": new_token},
    )
    response["Cache-Control"] = "no-store"  # the page may show a token once: never cache it
    return response


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    if token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "Token revoked.")
    return redirect("accounts:tokens")
