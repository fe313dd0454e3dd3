"""The static files storage: collectstatic writes each file under a name that holds a hash of its content (and a
.gz beside it), and while the site serves those collected files the pages link the hashed names, DEBUG or not
(`make run` is DEBUG): WhiteNoise then sends them with a year's `immutable` cache, so a browser fetches plotly.js
once per version instead of revalidating it on every chart page. While files come from the finders (edit and
reload; the tests) the pages link the plain names, which always show the file as it is now."""

from __future__ import annotations

from django.conf import settings
from django.contrib.staticfiles.storage import StaticFilesStorage
from whitenoise.storage import CompressedManifestStaticFilesStorage


class CollectedStaticStorage(CompressedManifestStaticFilesStorage):
    def url(self, name: str | None, force: bool = False) -> str:
        if settings.WHITENOISE_USE_FINDERS:
            return StaticFilesStorage.url(self, name)
        # Django links plain names whenever DEBUG is on; here the manifest decides (a name missing from it is an
        # error, as in production: collectstatic did not run or the file does not exist).
        return super().url(name, force=True)
