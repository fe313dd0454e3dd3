from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from portal.accounts import throttle
from portal.accounts.forms import LoginForm, SignupForm, TokenForm
from portal.accounts.models import ApiToken
from portal.accounts.services import token_create, token_revoke

_login = auth_views.LoginView.as_view(authentication_form=LoginForm)


def _too_many(request: HttpRequest, wait: int, what: str, template: str, form) -> HttpResponse:
    minutes = (wait + 59) // 60
    response = render(
        request,
        template,
        {"form": form, "throttled": f"Too many {what}. Try again in {minutes} minute{'s' if minutes > 1 else ''}."},
        status=429,
    )
    response["Retry-After"] = str(wait)
    return response


def _throttled_login(request: HttpRequest, view) -> HttpResponse:
    """`view` (a login view) behind the failed-login throttle (portal/accounts/throttle.py). A redirect is a
    success; anything else answered to a POST is a failure."""
    if request.method != "POST":
        return view(request)
    address = throttle.client_address(request)
    username = request.POST.get("username", "")
    wait = throttle.login_seconds_blocked(address, username)
    if wait:
        return _too_many(request, wait, "failed logins", "registration/login.html", LoginForm(request, data=None))
    response = view(request)
    if response.status_code == 302:
        throttle.login_succeeded(address, username)
    else:
        throttle.login_failed(address, username)
    return response


@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    """Django's login, behind the failed-login throttle."""
    return _throttled_login(request, _login)


@require_http_methods(["GET", "POST"])
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login (/admin/login/), behind the same throttle as the site's."""
    return _throttled_login(request, admin.site.login)


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    next_url = _next_url(request)
    form = SignupForm()
    if request.method == "POST":
        address = throttle.client_address(request)
        wait = throttle.signup_seconds_blocked(address)
        if wait:
            # Decided before the form is read, answered with an empty form: nothing in a refusal says whether
            # the name asked for is taken (the bound form's errors said so, without limit).
            return _too_many(request, wait, "sign-up attempts", "accounts/signup.html", form)
        throttle.signup_attempted(address)  # any answer below may say that a name is taken: each one counts
        form = SignupForm(request.POST)
        if form.is_valid():
            user = form.save()
            throttle.signup_recorded(address)
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! You can now submit kernels.")
            return redirect(next_url or "home")
    return render(request, "accounts/signup.html", {"form": form, "next": next_url})


def _next_url(request: HttpRequest) -> str:
    """Where to go after signing up: `next` (as the login page carries it) when it stays on this site, else ""."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return ""


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        _, new_token = token_create(user=request.user, name=data["name"], scope=data["scope"], days=data["days"])
        form = TokenForm()
    response = render(
        request,
        "accounts/tokens.html",
        {
            "form": form,
            "tokens": ApiToken.objects.filter(user=request.user),
            "new_token": new_token,
            "max_days": settings.API_TOKEN_MAX_DAYS,
        },
    )
    response["Cache-Control"] = "no-store"  # the page may show a token once: never cache it
    return response


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    if token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "Token revoked.")
    return redirect("accounts:tokens")
