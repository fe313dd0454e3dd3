"""Under the run command static files go out compressed: collectstatic writes .gz copies and WhiteNoise serves
them (plotly.min.js is 4.8 MB raw) to clients that accept gzip."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client


# Closing the response ends the request cycle, whose handler checks the worker's database connection: without
# database access allowed, the test failed whenever an earlier test in the same worker had left one open.
@pytest.mark.django_db
def test_collected_plotly_is_served_gzipped(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.WHITENOISE_USE_FINDERS = False  # what scripts/run_portal.sh sets (STATIC_FROM_FINDERS=0)
    settings.WHITENOISE_AUTOREFRESH = False
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},  # the DEBUG storage
    }
    call_command("collectstatic", "--noinput", verbosity=0)
    raw = (tmp_path / "static" / "vendor" / "plotly.min.js").stat().st_size
    assert (tmp_path / "static" / "vendor" / "plotly.min.js.gz").is_file()
    response = Client().get("/static/vendor/plotly.min.js", HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert int(response["Content-Length"]) < raw / 2
    response.close()
