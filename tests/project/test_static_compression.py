"""Under the run command static files go out hashed, compressed and cached for good: collectstatic writes each
file under a content-hashed name with a .gz beside it, pages link the hashed name (DEBUG too: `make run` is
DEBUG), and WhiteNoise serves it gzipped with a year's `immutable` cache, so a chart page does not fetch or
revalidate plotly.js again."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client

BUNDLE = "vendor/plotly-basic.min.js"


@pytest.fixture
def collected(settings, tmp_path):
    """The files collected as scripts/run_portal.sh collects and serves them (STATIC_FROM_FINDERS=0, DEBUG=1)."""
    settings.STATIC_ROOT = tmp_path / "static"  # a new storage (Django resets it when STATIC_ROOT changes)
    settings.WHITENOISE_USE_FINDERS = False
    settings.WHITENOISE_AUTOREFRESH = False
    call_command("collectstatic", "--noinput", verbosity=0)
    settings.DEBUG = True
    settings.STORAGES = {**settings.STORAGES}  # the storage again, reading the manifest collectstatic wrote
    return tmp_path / "static"


# Closing the response ends the request cycle, whose handler checks the worker's database connection: without
# database access allowed, the test failed whenever an earlier test in the same worker had left one open.
@pytest.mark.django_db
def test_collected_plotly_is_linked_hashed_and_served_gzipped_and_immutable(collected):
    """Catches a storage that links plain names under DEBUG (Django's manifest storage does): WhiteNoise then
    sends `max-age=0` and every chart page revalidates the bundle."""
    url = static(BUNDLE)
    assert re.fullmatch(r"/static/vendor/plotly-basic\.min\.[0-9a-f]{12}\.js", url), url
    raw = (collected / url.removeprefix("/static/")).stat().st_size
    response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert int(response["Content-Length"]) < raw / 2
    assert response["Cache-Control"] == "max-age=315360000, public, immutable"
    response.close()
    plain = Client().get(f"/static/{BUNDLE}")  # a plain name may change content: never cached for good
    assert "immutable" not in plain["Cache-Control"]
    plain.close()


def test_pages_link_plain_names_while_files_come_from_the_finders(settings):
    """Edit and reload (and the tests): the finders serve the sources, so a hashed name would point at a stale copy."""
    settings.WHITENOISE_USE_FINDERS = True
    assert static(BUNDLE) == f"/static/{BUNDLE}"
