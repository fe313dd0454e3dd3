"""Evidence bundles downloaded without signing in are throttled per client address and per
network (portal/leaderboard/evidence/throttle.py), as logins are. Before: any number of anonymous
`GET /evidence/submissions/<id>/bundle.zip` were served (251 MB in 21 s each). Now past the hourly limits the
answer is 429 with a plain message and Retry-After. Real Redis."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


def _get(client, path: str, address: str):
    response = client.get(path, REMOTE_ADDR=address)
    if response.status_code == 200:
        b"".join(response.streaming_content)  # read to the end: the client closes it (and its temporary file)
    return response


@override_settings(ANONYMOUS_BUNDLES_PER_ADDRESS_PER_HOUR=3, ANONYMOUS_BUNDLES_PER_NETWORK_PER_HOUR=5)
def test_anonymous_bundles_are_throttled_by_address_and_by_network(client):
    sync_catalog()
    evaluation = lf.evaluation(owner=lf.user("ada"))
    bundle = f"/evidence/submissions/{evaluation.submission_id}/bundle.zip"
    run = lf.model_run(lf.user("bob"), model="vendor/model-a")
    for _ in range(3):
        assert _get(client, bundle, "203.0.113.7").status_code == 200
    refused = _get(client, bundle, "203.0.113.7")
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert "Too many evidence bundles downloaded from your network without signing in" in refused.content.decode()
    assert "or sign in" in refused.content.decode()
    # Another address of the same /24 gets what is left of the network's count (run bundles count too) ...
    assert _get(client, f"/evidence/runs/{run.id}/bundle.zip", "203.0.113.8").status_code == 200
    assert _get(client, bundle, "203.0.113.9").status_code == 429  # 6 requests from the network: past 5
    # ... another network is counted on its own, and a signed-in user is not counted.
    assert _get(client, bundle, "198.51.100.1").status_code == 200
    client.force_login(lf.user("carol"))
    assert _get(client, bundle, "203.0.113.7").status_code == 200
