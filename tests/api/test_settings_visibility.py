"""Which of a project's settings each member reads in `GET /api/projects/{slug}/` and the
project list. The seeds of the random draws (review sampling, coherence probes) are for
supervisors and admins only; members who are not staff see only what their pages read
(the question counts and overlap warning of the qa page, text folding), never a seed, a
rate or a blind system's name. The draws themselves are keyed by the project's secret,
which no answer ever carries (tests/kinds/qa/test_reviews.py, tests/kinds/phrase/test_probes.py)."""

import pytest

pytestmark = pytest.mark.django_db

SEEDS = {"qa_authoring": "review_seed", "phrase_pair": "probe_seed"}
RATES = {"qa_authoring": "review_rate", "phrase_pair": "probe_rate"}


@pytest.fixture
def world(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    root = make_user("root", staff=True)
    people = {name: make_user(name) for name in ("sup", "rev", "ann", "gone")}
    projects = {}
    for kind, settings in (
        ("qa_authoring", {"review_seed": 4242, "review_rate": 0.3}),
        ("phrase_pair", {"probe_seed": 4242, "probe_rate": 0.2}),
        ("translation_rating", {"released_system": "amazon"}),
        ("nli_relabel", {}),
    ):
        project = project_create(
            actor=root, slug=kind.replace("_", "-"), name=kind, kind=kind, language="he", settings=settings
        )
        for name, role, status in (
            ("sup", "supervisor", "active"),
            ("rev", "reviewer", "active"),
            ("ann", "annotator", "active"),
            ("gone", "supervisor", "disqualified"),
        ):
            Membership.objects.create(project=project, user=people[name], role=role, status=status)
        projects[kind] = project
    clients = {name: client_for(user) for name, user in {**people, "root": root}.items()}
    return projects, clients


def settings_seen(clients, name, project) -> tuple[dict, dict]:
    detail = clients[name].get(f"/api/projects/{project.slug}/")
    assert detail.status_code == 200, detail.content
    listed = {row["slug"]: row for row in clients[name].get("/api/projects/", {"page_size": 100}).json()["results"]}
    return detail.json()["settings"], listed[project.slug]["settings"]


@pytest.mark.parametrize("kind", ["qa_authoring", "phrase_pair"])
def test_an_annotators_view_of_the_project_has_no_seed_and_no_rate(world, kind):
    projects, clients = world
    for seen in settings_seen(clients, "ann", projects[kind]):
        assert SEEDS[kind] not in seen and RATES[kind] not in seen, seen
        assert "4242" not in str(seen)


def test_annotators_see_what_their_pages_read_and_nothing_else(world):
    projects, clients = world
    qa, _ = settings_seen(clients, "ann", projects["qa_authoring"])
    # static/qa/annotate.js reads these four; static/nli_authoring/annotate.js the last.
    assert qa == {"min_questions": 3, "max_questions": 5, "overlap_warning": 0.5, "fold_letter_variants": False}
    for kind in ("phrase_pair", "translation_rating", "nli_relabel"):
        seen, listed = settings_seen(clients, "ann", projects[kind])
        assert seen == listed == {"fold_letter_variants": False}, (kind, seen)


@pytest.mark.parametrize("kind", ["qa_authoring", "phrase_pair"])
def test_seeds_are_shown_to_supervisors_and_admins_only(world, kind):
    projects, clients = world
    for name in ("sup", "root"):
        for seen in settings_seen(clients, name, projects[kind]):
            assert seen[SEEDS[kind]] == 4242 and RATES[kind] in seen
    # Reviewers read the rates and the rest of the protocol, not the seeds.
    for seen in settings_seen(clients, "rev", projects[kind]):
        assert SEEDS[kind] not in seen and RATES[kind] in seen
    # A disqualified supervisor sees the project as an outsider does: not at all.
    assert clients["gone"].get(f"/api/projects/{projects[kind].slug}/").status_code == 404


def test_the_released_system_stays_with_staff(world):
    projects, clients = world
    for name, shown in (("sup", True), ("rev", True), ("ann", False)):
        seen, listed = settings_seen(clients, name, projects["translation_rating"])
        assert ("released_system" in seen) is shown and ("released_system" in listed) is shown


def test_the_draw_secret_never_leaves_the_server(world):
    projects, clients = world
    for project in projects.values():
        secret = project.draw_secret
        assert len(secret) == 64
        for name in ("sup", "root", "rev", "ann"):
            assert secret not in clients[name].get(f"/api/projects/{project.slug}/").content.decode()
            assert secret not in clients[name].get("/api/projects/").content.decode()
