"""No write or read across projects through an `nli_authoring` link (docs/api.md "General rules": 404 or
one answer for what the caller may not see).

Project A (`proj-a`, nli_relabel) is run by sup-a; sup-b runs other projects only. The link
`settings.relabel_project` may name only a project the creating user supervises (or any, for
an admin); "missing", "not yours" and "not nli_relabel" get the same 400. At every submit the
link is checked again against the user who made it, so nothing that B's supervisor can do on
B's side alone (such as adding A's supervisor to B) makes a link hold. Revisions of A are
read only by A's members and by members of an authoring project whose link still holds."""

import io
import json

import pytest

pytestmark = pytest.mark.django_db

AUTHORED = {
    "premise": "مجمع عمومی سازمان ملل، آنتونیو گوترش را برگزید.",
    "entailment": "گوترش دبیر کل سازمان ملل است.",
    "contradiction": "کوفی عنان دبیر کل سازمان ملل است.",
    "neutral": "گوترش پرتغالی است.",
}
QUESTION = {"id": "q1", "question": "دبیر کل کیست؟", "choices": ["عنان", "گوترش"], "answer_index": 1}


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


@pytest.fixture
def world(make_user, client_for):
    """proj-a (nli_relabel) run by sup-a with relabeler ra; a-qa (qa_authoring) also run by
    sup-a; sup-b supervises b-home only and is a reviewer of proj-a; author1 has no role in A."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    users = {name: make_user(name) for name in ("sup-a", "sup-b", "ra", "author1")}
    a = project_create(actor=admin, slug="proj-a", name="A", kind="nli_relabel", language="fa")
    qa = project_create(actor=admin, slug="a-qa", name="A questions", kind="qa_authoring", language="he")
    home = project_create(actor=admin, slug="b-home", name="B home", kind="nli_relabel", language="fa")
    for project in (a, qa):
        Membership.objects.create(project=project, user=users["sup-a"], role="supervisor", status="active")
    Membership.objects.create(project=a, user=users["ra"], role="annotator", status="active")
    Membership.objects.create(project=a, user=users["sup-b"], role="reviewer", status="active")
    Membership.objects.create(project=home, user=users["sup-b"], role="supervisor", status="active")
    return {"users": users, "client": lambda name: client_for(users[name]), "admin": client_for(admin)}


def authoring_body(slug: str, target: str) -> dict:
    return {
        "slug": slug,
        "name": "Authoring",
        "kind": "nli_authoring",
        "language": "fa",
        "settings": {"relabel_project": target},
    }


def start_authoring(client, slug: str, author: str):
    """Make `author` an annotator of the authoring project and import one question."""
    added = client.post(
        f"/api/projects/{slug}/members/", {"username": author, "role": "annotator", "status": "active"}, format="json"
    )
    assert added.status_code == 201, added.content
    data = json.dumps(QUESTION, ensure_ascii=False) + "\n"
    imported = client.post(f"/api/projects/{slug}/import/", {"file": upload("q.jsonl", data), "format": "jsonl"})
    assert imported.status_code == 201, imported.content


def author_submits(client, slug: str):
    body = client.get(f"/api/projects/{slug}/next/")
    assert body.status_code == 200, body.content
    return client.post(f"/api/assignments/{body.json()['assignment']}/submit/", {"value": AUTHORED}, format="json")


def items_in_a() -> int:
    from annotation.models import Item

    return Item.objects.filter(project__slug="proj-a").count()


def test_naming_a_project_one_does_not_supervise_gets_the_same_answer_as_a_missing_one(world):
    from annotation.models import Project

    sup_b = world["client"]("sup-b")
    answers = []
    # Not supervised by sup-b (a reviewer there is not enough); missing; another kind, not theirs.
    for number, target in enumerate(("proj-a", "no-such-project", "a-qa")):
        response = sup_b.post("/api/projects/", authoring_body(f"b-author-{number}", target), format="json")
        assert response.status_code == 400, (target, response.content)
        answers.append(response.json())
    assert answers[0] == answers[1] == answers[2]
    assert answers[0]["errors"][0]["field"] == "settings.relabel_project"
    assert not Project.objects.filter(slug__startswith="b-author").exists()

    # A supervisor of the target (and an admin) may link it.
    made = world["client"]("sup-a").post("/api/projects/", authoring_body("a-author", "proj-a"), format="json")
    assert made.status_code == 201, made.content
    assert (
        world["admin"].post("/api/projects/", authoring_body("root-author", "proj-a"), format="json").status_code == 201
    )


def test_a_link_b_arranged_on_its_own_side_never_lets_items_into_a(world):
    """A link stored before creation was checked (or one whose maker never ran A): adding A's
    supervisor to B, which B's supervisor can do without asking, does not make it hold."""
    from annotation.models import Annotation, Membership, Project

    sup_b = world["client"]("sup-b")
    b = Project.objects.create(
        slug="proj-b",
        name="B",
        kind="nli_authoring",
        language="fa",
        settings={"relabel_project": "proj-a", "authors_per_question": 1},
        created_by=world["users"]["sup-b"],
    )
    Membership.objects.create(project=b, user=world["users"]["sup-b"], role="supervisor", status="active")
    start_authoring(sup_b, "proj-b", "author1")
    added = sup_b.post(
        "/api/projects/proj-b/members/", {"username": "sup-a", "role": "supervisor", "status": "active"}, format="json"
    )
    assert added.status_code == 201  # allowed, but it grants nothing in A

    before = items_in_a()
    response = author_submits(world["client"]("author1"), "proj-b")
    assert response.status_code == 409, response.content
    assert response.json()["errors"][0]["field"] == "relabel_project"
    assert items_in_a() == before and not Annotation.objects.filter(item__project=b).exists()
    # Nothing reached A's relabeler.
    assert world["client"]("ra").get("/api/projects/proj-a/next/").status_code == 204


