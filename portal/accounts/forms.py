from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm

from portal.accounts import usernames
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
