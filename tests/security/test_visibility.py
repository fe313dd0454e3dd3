"""One visibility rule for every route: hidden submissions, hidden runs and everything under them, banned users'
work and hidden ranked checks answer 404 (never 403: existence is not revealed) to the public and to other
users, on every page, API route, download and bundle. The walk below takes the routes from the URL resolver,
so a new route with an id is tested as soon as it exists, and one with an id of a new kind fails the test."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from portal.agent.models import Trajectory, Turn
from portal.submissions.models import Evaluation
from tests.support import leaderboard_factories as lf
from tests.support.agent_support import ended
from tests.support.factories import make_token, sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

# Route arguments that name something the visibility rule covers; a route with any other typed argument fails
# `test_every_id_route_is_walked` until this test learns about it.
ID_ARGUMENTS = {"submission_id", "evaluation_id", "run_id", "trajectory_id", "name"}
# Routes with ids that name no submission, evaluation or run, and why they are outside this walk.
NOT_SUBMISSION_DATA = {
    "accounts:token_revoke": "a token id, looked up among the logged-in user's own tokens only",
    # Fixit (tests/fixit/test_fixit_web.py): a dataset version is public by construction (rows only from public
    # evaluations, withdrawn once a source is hidden or held); its `name` is the dataset's, not an artifact's.
    "fixit:dataset_detail": "a dataset version (public by construction)",
    "fixit:dataset_file": "a dataset version's file (public by construction)",
    "fixit:api_dataset": "a dataset version (public by construction)",
    "fixit:api_dataset_file": "a dataset version's file (public by construction)",
    # Token-only writes on a run: 404 for a run the caller may not see, like a read (tests/fixit/).
    "fixit:api_repair_run_explanations": "a write on a repair run (token only; 404 when not visible)",
    "fixit:api_run_tuned_on": "a write on a model run (token only; 404 when not visible)",
}
# The artifact every factory evaluation stores, for the artifact route.
ARTIFACT = "kernel.cu"


def _id_routes() -> list[tuple[str, tuple[str, ...]]]:
    """(name, argument names) of every named route outside the admin whose pattern has an int or uuid argument."""
    found = []

    def walk(patterns, namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if str(entry.pattern).startswith("admin/"):
                    continue  # staff only, behind Django's own permission checks
                walk(entry.url_patterns, f"{namespace}{entry.namespace}:" if entry.namespace else namespace)
            elif isinstance(entry, URLPattern) and entry.name:
                converters = getattr(entry.pattern, "converters", {})
                kinds = {type(c).__name__ for c in converters.values()}
                if kinds & {"IntConverter", "UUIDConverter"}:
                    found.append((f"{namespace}{entry.name}", tuple(converters)))

    walk(get_resolver().url_patterns, "")
    return found


def _walked_routes() -> list[tuple[str, tuple[str, ...]]]:
    return [(name, args) for name, args in _id_routes() if name not in NOT_SUBMISSION_DATA]


@dataclass
class Case:
    """Something that must not be public, by the route arguments that reach it."""

    name: str
    owner: object
    ids: dict[str, object]
    owner_sees: bool  # the owner (logged in, not banned) still sees it
    staff_sees: bool = True
    extra: dict = field(default_factory=dict)


def _turn_evaluation(run, owner) -> tuple[Trajectory, Evaluation]:
    """A trajectory with one turn whose kernel was submitted and evaluated, as the agent loop records it."""
    evaluation = lf.evaluation(owner=owner, kind="agent", name=f"{run.display_name} t0 turn 0")
    trajectory = Trajectory.objects.create(
        run=run, task=lf.task(GEMM), index=0, state="done", messages=[{"role": "assistant", "content": "kernel"}]
    )
    Turn.objects.create(
        trajectory=trajectory,
        index=0,
        state="done",
        reply="```cuda\n// kernel\n```",
        kernel=evaluation.submission.source,
        evaluation=evaluation,
        **ended(evaluation.status),
    )
    run.tasks.add(lf.task(GEMM))
    return trajectory, evaluation


def _run_ids(run, trajectory, evaluation) -> dict[str, object]:
    return {
        "run_id": run.id,
        "trajectory_id": trajectory.id,
        "submission_id": evaluation.submission_id,
        "evaluation_id": evaluation.id,
        "name": ARTIFACT,
    }


@pytest.fixture
def cases() -> list[Case]:
    sync_catalog()
    alice = lf.user("alice")
    bob = lf.user("bob")  # banned below, after his work exists
    out = []

    hidden_upload = lf.evaluation(owner=alice, name="hidden-upload.cu", hidden=True)
    out.append(
        Case(
            "hidden upload",
            alice,
            {"submission_id": hidden_upload.submission_id, "evaluation_id": hidden_upload.id, "name": ARTIFACT},
            owner_sees=True,
        )
    )

    run = lf.model_run(alice, model="secret-model", display_name="secret-run", hidden=True)
    trajectory, evaluation = _turn_evaluation(run, alice)
    out.append(Case("hidden run", alice, _run_ids(run, trajectory, evaluation), owner_sees=True))

    banned_upload = lf.evaluation(owner=bob, name="banned-upload.cu")
    banned_run = lf.model_run(bob, model="banned-model", display_name="banned-run")
    banned_trajectory, banned_evaluation = _turn_evaluation(banned_run, bob)
    from portal.accounts.services import user_ban

    user_ban(user=bob, reason="test")
    banned_ids = {"submission_id": banned_upload.submission_id, "evaluation_id": banned_upload.id, "name": ARTIFACT}
    out.append(Case("banned user's upload", bob, banned_ids, owner_sees=False))
    out.append(
        Case("banned user's run", bob, _run_ids(banned_run, banned_trajectory, banned_evaluation), owner_sees=False)
    )

    public = lf.evaluation(owner=alice, name="public.cu")
    check = public.submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN)
    from portal.submissions import artifacts

    artifacts.store_all(check, {ARTIFACT: public.submission.source.encode()})  # so its artifact route exists
    out.append(Case("hidden ranked check", alice, {"evaluation_id": check.id, "name": ARTIFACT}, owner_sees=False))
    return out


def _missing_ids() -> dict[str, object]:
    return {
        "submission_id": 999_999,
        "evaluation_id": uuid.uuid4(),
        "run_id": 999_999,
        "trajectory_id": 999_999,
        "name": ARTIFACT,
    }


def _fetch(client, url: str, **headers):
    response = client.get(url, **headers)
    if response.status_code == 405:  # a POST-only route (cancel): what does it answer to a POST?
        response = client.post(url, **headers)
    return response


def _urls(case: Case) -> list[tuple[str, str, str]]:
    """(route, url for the case, url for ids that do not exist) for every route this case's ids reach."""
    out = []
    for name, args in _walked_routes():
        if all(a in case.ids for a in args):
            missing = _missing_ids()
            out.append(
                (
                    name,
                    reverse(name, kwargs={a: case.ids[a] for a in args}),
                    reverse(name, kwargs={a: missing[a] for a in args}),
                )
            )
    return out


