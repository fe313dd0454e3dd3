from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.validators import MaxValueValidator

from portal.accounts import usernames
from portal.accounts.models import ApiToken
from portal.accounts.services import user_is_banned


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_username(self):
        name = usernames.normalize(self.cleaned_data.get("username") or "")
        if name and usernames.confusable_with(name):
            # Says neither which account nor how they differ: that would help the look-alike along.
            raise forms.ValidationError(
                "This username is taken or looks like one that is (letters from other scripts, case and "
                "0/o, 1/l count as the same).",
                code="confusable",
            )
        return name


class LoginForm(AuthenticationForm):
    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if user_is_banned(user):
            raise forms.ValidationError("This account is banned.", code="banned")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="my token")
    # Left out (an older form, a script): read and write, API_TOKEN_DEFAULT_DAYS.
    scope = forms.ChoiceField(choices=ApiToken.Scope.choices, initial=ApiToken.Scope.WRITE, required=False)
    days = forms.IntegerField(label="Expires in (days)", min_value=1, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Read when the form is made, so the operator's limits apply as they stand (settings are env-driven).
        self.fields["days"].initial = settings.API_TOKEN_DEFAULT_DAYS
        self.fields["days"].max_value = settings.API_TOKEN_MAX_DAYS
        self.fields["days"].validators.append(MaxValueValidator(settings.API_TOKEN_MAX_DAYS))
        self.fields["days"].widget.attrs["max"] = settings.API_TOKEN_MAX_DAYS

    def clean_scope(self) -> str:
        return self.cleaned_data.get("scope") or ApiToken.Scope.WRITE
