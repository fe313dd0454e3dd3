from __future__ import annotations

from pathlib import PurePath

from django import forms
from django.conf import settings

from evaluator.languages import DEFAULT_LANGUAGE, LANGUAGES, Language
from portal.catalog.models import Task
from portal.core.registry_fields import arch_choices
from portal.submissions.services import SubmissionRefused, decode_source

# Everything about a language comes from the registry, read when a form is built or cleaned.


def language_by_suffix() -> dict[str, Language]:
    """An upload's language from its file name; a language chosen in the form must agree with it."""
    return {suffix: lang for lang in LANGUAGES.values() for suffix in lang.suffixes}


# The same by name, for the submission API (built at import, as the registry is).
LANGUAGE_BY_SUFFIX = {suffix: lang.name for suffix, lang in language_by_suffix().items()}


def _suffix_help() -> str:
    return ", ".join(f"{'/'.join(lang.suffixes)}: {lang.display_name}" for lang in LANGUAGES.values())


def _pasted_language(source: str) -> Language:
    """Pasted source with Language left on "from the file": the first language whose marker it matches (Triton
    when it imports triton), else the default language."""
    return next(
        (lang for lang in LANGUAGES.values() if lang.pasted_marker and lang.pasted_marker.search(source)),
        DEFAULT_LANGUAGE,
    )


class SubmissionForm(forms.Form):
    task = forms.ModelChoiceField(queryset=Task.objects.none(), to_field_name="slug")
    arch = forms.ChoiceField(choices=arch_choices, label="Architecture")  # the registry, read per form
    language = forms.ChoiceField(initial="", required=False, label="Language")  # choices: see __init__
    file = forms.FileField(required=False, label="Kernel file")
    # Kept as pasted (no stripping), with the browser's line breaks undone: a form sends a textarea's text with
    # CRLF line breaks, and the same kernel uploaded as a file or through the API must be the same source (the
    # same digest: the duplicate check, the compile cache, the kernel auditors download).
    source = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 16}), label="…or paste the source"
    )
    name = forms.CharField(required=False, max_length=200, label="Name (optional)")
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))
    force = forms.BooleanField(required=False, label="Evaluate again even if this exact source was evaluated before")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task"].queryset = Task.objects.filter(is_active=True).order_by("group", "slug")
        self.fields["language"].choices = [
            ("", f"From the file ({_suffix_help()})"),
            *((lang.name, lang.display_name) for lang in LANGUAGES.values()),
        ]
        self.fields["file"].label = f"Kernel file ({_suffix_help()})"

    def clean(self):
        data = super().clean()
        upload, pasted = data.get("file"), data.get("source") or ""
        if upload and pasted.strip():
            raise forms.ValidationError("Upload a file or paste the source, not both.")
        if upload:
            if upload.size > settings.MAX_SOURCE_BYTES:
                raise forms.ValidationError(
                    f"The file is {upload.size} bytes; the limit is {settings.MAX_SOURCE_BYTES} bytes."
                )
            try:
                data["source"] = decode_source(upload.read())
            except SubmissionRefused as exc:
                raise forms.ValidationError(exc.message[0].upper() + exc.message[1:] + ".") from None
            data.setdefault("name", "")
            if not data["name"]:
                data["name"] = upload.name[:200]
        elif pasted.strip():
            try:
                data["source"] = decode_source(pasted.replace("\r\n", "\n").encode("utf-8"))
            except SubmissionRefused as exc:
                raise forms.ValidationError(exc.message) from None
        else:
            raise forms.ValidationError("Upload a .cu file or paste the kernel source.")
        data["language"] = self._language(data, upload)
        task = data.get("task")
        if task and data.get("arch") and not task.targets.filter(arch=data["arch"]).exists():
            raise forms.ValidationError(f"Task {task.slug} has no target for {data['arch']}.")
        return data

    @staticmethod
    def _language(data: dict, upload) -> str:
        """The chosen language, else the upload's (by suffix), else the one pasted source's markers say, else the
        default. A chosen language that contradicts the file's suffix is an error, not a silent guess."""
        chosen = LANGUAGES.get(data.get("language") or "")
        if upload:
            suffix = PurePath(upload.name or "").suffix.lower()
            by_name = language_by_suffix().get(suffix)
            if by_name is None and not chosen:
                raise forms.ValidationError(
                    f"Cannot tell the language of “{upload.name}”: name the file {_suffix_help()}, "
                    "or choose the language."
                )
            if chosen and by_name and chosen != by_name:
                raise forms.ValidationError(
                    f"“{upload.name}” is a {suffix} file ({by_name.display_name}) but Language says "
                    f"{chosen.display_name}: choose {by_name.display_name} or leave Language on “From the file”."
                )
            return (chosen or by_name).name
        return (chosen or _pasted_language(data["source"])).name
