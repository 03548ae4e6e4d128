"""`GET /api/projects/{slug}/annotators/` on a small project whose figures
are checked by hand: three testers label four items of a label_test project through
next/submit, their claim-to-submit times are set to known values, one annotation is graded,
and Dawid-Skene/MACE competences are stored as the aggregation job stores them.

Votes (E entailment, N neutral, C contradiction; gold is the imported hidden label):

    item  gold  a1 a2 a3   consensus (plurality)
    i1    E     E  E  N    E
    i2    N     N  C  N    N
    i3    C     C  C  C    C
    i4    E     E  N  C    — (a three-way tie)

a1 agrees with the consensus on 3/3 and with gold on 4/4; a2 2/3 and 2/4; a3 2/3 and 2/4.
Cohen's kappa of a2 by hand: p_o = 2/3, a2 gives E 1/3, C 2/3, the consensus E, N, C 1/3
each, so p_e = 1/9 + 2/9 = 1/3 and kappa = (2/3 - 1/3) / (1 - 1/3) = 0.5; a3 likewise 0.5;
a1 1.0. With quality_flag_below 0.6, a2 and a3 are flagged."""

import re
from datetime import timedelta

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.api.test_import import jsonl, upload

pytestmark = pytest.mark.django_db

SLUG = "he-test"
VOTES = {
    "i1": {"a1": "entailment", "a2": "entailment", "a3": "neutral"},
    "i2": {"a1": "neutral", "a2": "contradiction", "a3": "neutral"},
    "i3": {"a1": "contradiction", "a2": "contradiction", "a3": "contradiction"},
    "i4": {"a1": "entailment", "a2": "neutral", "a3": "contradiction"},
}
GOLD = {"i1": "entailment", "i2": "neutral", "i3": "contradiction", "i4": "entailment"}
CONSENSUS = {"i1": "entailment", "i2": "neutral", "i3": "contradiction"}
SECONDS = {"a1": [10, 20, 30, 40], "a2": [5, 5, 100, 7], "a3": [60, 10, 20, 30]}
MEDIANS = {"a1": 25.0, "a2": 6.0, "a3": 25.0}


def label_everything(clients, slug: str, votes: dict[str, dict[str, str]]) -> dict[tuple[str, str], int]:
    """Each annotator draws and labels through HTTP until 204; (external id, annotator) →
    annotation id."""
    done = {}
    for name in sorted({name for cast in votes.values() for name in cast}):
        while True:
            got = clients[name].get(f"/api/projects/{slug}/next/")
            if got.status_code == 204:
                break
            assert got.status_code == 200, got.content
            body = got.json()
            label = votes[body["item"]["external_id"]][name]
            sent = clients[name].post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
            )
            assert sent.status_code == 201, sent.content
            done[(body["item"]["external_id"], name)] = sent.json()["id"]
    return done


def project_with_members(make_user, client_for, *, slug: str, name: str, kind: str, settings: dict):
    """A Hebrew project made through the API by an admin ("root"), with a supervisor "sup",
    a reviewer "rev" and annotators a1, a2, a3; (project, users, API clients) by name."""
    from annotation.models import Membership, Project

    root = make_user("root", staff=True)
    people = {"root": root}
    made = client_for(root).post(
        "/api/projects/",
        {"slug": slug, "name": name, "kind": kind, "language": "he", "settings": settings},
        format="json",
    )
    assert made.status_code == 201, made.content
    project = Project.objects.get(slug=slug)
    for username, role in (
        ("sup", "supervisor"),
        ("rev", "reviewer"),
        ("a1", "annotator"),
        ("a2", "annotator"),
        ("a3", "annotator"),
    ):
        people[username] = make_user(username)
        Membership.objects.create(project=project, user=people[username], role=role, status="active")
    return project, people, {username: client_for(user) for username, user in people.items()}


