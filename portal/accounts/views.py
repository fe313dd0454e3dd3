from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from portal.accounts.forms import SignupForm, TokenForm
from portal.accounts.models import ApiToken
from portal.accounts.services import token_create, token_revoke


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
