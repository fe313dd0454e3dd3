"""Per-user state beside Django's User: bans and API tokens (stored hashed, shown once)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    # A banned user cannot log in, submit or use tokens; their entries leave every public table,
    # but their submissions and evidence are kept for audit.
    is_banned = models.BooleanField(default=False)
    banned_reason = models.TextField(blank=True)
    banned_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"profile of {self.user}"


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        WRITE = "write", "read and write"  # everything the account may do through the API
        READ = "read", "read only"  # GET and HEAD only: no submission, run, dataset or any other write

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, db_index=True)  # first characters, shown in lists to tell tokens apart
    # sha256 of the whole token: tokens are 256-bit random strings, so a fast hash is safe here.
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    # Chosen at creation, at most API_TOKEN_MAX_DAYS ahead (API_TOKEN_DEFAULT_DAYS unless asked); never extended.
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_expired(self) -> bool:
        from django.utils import timezone

        return self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def read_only(self) -> bool:
        return self.scope == self.Scope.READ