@pytest.fixture
def small(make_user, client_for):
    from annotation.models import Assignment

    project, people, clients = project_with_members(
        make_user,
        client_for,
        slug=SLUG,
        name="מבחן",
        kind="label_test",
        settings={"labels_per_item": 3, "quality_flag_below": 0.6},
    )
    rows = [{"id": key, "premise": f"הנחה {key}", "hypothesis": f"השערה {key}", "label": GOLD[key]} for key in VOTES]
    assert (
        clients["sup"]
        .post(f"/api/projects/{SLUG}/import/", {"file": upload("t.jsonl", jsonl(*rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    annotations = label_everything(clients, SLUG, VOTES)
    # Known claim-to-submit times, in the order each annotator's items were stored.
    for name, seconds in SECONDS.items():
        assignments = Assignment.objects.filter(project=project, annotator=people[name]).order_by("id")
        assert assignments.count() == len(seconds)
        for assignment, spent in zip(assignments, seconds):
            Assignment.objects.filter(pk=assignment.pk).update(
                claimed_at=assignment.submitted_at - timedelta(seconds=spent)
            )
    return project, people, clients, annotations


def by_name(response) -> dict[str, dict]:
    assert response.status_code == 200, response.content
    return {row["annotator"]: row for row in response.json()}


def test_figures_match_the_hand_computation(small):
    from django.utils import timezone

    from annotation.models import AnnotatorCompetence

    project, people, clients, annotations = small
    graded = clients["rev"].post(
        f"/api/annotations/{annotations[('i1', 'a1')]}/review/", {"grade": "good"}, format="json"
    )
    assert graded.status_code == 201, graded.content
    now = timezone.now()
    AnnotatorCompetence.objects.create(
        project=project, annotator=people["a1"], method="dawid_skene", competence=0.9, confusion=[], computed_at=now
    )
    AnnotatorCompetence.objects.create(
        project=project, annotator=people["a1"], method="mace", competence=0.8, confusion=[], computed_at=now
    )

    rows = by_name(clients["sup"].get(f"/api/projects/{SLUG}/annotators/"))
    assert sorted(rows) == ["a1", "a2", "a3"]
    for name in ("a1", "a2", "a3"):
        row = rows[name]
        assert row["items"] == 4
        assert row["seconds_median"] == pytest.approx(MEDIANS[name])
        pairs = [(VOTES[key][name], CONSENSUS[key]) for key in CONSENSUS]
        assert row["consensus_items"] == 3
        assert row["agreement_with_consensus"] == pytest.approx(sum(a == b for a, b in pairs) / 3)
        assert row["kappa"] == pytest.approx(cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs]))
        assert row["gold_items"] == 4
        assert row["agreement_with_gold"] == pytest.approx(sum(VOTES[key][name] == GOLD[key] for key in GOLD) / 4)
        assert row["coherence"] is None
        assert row["status"] == "active"
    assert [rows[name]["kappa"] for name in ("a1", "a2", "a3")] == pytest.approx([1.0, 0.5, 0.5])
    assert [rows[name]["agreement_with_gold"] for name in ("a1", "a2", "a3")] == [1.0, 0.5, 0.5]
    assert [rows[name]["flagged"] for name in ("a1", "a2", "a3")] == [False, True, True]
    assert rows["a1"]["competence"] == {"dawid_skene": 0.9, "mace": 0.8}
    assert rows["a2"]["competence"] == {"dawid_skene": None, "mace": None}
    assert rows["a1"]["review_grades"] == {
        "reviewed": 1,
        "mean": 2.0,
        "counts": {"rejected": 0, "verified": 0, "good": 1, "gold": 0},
    }
    assert rows["a2"]["review_grades"] is None


def test_only_supervisors_see_the_figures(small, make_user, client_for):
    _project, _people, clients, _annotations = small
    assert clients["sup"].get(f"/api/projects/{SLUG}/annotators/").status_code == 200
    assert clients["root"].get(f"/api/projects/{SLUG}/annotators/").status_code == 200
    for name in ("rev", "a1"):
        assert clients[name].get(f"/api/projects/{SLUG}/annotators/").status_code == 403
    assert client_for(make_user("stranger")).get(f"/api/projects/{SLUG}/annotators/").status_code == 404


def test_the_flag_threshold_is_a_validated_setting(make_user, client_for):
    from annotation.models import Project

    client = client_for(make_user("root", staff=True))
    for bad in (1.5, -2, "0.5", True, None):
        response = client.post(
            "/api/projects/",
            {
                "slug": "bad-flag",
                "name": "x",
                "kind": "label_test",
                "language": "he",
                "settings": {"quality_flag_below": bad},
            },
            format="json",
        )
        assert response.status_code == 400, (bad, response.content)
        assert [e["field"] for e in response.json()["errors"]] == ["settings.quality_flag_below"]
    assert not Project.objects.filter(slug="bad-flag").exists()
    made = client.post(
        "/api/projects/", {"slug": "ok-flag", "name": "x", "kind": "phrase_pair", "language": "he"}, format="json"
    )
    assert made.json()["settings"]["quality_flag_below"] == 0.4


def test_moving_back_to_trial_puts_the_next_work_under_review(small):
    """PATCH status → trial (the quality page's action): the member's next annotation is
    marked for review and shows in the pending reviews; what they submitted before keeps
    its review state."""
    from annotation.models import Annotation

    project, people, clients, _annotations = small
    before = set(Annotation.objects.filter(annotator=people["a2"]).values_list("pk", flat=True))
    assert not Annotation.objects.filter(pk__in=before, review_required=True).exists()
    moved = clients["sup"].patch(f"/api/projects/{SLUG}/members/a2/", {"status": "trial"}, format="json")
    assert moved.status_code == 200 and moved.json()["status"] == "trial"
    assert by_name(clients["sup"].get(f"/api/projects/{SLUG}/annotators/"))["a2"]["status"] == "trial"
    rows = [{"id": "i5", "premise": "הנחה חדשה", "hypothesis": "השערה חדשה", "label": "neutral"}]
    assert (
        clients["sup"]
        .post(f"/api/projects/{SLUG}/import/", {"file": upload("n.jsonl", jsonl(*rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    got = clients["a2"].get(f"/api/projects/{SLUG}/next/").json()
    sent = clients["a2"].post(
        f"/api/assignments/{got['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
    )
    assert sent.status_code == 201
    assert Annotation.objects.get(pk=sent.json()["id"]).review_required
    assert not Annotation.objects.filter(pk__in=before, review_required=True).exists()
    pending = clients["rev"].get(f"/api/projects/{SLUG}/reviews/pending/").json()["results"]
    assert [row["annotation"] for row in pending] == [sent.json()["id"]]
    # An active member's next work is not (label_test samples no one).
    got = clients["a1"].get(f"/api/projects/{SLUG}/next/").json()
    sent = clients["a1"].post(
        f"/api/assignments/{got['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
    )
    assert not Annotation.objects.get(pk=sent.json()["id"]).review_required


def test_project_page_shows_the_compact_figures_to_supervisors_only(small, client):
    project, people, _clients, _annotations = small
    client.force_login(people["sup"])
    page = client.get(f"/p/{SLUG}/").content.decode()
    assert 'id="project-quality"' in page and f"/p/{SLUG}/annotators/" in page
    assert '<tr data-annotator="a2" class="flagged">' in page
    client.force_login(people["rev"])
    page = client.get(f"/p/{SLUG}/").content.decode()
    assert 'id="project-quality"' not in page and f"/p/{SLUG}/annotators/" not in page


def test_member_form_marks_adjudicators_and_the_trial_form_keeps_the_other_flags(small, client):
    """The project page's member form sets `adjudicator`; the quality page's "move back to
    trial" form (what a browser without scripts sends) changes the status only."""
    from annotation.models import Membership

    project, people, _clients, _annotations = small
    client.force_login(people["sup"])
    assert (
        client.post(f"/p/{SLUG}/members/a3/", {"status": "active", "trusted": "on", "adjudicator": "on"}).status_code
        == 302
    )
    member = Membership.objects.get(project=project, user=people["a3"])
    assert (member.status, member.trusted, member.adjudicator) == ("active", True, True)
    page = client.get(f"/p/{SLUG}/annotators/").content.decode()
    form = page[page.index('data-username="a3"') :]
    form = form[: form.index("</form>")]
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
    fields.pop("csrfmiddlewaretoken")
    assert fields == {"status": "trial", "trusted": "on", "adjudicator": "on"}
    assert client.post(f"/p/{SLUG}/members/a3/", fields).status_code == 302
    member.refresh_from_db()
    assert (member.status, member.trusted, member.adjudicator) == ("trial", True, True)
    # The home page links an adjudicator who is an annotator to the queue.
    client.force_login(people["a3"])
    assert f"/p/{SLUG}/adjudication/" in client.get("/").content.decode()