def test_every_id_route_is_walked(cases):
    routes = _id_routes()
    assert routes, "the resolver walk found no routes"
    for name, args in routes:
        if name in NOT_SUBMISSION_DATA:
            continue
        unknown = set(args) - ID_ARGUMENTS
        assert not unknown, f"{name} takes {sorted(unknown)}: teach tests/security/test_visibility.py what they name"
        assert any(all(a in c.ids for a in args) for c in cases), f"no case reaches {name}"
    # every case reaches at least the routes its own kind of id opens
    assert all(_urls(c) for c in cases)


def test_hidden_and_banned_are_404_for_the_public_and_other_users(client, cases):
    carol = lf.user("carol")
    token = make_token(carol)
    checked = 0
    for case in cases:
        for name, url, missing_url in _urls(case):
            client.logout()
            anonymous, anonymous_missing = _fetch(client, url), _fetch(client, missing_url)
            # Routes that need a login answer every anonymous caller the same way (redirect); others say 404.
            assert anonymous.status_code == anonymous_missing.status_code, (case.name, name, url)
            if anonymous_missing.status_code != 302:
                assert anonymous.status_code == 404, (case.name, name, url, anonymous.status_code)
            client.force_login(carol)
            other = _fetch(client, url)
            assert other.status_code == 404, (case.name, name, url, other.status_code)
            if url.startswith("/api/"):
                client.logout()
                api = _fetch(client, url, HTTP_AUTHORIZATION=f"Bearer {token}")
                assert api.status_code == 404, (case.name, name, url, api.status_code)
                assert api.json() == {"error": api.json()["error"]}
            checked += 1
    assert checked >= 30


def test_owners_see_their_hidden_work_and_staff_see_everything(client, cases):
    staff = lf.user("root")
    staff.is_staff = True
    staff.save()
    for case in cases:
        for name, url, _ in _urls(case):
            if name == "agent:run_cancel":
                continue  # a write, not a read
            client.force_login(staff)
            assert _fetch(client, url).status_code == 200, ("staff", case.name, name, url)
            if case.owner_sees:
                client.force_login(case.owner)
                assert _fetch(client, url).status_code == 200, ("owner", case.name, name, url)


def test_the_owner_never_opens_the_ranked_check_itself(client, cases):
    case = next(c for c in cases if c.name == "hidden ranked check")
    client.force_login(case.owner)
    for name, url, _ in _urls(case):
        assert _fetch(client, url).status_code == 404, (name, url)


def test_lists_leave_out_hidden_and_banned_runs(client, cases):
    html = client.get("/runs/").content.decode()
    assert "secret-run" not in html
    assert "banned-run" not in html


def test_dedup_never_points_an_upload_at_hidden_or_banned_work(cases):
    """An upload identical to a hidden run's turn or a banned user's kernel gets its own submission."""
    from portal.submissions.models import Submission
    from portal.submissions.services import submission_create

    dave = lf.user("dave")
    for case in cases:
        if "submission_id" not in case.ids:
            continue
        hidden = Submission.objects.get(id=case.ids["submission_id"])
        result = submission_create(user=dave, task=hidden.task, arch=hidden.arch, source=hidden.source)
        assert result.submission.id != hidden.id, case.name


def test_my_submissions_shows_the_public_evaluation_and_only_pass_fail_of_the_ranked_check(client):
    """The ranked check is the newest evaluation; the list must not show its status or speedup."""
    sync_catalog()
    erin = lf.user("erin")
    public = lf.evaluation(owner=erin, name="mine.cu", speedup=1.3, ranked_check="INCORRECT_NUMERICS")
    check = public.submission.evaluations.get(purpose=Evaluation.Purpose.HIDDEN)
    Evaluation.objects.filter(id=check.id).update(speedup_factor=0.123, arch_status="not_verified")
    client.force_login(erin)
    html = client.get("/submissions/mine/").content.decode()
    assert "1.300" in html
    assert "0.123" not in html
    assert "INCORRECT_NUMERICS" not in html
    assert "not_verified" not in html
    assert 'id="ranked-check-' in html and ">failed<" in html
