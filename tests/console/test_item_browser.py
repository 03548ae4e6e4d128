"""The console's item browser and item page, over HTTP with a session: server-side filters
from allow-lists, search by external id and text, pagination, votes and history, usernames
to supervisors and the exports' pseudonyms to reviewers."""

import pytest
from django.test import Client

from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def browsed(nli_project, client_for, django_user_model):
    """60 Persian pairs in two splits and groups; ann1 and ann2 each label a different item,
    one item carries a flag."""
    from annotation.models import Item

    users = {u.username: u for u in django_user_model.objects.all()}
    rows = [{"id": f"pair-{i:02d}", "premise": f"پیش‌فرض شماره {i}", "hypothesis": "فرضیه", "split": "dev" if i % 2 else "train",
             "group": f"g{i % 3}"} for i in range(60)]  # fmt: skip
    rows[7]["premise"] = "کتابخانهٔ ملی در تهران است"
    assert (
        client_for(users["sup"])
        .post("/api/projects/fa-nli/import/", {"file": upload("n.jsonl", jsonl(rows)), "format": "jsonl"})
        .status_code
        == 201
    )
    labelled = {}
    for name, label in (("ann1", "neutral"), ("ann2", "entailment")):
        claimed = client_for(users[name]).get("/api/projects/fa-nli/next/").json()
        if claimed["item"]["id"] in labelled.values():
            # The order is random: ann2 may draw ann1's item, which would then carry two labels.
            skip = client_for(users[name]).post(f"/api/assignments/{claimed['assignment']}/skip/")
            assert skip.status_code == 204
            claimed = client_for(users[name]).get("/api/projects/fa-nli/next/").json()
            assert claimed["item"]["id"] not in labelled.values()
        assert (
            client_for(users[name])
            .post(f"/api/assignments/{claimed['assignment']}/submit/", {"value": {"label": label}}, format="json")
            .status_code
            == 201
        )
        labelled[name] = claimed["item"]["id"]
    Item.objects.filter(project=nli_project, external_id="pair-05").update(flags=["low_back_translation"])

    def client(name):
        c = Client()
        c.force_login(users[name])
        return c

    return {"client": client, "labelled": labelled, "project": nli_project, "users": users}


def _ids(page: str) -> list[str]:
    import re

    return re.findall(r"<bdi>(pair-\d\d)</bdi></a>", page)


def test_filters_search_and_pages(browsed, django_assert_max_num_queries):
    sup = browsed["client"]("sup")
    with django_assert_max_num_queries(15):
        first = sup.get("/console/p/fa-nli/items/").content.decode()
    assert _ids(first) == [f"pair-{i:02d}" for i in range(50)] and "60 items" in first
    second = sup.get("/console/p/fa-nli/items/?page=2").content.decode()
    assert _ids(second) == [f"pair-{i:02d}" for i in range(50, 60)]
    dev_g1 = _ids(sup.get("/console/p/fa-nli/items/?split=dev&group=g1").content.decode())
    assert dev_g1 == [f"pair-{i:02d}" for i in range(60) if i % 2 and i % 3 == 1]
    assert _ids(sup.get("/console/p/fa-nli/items/?flag=low_back_translation").content.decode()) == ["pair-05"]
    assert _ids(sup.get("/console/p/fa-nli/items/?q=کتابخانهٔ").content.decode()) == ["pair-07"]
    assert _ids(sup.get("/console/p/fa-nli/items/?q=PAIR-1").content.decode()) == [f"pair-{i}" for i in range(10, 20)]
    by_ann1 = _ids(sup.get("/console/p/fa-nli/items/?annotator=ann1").content.decode())
    assert len(by_ann1) == 1
    assert _ids(sup.get("/console/p/fa-nli/items/?round=1&status=open").content.decode())[:3] == [
        "pair-00",
        "pair-01",
        "pair-02",
    ]
    # Values outside the allow-lists are refused, naming the filter by its label on the page.
    for query, field in (("status=nope", "Status"), ("split=x", "Split"), ("round=9", "Round"), ("annotator=nobody", "Annotator"),
                         ("page=abc", "Page"), ("q=" + "x" * 201, "Search")):  # fmt: skip
        response = sup.get(f"/console/p/fa-nli/items/?{query}")
        assert response.status_code == 400 and f'role="alert" dir="auto">{field}:' in response.content.decode(), query


def test_pagination_keeps_the_filters(browsed):
    page = browsed["client"]("sup").get("/console/p/fa-nli/items/?split=train").content.decode()
    assert "split=train&amp;page=2" not in page  # 30 train items: one page
    page = browsed["client"]("sup").get("/console/p/fa-nli/items/?status=open").content.decode()
    assert "status=open&amp;page=2" in page


def test_item_page_names_annotators_to_supervisors_and_pseudonyms_to_reviewers(browsed):
    from annotation.selectors.names import annotator_pseudonym

    item = browsed["labelled"]["ann1"]
    sup_page = browsed["client"]("sup").get(f"/console/p/fa-nli/items/{item}/").content.decode()
    assert "<bdi>ann1</bdi>" in sup_page and "neutral" in sup_page and "Round 1" in sup_page
    # One label is no agreement: the box says so (it showed a share of 1.00 over one label).
    assert "One label so far: agreement needs at least two." in sup_page
    assert "/api/projects/fa-nli/export/?format=farstail" in sup_page  # every export format of the kind
    rev_page = browsed["client"]("rev").get(f"/console/p/fa-nli/items/{item}/").content.decode()
    pseudonym = annotator_pseudonym(browsed["project"].pk, browsed["users"]["ann1"].pk)
    assert pseudonym in rev_page and "ann1" not in rev_page
    rev_list = browsed["client"]("rev").get("/console/p/fa-nli/items/").content.decode()
    assert pseudonym in rev_list and "ann1" not in rev_list
    assert _ids(browsed["client"]("rev").get(f"/console/p/fa-nli/items/?annotator={pseudonym}").content.decode())


def test_items_of_other_projects_are_not_found_and_annotators_are_refused(browsed, django_user_model):
    from annotation.services.projects import project_create

    other = project_create(
        actor=browsed["users"]["root"], slug="other", name="Other", kind="nli_relabel", language="he"
    )
    from annotation.models import Item

    foreign = Item.objects.create(project=other, external_id="o1", payload={"premise": "a", "hypothesis": "b"})
    sup = browsed["client"]("sup")
    assert sup.get(f"/console/p/fa-nli/items/{foreign.pk}/").status_code == 404
    assert sup.get("/console/p/other/items/").status_code == 404
    assert browsed["client"]("ann1").get("/console/p/fa-nli/items/").status_code == 403


def test_preview_page_claims_nothing(browsed):
    from annotation.models import Assignment

    before = Assignment.objects.count()
    page = browsed["client"]("sup").get("/console/p/fa-nli/preview/").content.decode()
    assert "Preview as annotator" in page and '"preview": true' in page and "/api/projects/fa-nli/preview/" in page
    assert Assignment.objects.count() == before
