"""The supervisor's project page: members and imports through HTML forms (session + CSRF)."""

import io

import pytest
from django.test import Client


def logged_in(user) -> Client:
    client = Client(enforce_csrf_checks=False)
    client.force_login(user)
    return client


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


@pytest.mark.django_db
def test_supervisor_adds_member_changes_status_and_imports(nli_project, django_user_model, make_user):
    sup = logged_in(django_user_model.objects.get(username="sup"))
    make_user("newbie")
    page = sup.get(f"/p/{nli_project.slug}/")
    assert page.status_code == 200 and "Add a member" in page.content.decode()

    response = sup.post(
        f"/p/{nli_project.slug}/members/add/", {"username": "newbie", "role": "annotator", "status": "trial"}
    )
    assert response.status_code == 302
    member = nli_project.memberships.get(user__username="newbie")
    assert (member.role, member.status, member.trusted) == ("annotator", "trial", False)

    sup.post(f"/p/{nli_project.slug}/members/newbie/", {"status": "disqualified", "trusted": "on"})
    member.refresh_from_db()
    assert (member.status, member.trusted) == ("disqualified", True)

    good = '{"id": "x1", "premise": "גשם ירד אתמול.", "hypothesis": "היה יבש.", "label": "contradiction"}\n'
    response = sup.post(
        f"/p/{nli_project.slug}/import/", {"file": upload("a.jsonl", good), "format": "jsonl"}, follow=True
    )
    assert "Imported 1 items" in response.content.decode()
    bad = '{"id": "x2", "premise": "", "hypothesis": "h"}\n{"id": "x3"'
    response = sup.post(
        f"/p/{nli_project.slug}/import/", {"file": upload("b.jsonl", bad), "format": "jsonl"}, follow=True
    )
    body = response.content.decode()
    # The row and the file's column in words, never a field path ("row 1: premise: …").
    assert "row 1: column “premise”: is required" in body and "row 2" in body
    assert nli_project.items.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
def test_a_file_of_another_kind_is_refused_once_in_the_interface_language(nli_project, django_user_model, language):
    """Question-project rows offered to an NLI project: the page says once which columns do
    not fit, in the interface's language, instead of "premise: is required" per row."""
    import html
    import json

    sup = logged_in(django_user_model.objects.get(username="sup"))
    sup.cookies["django_language"] = language
    rows = "".join(json.dumps({"id": f"q{i}", "context": "פסקה", "title": "כותרת"}) + "\n" for i in range(20))
    response = sup.post(
        f"/p/{nli_project.slug}/import/", {"file": upload("q.jsonl", rows), "format": "jsonl"}, follow=True
    )
    body = html.unescape(response.content.decode())
    from django.utils import translation

    from annotation.wording import join_list

    with translation.override(language):
        summary = str(
            translation.gettext(
                "These columns do not fit this kind of project; they are missing or empty: %(columns)s."
            )
        )
        # Each column by its name on the item page, the file's own name beside it.
        # Joined as the language joins a list ("، " in Persian).
        columns = join_list(f"“{translation.gettext(name)} ({name})”" for name in ("premise", "hypothesis"))
    assert body.count(summary % {"columns": columns}) == 1
    assert "is required" not in body and "row 2" not in body
    assert nli_project.items.count() == 0


@pytest.mark.django_db
def test_member_forms_refuse_non_supervisors(nli_project, django_user_model, make_user):
    make_user("someone")
    annotator = logged_in(django_user_model.objects.get(username="ann1"))
    response = annotator.post(
        f"/p/{nli_project.slug}/members/add/", {"username": "someone", "role": "annotator"}, follow=True
    )
    assert "Your role in this project does not allow this." in response.content.decode()
    assert not nli_project.memberships.filter(user__username="someone").exists()
    assert annotator.get(f"/p/{nli_project.slug}/").status_code == 403

    stranger = logged_in(django_user_model.objects.get(username="someone"))
    assert stranger.get(f"/p/{nli_project.slug}/").status_code == 404
    assert (
        stranger.post(f"/p/{nli_project.slug}/members/add/", {"username": "someone", "role": "annotator"}).status_code
        == 404
    )
    assert stranger.post(f"/p/{nli_project.slug}/import/", {"format": "jsonl"}).status_code == 404


@pytest.mark.django_db
def test_forms_need_csrf(nli_project, django_user_model):
    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.get(username="sup"))
    assert client.post(f"/p/{nli_project.slug}/members/add/", {"username": "x", "role": "annotator"}).status_code == 403


@pytest.mark.django_db
def test_disqualifying_a_member_frees_their_open_claims(nli_project, django_user_model, client_for):
    from annotation.models import Assignment, Item

    Item.objects.create(project=nli_project, external_id="only", payload={"premise": "p", "hypothesis": "h"})
    annotator = client_for(django_user_model.objects.get(username="ann1"))
    claim = annotator.get(f"/api/projects/{nli_project.slug}/next/").json()["assignment"]
    sup = client_for(django_user_model.objects.get(username="sup"))
    assert (
        sup.patch(
            f"/api/projects/{nli_project.slug}/members/ann1/", {"status": "disqualified"}, format="json"
        ).status_code
        == 200
    )
    assert Assignment.objects.get(pk=claim).status == "expired"
    assert annotator.get(f"/api/projects/{nli_project.slug}/next/").status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
def test_bad_rows_are_explained_in_the_interface_language(nli_project, django_user_model, language):
    """Rows that cannot be read (not JSON, not an object, a repeated id, a label the kind
    does not have) are refused in the interface's language, each with its row once, the
    column by its name on the item page: no English sentence from the parser or the import."""
    import html
    import json

    from django.utils import translation

    sup = logged_in(django_user_model.objects.get(username="sup"))
    sup.cookies["django_language"] = language
    good = {"id": "x1", "premise": "גשם ירד.", "hypothesis": "היה יבש."}
    rows = [json.dumps(good), "not json", "[1, 2]", json.dumps(good)]
    response = sup.post(
        f"/p/{nli_project.slug}/import/",
        {"file": upload("b.jsonl", "\n".join(rows) + "\n"), "format": "jsonl"},
        follow=True,
    )
    body = html.unescape(response.content.decode())
    with translation.override(language):
        gettext = translation.gettext
        expected = [
            gettext("row %(row)s") % {"row": 2},
            gettext("is not valid JSON (line %(line)s, column %(column)s)").split("%(line)s")[0],
            gettext("row %(row)s") % {"row": 3} + ": " + gettext("must be a JSON object"),
            gettext("duplicate id “%(id)s” (first in row %(row)s)") % {"id": "x1", "row": 1},
            gettext("column “%(column)s”") % {"column": f"{gettext('id')} (id)"}
            if gettext("id") != "id"
            else gettext("column “%(column)s”") % {"column": "id"},
        ]
    for text in expected:
        assert text in body, (text, body[body.find('class="error"') : body.find('class="error"') + 900])
    for english in (
        "is not valid JSON",
        "Expecting",
        "must be a JSON object",
        "duplicate id",
        "row 2 row 2",
        "row 2: row 2",
    ):
        assert english not in body, english
    assert nli_project.items.count() == 0
