"""The audit log records translation rating's supervisor actions: a back-translation filter
run (who, with which threshold and released system), a restore of the items it removed
(each item's status before and after), and a stratified sample (n, stratum, seed). A
refused action leaves no entry."""

import pytest

from tests.kinds.translation.test_back_translation_filter import filtered  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def entries(action: str) -> list:
    from annotation.models import AuditEntry

    return list(AuditEntry.objects.filter(project__slug="bt", action=action).select_related("actor").order_by("id"))


def test_a_back_translation_run_is_in_the_audit_log(filtered):  # noqa: F811
    [entry] = entries("back_translation_run")
    assert entry.actor.username == "sup"
    assert entry.target == f"job:{filtered['job']['id']}"
    assert entry.after == {"threshold": 0.75, "released_system": "amazon"}


def test_a_restore_is_in_the_audit_log_with_each_status(filtered):  # noqa: F811
    from annotation.models import Item

    removed = list(Item.objects.filter(project__slug="bt", status="removed").order_by("pk"))
    assert len(removed) == 2
    sup = filtered["sup"]
    # A refused restore (an item the filter did not remove) records nothing.
    kept = Item.objects.filter(project__slug="bt").exclude(status="removed").first()
    refused = sup.post("/api/projects/bt/back-translation/restore/", {"items": [kept.pk]}, format="json")
    assert refused.status_code == 400 and entries("back_translation_restore") == []
    done = sup.post("/api/projects/bt/back-translation/restore/", {"items": [i.pk for i in removed]}, format="json")
    assert done.status_code == 200, done.content
    [entry] = entries("back_translation_restore")
    assert entry.actor.username == "sup" and entry.target == "project:bt"
    assert entry.before == {"status": {item.external_id: "removed" for item in removed}}
    assert (
        entry.after == {"status": {item.external_id: Item.objects.get(pk=item.pk).status for item in removed}}
        and "removed" not in entry.after["status"].values()
    )


def test_a_sample_is_in_the_audit_log(filtered):  # noqa: F811
    sup = filtered["sup"]
    refused = sup.post("/api/projects/bt/sample/", {"n": 0}, format="json")
    assert refused.status_code == 400 and entries("sample") == []
    response = sup.post("/api/projects/bt/sample/", {"n": 2, "seed": 5}, format="json")
    assert response.status_code == 200, response.content
    [entry] = entries("sample")
    assert entry.actor.username == "sup" and entry.target == f"job:{response.json()['job']}"
    assert entry.after == {"n": 2, "stratum": "split", "seed": 5, "population": 3}