def test_a_link_stops_holding_when_its_maker_no_longer_supervises_the_target(world, make_user, client_for):
    from annotation.models import Annotation, Membership, Project

    sup_a = world["client"]("sup-a")
    assert sup_a.post("/api/projects/", authoring_body("a-author", "proj-a"), format="json").status_code == 201
    start_authoring(sup_a, "a-author", "author1")
    author = world["client"]("author1")
    assert author_submits(author, "a-author").status_code == 201
    assert items_in_a() == 3

    # A's owner (the admin who created it) takes sup-a's role away; another supervisor of A
    # may not. The next submit is refused.
    other = make_user("sup-a2")
    Membership.objects.create(
        project=Project.objects.get(slug="proj-a"), user=other, role="supervisor", status="active"
    )
    assert (
        client_for(other).patch("/api/projects/proj-a/members/sup-a/", {"role": "annotator"}, format="json").status_code
        == 403
    )
    demoted = world["admin"].patch("/api/projects/proj-a/members/sup-a/", {"role": "annotator"}, format="json")
    assert demoted.status_code == 200
    data = json.dumps({**QUESTION, "id": "q2"}, ensure_ascii=False) + "\n"
    assert (
        sup_a.post("/api/projects/a-author/import/", {"file": upload("q.jsonl", data), "format": "jsonl"}).status_code
        == 201
    )
    response = author_submits(author, "a-author")
    assert response.status_code == 409, response.content
    assert items_in_a() == 3 and Annotation.objects.filter(item__project__slug="a-author").count() == 1
    # The author, no member of A, is not told A's name; the authoring project's supervisor
    # reads the reason on its page.
    assert "proj-a" not in response.content.decode()
    assert "not accepting new pairs" in response.json()["errors"][0]["message"]
    from django.test import Client

    page = Client()
    page.force_login(world["users"]["sup-a"])
    assert "proj-a" in page.get("/p/a-author/").content.decode()


def test_revisions_of_a_are_not_readable_from_b(world, client):
    """author1 authored items in A through a link that does not hold (stored before the
    check): as no member of A, they see neither A's revision list nor its page, nor revise."""
    from annotation.models import Item, ItemRevision, Membership, Project

    b = Project.objects.create(
        slug="proj-b",
        name="B",
        kind="nli_authoring",
        language="fa",
        settings={"relabel_project": "proj-a", "authors_per_question": 1},
        created_by=world["users"]["sup-b"],
    )
    Membership.objects.create(project=b, user=world["users"]["author1"], role="annotator", status="active")
    item = Item.objects.create(
        project=Project.objects.get(slug="proj-a"),
        external_id="q1-1-e",
        payload={"premise": "p", "hypothesis": "h"},
        reference_label="entailment",
        group="proj-b:q1",
        author=world["users"]["author1"],
        status=Item.Status.NEEDS_REVISION,
    )
    author = world["client"]("author1")
    listed = author.get("/api/projects/proj-a/revisions/")
    assert listed.status_code == 404, listed.content
    assert author.get("/api/projects/no-such/revisions/").json() == listed.json()
    revised = author.post(f"/api/items/{item.pk}/revise/", {"hypothesis": "h2"}, format="json")
    assert revised.status_code == 404
    item.refresh_from_db()
    assert item.status == Item.Status.NEEDS_REVISION and item.payload["hypothesis"] == "h"
    assert not ItemRevision.objects.exists()
    client.force_login(world["users"]["author1"])
    assert client.get("/p/proj-a/revisions/").status_code == 404


def test_authors_of_a_holding_link_read_their_revisions_without_joining_a(world, client):
    """The FarsTail loop: authors need not relabel. With a link made by A's supervisor, an
    author of B who is not a member of A reads and revises their own failed pairs of A."""
    from annotation.models import Item

    sup_a = world["client"]("sup-a")
    assert sup_a.post("/api/projects/", authoring_body("a-author", "proj-a"), format="json").status_code == 201
    start_authoring(sup_a, "a-author", "author1")
    author = world["client"]("author1")
    assert author_submits(author, "a-author").status_code == 201
    Item.objects.filter(project__slug="proj-a").update(status=Item.Status.NEEDS_REVISION)
    listed = author.get("/api/projects/proj-a/revisions/")
    assert listed.status_code == 200 and len(listed.json()["results"]) == 3
    client.force_login(world["users"]["author1"])
    assert client.get("/p/proj-a/revisions/").status_code == 200
    first = listed.json()["results"][0]["id"]
    assert author.post(f"/api/items/{first}/revise/", {"hypothesis": "دوباره"}, format="json").status_code == 200
