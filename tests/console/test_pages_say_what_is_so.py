"""Pages that said something untrue or too little: the item page's
agreement box beside its annotation count, the item browser's rows of one NLI group, and the
release page after a search that found nothing. (The adjudication counters that stayed stale
after a decision: tests/browser/test_quality_pages.py.)"""

import json

import pytest

pytestmark = pytest.mark.django_db

PREMISE = "הוועדה החליטה ביום שני לדחות את ההצבעה על התקציב בשבוע, בגלל מחלוקת בין הסיעות."
HYPOTHESES = ["ההצבעה נדחתה", "ההצבעה התקיימה כמתוכנן", "הסיעות הסכימו על הכול"]


@pytest.fixture
def nli(django_user_model):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = django_user_model.objects.create_user(username="say-admin", password="say-pass-123", is_staff=True)
    annotator = django_user_model.objects.create_user(username="say-ann", password="say-pass-123")
    project = project_create(actor=admin, slug="say-nli", name="הסקה", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    rows = [{"id": f"s{i}", "premise": PREMISE, "hypothesis": h, "group": "g1"} for i, h in enumerate(HYPOTHESES)]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    assert items_import(project=project, data=data, fmt="jsonl").created == 3
    return {"project": project, "admin": admin, "annotator": annotator}


def test_the_item_page_never_says_no_labels_beside_an_annotation(client, nli):
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator

    client.force_login(nli["admin"])
    claim = assignment_next_for_annotator(user=nli["annotator"], slug="say-nli")
    annotation_submit(user=nli["annotator"], assignment_id=claim.pk, value={"label": "entailment"})
    html = client.get(f"/console/p/say-nli/items/{claim.item_id}/").content.decode()
    assert "No labels in the current round yet." not in html
    assert "1 annotation in the current round." in html
    assert "One label so far: agreement needs at least two." in html
    other = claim.item.project.items.exclude(pk=claim.item_id).first()
    assert (
        "No annotations in the current round yet."
        in client.get(f"/console/p/say-nli/items/{other.pk}/").content.decode()
    )


def test_the_item_browser_tells_the_items_of_one_nli_group_apart(client, nli):
    client.force_login(nli["admin"])
    html = client.get("/console/p/say-nli/items/").content.decode()
    for hypothesis in HYPOTHESES:
        assert hypothesis in html


def test_the_release_page_says_the_last_search_found_nothing(client, nli):
    from annotation.models import Job

    client.force_login(nli["admin"])
    assert "Run the search to find them." in client.get("/p/say-nli/release/").content.decode()
    job = Job.objects.create(project=nli["project"], kind="duplicates", status=Job.Status.DONE, result={"pairs": 0})
    html = client.get("/p/say-nli/release/").content.decode()
    assert "Run the search to find them." not in html
    assert f"The last search (job #{job.pk}) found no pairs above its threshold." in html
    assert "No pairs with this decision." in client.get("/p/say-nli/release/?decision=keep").content.decode()


def test_the_release_page_says_removed_items_are_left_out_of_the_search(client, nli):
    from annotation.models import Item
    from annotation.services.decisions import WITHDRAWN, curation_removals_record

    client.force_login(nli["admin"])
    assert 'id="search-leaves-out"' not in client.get("/p/say-nli/release/").content.decode()
    # An item removed for another reason than a near-duplicate: the search does not compare
    # it, so a copy of it is not found, and the page says so.
    curation_removals_record([Item.objects.get(external_id="s0")], method=WITHDRAWN, reasons={}, user=nli["admin"])
    html = client.get("/p/say-nli/release/").content.decode()
    assert "1 item removed for another reason is left out of the search: copies of it are not found." in html
    client.cookies["django_language"] = "he"
    html = client.get("/p/say-nli/release/", HTTP_ACCEPT_LANGUAGE="he").content.decode()
    assert "פריט אחד שהוסר מסיבה אחרת אינו נכלל בחיפוש" in html
