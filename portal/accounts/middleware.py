"""A banned user's session ends on their next request, however the ban was set (the ban service deletes the
stored sessions too; this also covers a ban ticked on the profile in the admin, and cached sessions)."""

from __future__ import annotations

from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

from portal.accounts.services import user_is_banned


class BannedUserLogoutMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user_is_banned(user):
            logout(request)  # flushes the session; request.user is anonymous from here on
        return self.get_response(request)
