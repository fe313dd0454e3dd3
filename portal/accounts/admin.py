from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

from portal.accounts.models import ApiToken, Profile
from portal.accounts.services import user_ban, user_unban


class ProfileInline(admin.StackedInline):
    model = Profile
    can_delete = False
    readonly_fields = ("banned_at",)


class PortalUserAdmin(UserAdmin):
    inlines = [ProfileInline]
    actions = ["ban_users", "unban_users"]
    list_display = ("username", "email", "is_staff", "is_active", "is_banned")

    def save_formset(self, request, form, formset, change):
        """A ban ticked on the profile inline goes through the ban service, as the action's does: the form alone
        would store the flag and leave the user's sessions and API tokens alive."""
        super().save_formset(request, form, formset, change)
        if formset.model is not Profile:
            return
        for profile_form in formset.forms:
            if "is_banned" not in profile_form.changed_data or not hasattr(profile_form, "cleaned_data"):
                continue
            user = form.instance
            if profile_form.cleaned_data.get("is_banned"):
                reason = profile_form.cleaned_data.get("banned_reason") or f"banned by {request.user.username}"
                user_ban(user=user, reason=reason)
            else:
                user_unban(user=user)

    @admin.display(boolean=True, description="banned")
    def is_banned(self, user):
        return bool(getattr(user, "profile", None) and user.profile.is_banned)

    @admin.action(description="Ban (no login, no submissions, hidden from tables; evidence kept)")
    def ban_users(self, request, queryset):
        for user in queryset:
            user_ban(user=user, reason=f"banned by {request.user.username}")
        messages.success(request, f"Banned {queryset.count()} user(s).")

    @admin.action(description="Lift the ban")
    def unban_users(self, request, queryset):
        for user in queryset:
            user_unban(user=user)


admin.site.unregister(User)
admin.site.register(User, PortalUserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "scope", "created_at", "expires_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "name", "prefix", "digest", "scope", "created_at", "expires_at", "last_used_at")
    exclude = ()
