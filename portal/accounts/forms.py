from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm

from portal.accounts.services import user_is_banned


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class LoginForm(AuthenticationForm):
    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if user_is_banned(user):
            raise forms.ValidationError("This account is banned.", code="banned")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="my token")
