"""What Django's debug page and error e-mails may show: settings and request headers that name URLs with
credentials (REDIS_URL, DATABASE_URL, cache LOCATIONs), tokens and keys are replaced by stars."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class ScrubbingExceptionReporterFilter(SafeExceptionReporterFilter):
    # Django's list (API, TOKEN, KEY, SECRET, PASS, SIGNATURE, HTTP_COOKIE) plus AUTH (the Authorization header,
    # with the caller's bearer token), URL and LOCATION (connection strings), DSN and DATABASE.
    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|LOCATION|DSN|DATABASE", flags=re.IGNORECASE
    )
