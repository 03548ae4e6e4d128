"""`next` and `submit` rules and the item list, through HTTP (docs/api.md "Annotating")."""

import json
from collections import Counter
from datetime import timedelta

import pytest

SLUG = "fa-nli"


def jsonl(*records) -> bytes:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")


def error_list(response, status: int = 400) -> list[dict]:
    assert response.status_code == status, response.content[:1000]
    body = response.json()
    assert set(body) == {"errors"}, body
    assert isinstance(body["errors"], list) and body["errors"]
    for error in body["errors"]:
        assert {"field", "message"} <= set(error) <= {"field", "message", "row"}, error
        assert isinstance(error["message"], str) and error["message"]
    return body["errors"]


def import_records(project, *records):
    from annotation.services.imports import items_import

    return items_import(project=project, data=jsonl(*records), fmt="jsonl", filename="x.jsonl")


@pytest.fixture
def users(nli_project, django_user_model):
    return {user.username: user for user in django_user_model.objects.all()}


@pytest.fixture
def clients(users, client_for):
    return {name: client_for(user) for name, user in users.items()}


@pytest.fixture
def make_project(db, make_user, client_for):
    """A project of `kind` with `settings` and annotators a1..aN; returns (project, clients by name)."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    def make(slug: str, *, annotators: int, settings=None, kind: str = "nli_relabel"):
        boss = make_user(f"{slug}-sup")
        staff = make_user(f"{slug}-staff", staff=True)
        project = project_create(actor=staff, slug=slug, name=slug, kind=kind, language="he", settings=settings)
        Membership.objects.create(project=project, user=boss, role="supervisor", status="active")
        team = {"sup": client_for(boss)}
        for number in range(1, annotators + 1):
            user = make_user(f"{slug}-a{number}")
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
            team[f"a{number}"] = client_for(user)
        return project, team

    return make


def next_for(client, slug: str = SLUG):
    return client.get(f"/api/projects/{slug}/next/")


def submit(client, assignment: int, value=None, **extra):
    body = {"value": {"label": "neutral"} if value is None else value}
    return client.post(f"/api/assignments/{assignment}/submit/", body, format="json", **extra)


def label_one(client, slug: str = SLUG, label: str = "neutral") -> dict:
    claim = next_for(client, slug)
    assert claim.status_code == 200, claim.content
    body = claim.json()
    response = submit(client, body["assignment"], {"label": label})
    assert response.status_code == 201, response.content
    return body


# ---------------------------------------------------------------- what next returns


@pytest.mark.django_db
def test_next_payload_hides_label_author_and_reference(nli_project, clients, make_user):
    make_user("hidden-author-zq")
    import_records(
        nli_project,
        {
            "id": "x1",
            "premise": "הספר מונח על השולחן.",
            "hypothesis": "יש ספר.",
            "label": "contradiction",
            "author": "hidden-author-zq",
            "group": "g1",
            "extra": {"note": "secret-note-zq"},
        },
    )
    response = next_for(clients["ann1"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"assignment", "item"}
    assert isinstance(body["assignment"], int)
    assert set(body["item"]) == {"id", "external_id", "payload"}
    assert body["item"]["external_id"] == "x1"
    assert body["item"]["payload"] == {"premise": "הספר מונח על השולחן.", "hypothesis": "יש ספר."}
    text = response.content.decode("utf-8")
    for secret in ("label", "author", "reference", "contradiction", "hidden-author-zq", "secret-note-zq", "extra"):
        assert secret not in text, secret


@pytest.mark.django_db
def test_label_test_gold_is_hidden(make_project):
    from annotation.models import Item

    project, team = make_project("he-test", annotators=1, kind="label_test")
    import_records(project, {"id": "t1", "premise": "פ", "hypothesis": "ה", "label": "entailment"})
    assert Item.objects.get(project=project).reference_label == "entailment"
    response = next_for(team["a1"], "he-test")
    assert response.status_code == 200
    text = response.content.decode("utf-8")
    assert "entailment" not in text and "label" not in text
    assert response.json()["item"]["payload"] == {"premise": "פ", "hypothesis": "ה"}


@pytest.mark.django_db
def test_next_returns_text_byte_exact(nli_project, clients):
    premise = "می\u200cخواهم  \u200f"
    import_records(nli_project, {"id": "z", "premise": premise, "hypothesis": "\u00a0h "})
    payload = next_for(clients["ann1"]).json()["item"]["payload"]
    assert payload == {"premise": premise, "hypothesis": "\u00a0h "}


@pytest.mark.django_db
def test_same_open_claim_is_returned_again(nli_project, clients):
    from annotation.models import Assignment

    import_records(
        nli_project, *({"id": f"i{n}", "premise": f"p{n}", "hypothesis": "h", "group": f"g{n}"} for n in range(6))
    )
    first = next_for(clients["ann1"]).json()
    for _ in range(3):
        again = next_for(clients["ann1"])
        assert again.status_code == 200
        assert again.json()["assignment"] == first["assignment"]
        assert again.json()["item"] == first["item"]
    assert Assignment.objects.filter(annotator__username="ann1").count() == 1


@pytest.mark.django_db
def test_204_when_nothing_is_left(nli_project, clients):
    response = next_for(clients["ann1"])
    assert response.status_code == 204
    assert response.content == b""
    import_records(
        nli_project, {"id": "a", "premise": "p", "hypothesis": "h"}, {"id": "b", "premise": "q", "hypothesis": "h"}
    )
    seen = {label_one(clients["ann1"])["item"]["id"], label_one(clients["ann1"])["item"]["id"]}
    assert len(seen) == 2
    assert next_for(clients["ann1"]).status_code == 204
    # others still get both items
    assert next_for(clients["ann2"]).status_code == 200


@pytest.mark.django_db
def test_never_the_callers_own_item(nli_project, clients):
    own = [
        {"id": f"own{n}", "premise": f"p{n}", "hypothesis": "h", "label": "e", "author": "ann1", "group": f"o{n}"}
        for n in range(6)
    ]
    import_records(nli_project, *own, {"id": "other", "premise": "q", "hypothesis": "h", "group": "x"})
    got = label_one(clients["ann1"])
    assert got["item"]["external_id"] == "other"
    assert next_for(clients["ann1"]).status_code == 204
    # someone else does get ann1's items
    assert next_for(clients["ann2"]).json()["item"]["external_id"] in {f"own{n}" for n in range(6)} | {"other"}


@pytest.mark.django_db
def test_only_authored_items_gives_204(nli_project, clients):
    import_records(nli_project, {"id": "own", "premise": "p", "hypothesis": "h", "author": "ann1"})
    assert next_for(clients["ann1"]).status_code == 204
    assert next_for(clients["ann2"]).json()["item"]["external_id"] == "own"


@pytest.mark.django_db
def test_labelled_item_needs_n_minus_one_votes(make_project):
    project, team = make_project("c3", annotators=4, settings={"consensus_n": 3, "consensus_k": 2})
    import_records(project, {"id": "L", "premise": "p", "hypothesis": "h", "label": "entailment"})
    label_one(team["a1"], "c3")
    label_one(team["a2"], "c3")
    assert next_for(team["a3"], "c3").status_code == 204
    assert next_for(team["a4"], "c3").status_code == 204
    item = team["sup"].get("/api/projects/c3/items/").json()["results"][0]
    assert item["status"] == "complete"
    assert sum(item["votes"].values()) == 2


@pytest.mark.django_db
def test_unlabelled_item_needs_n_votes(make_project):
    project, team = make_project("c3", annotators=4, settings={"consensus_n": 3, "consensus_k": 2})
    import_records(project, {"id": "U", "premise": "p", "hypothesis": "h"})
    label_one(team["a1"], "c3")
    label_one(team["a2"], "c3")
    third = next_for(team["a3"], "c3")
    assert third.status_code == 200 and third.json()["item"]["external_id"] == "U"
    assert submit(team["a3"], third.json()["assignment"]).status_code == 201
    assert next_for(team["a4"], "c3").status_code == 204


@pytest.mark.django_db
def test_open_claims_hold_slots(make_project):
    """Claims that are not submitted yet count against the item's votes."""
    project, team = make_project("c3", annotators=4, settings={"consensus_n": 3, "consensus_k": 2})
    import_records(project, {"id": "L", "premise": "p", "hypothesis": "h", "label": "n"})
    assert next_for(team["a1"], "c3").status_code == 200
    assert next_for(team["a2"], "c3").status_code == 200
    assert next_for(team["a3"], "c3").status_code == 204


@pytest.mark.django_db
def test_expired_claim_frees_its_slot(make_project):
    from django.utils import timezone

    from annotation.models import Annotation, Assignment

    project, team = make_project("c3", annotators=4, settings={"consensus_n": 3, "consensus_k": 2, "claim_ttl": 10})
    import_records(project, {"id": "L", "premise": "p", "hypothesis": "h", "label": "n"})
    first = next_for(team["a1"], "c3").json()
    assert next_for(team["a2"], "c3").status_code == 200
    assert next_for(team["a3"], "c3").status_code == 204

    claim = Assignment.objects.get(pk=first["assignment"])
    assert timedelta(seconds=5) < claim.expires_at - timezone.now() <= timedelta(seconds=10)
    Assignment.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    taken = next_for(team["a3"], "c3")
    assert taken.status_code == 200
    assert taken.json()["item"]["external_id"] == "L"
    # the expired claimant's late submit finds the slot given away
    late = submit(team["a1"], first["assignment"])
    error_list(late, 409)
    assert Annotation.objects.count() == 0
    assert next_for(team["a1"], "c3").status_code == 204


@pytest.mark.django_db
def test_expired_claim_is_replaced_by_a_fresh_one(make_project):
    from django.utils import timezone

    from annotation.models import Assignment

    project, team = make_project("c3", annotators=1, settings={"consensus_n": 3, "consensus_k": 2, "claim_ttl": 10})
    import_records(project, {"id": "a", "premise": "p", "hypothesis": "h"})
    first = next_for(team["a1"], "c3").json()
    Assignment.objects.filter(pk=first["assignment"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    second = next_for(team["a1"], "c3")
    assert second.status_code == 200
    assert second.json()["assignment"] != first["assignment"]
    assert Assignment.objects.get(pk=first["assignment"]).status == "expired"
    assert submit(team["a1"], second.json()["assignment"]).status_code == 201


def _check_group_sequence(sequence: list[str], sizes: dict[str, int]) -> None:
    remaining = dict(sizes)
    remaining[sequence[0]] -= 1
    for previous, current in zip(sequence, sequence[1:]):
        if current == previous:
            others = {group: left for group, left in remaining.items() if group != current and left}
            assert not others, f"served {current} twice in a row while {others} were available: {sequence}"
        remaining[current] -= 1
    assert all(left == 0 for left in remaining.values())


@pytest.mark.django_db
def test_never_the_same_group_twice_in_a_row_when_another_is_available(nli_project, clients):
    sizes = {"big": 8, "mid": 3, "small": 2}
    records = [
        {"id": f"{group}{n}", "premise": f"premise of {group}", "hypothesis": f"h{n}", "group": group}
        for group, size in sizes.items()
        for n in range(size)
    ]
    import_records(nli_project, *records)
    orders = []
    for name in ("ann1", "ann2", "ann3"):
        sequence = []
        while True:
            claim = next_for(clients[name])
            if claim.status_code == 204:
                break
            body = claim.json()
            group = body["item"]["external_id"].rstrip("0123456789")
            sequence.append(group)
            assert submit(clients[name], body["assignment"]).status_code == 201
        assert Counter(sequence) == Counter(sizes)
        _check_group_sequence(sequence, sizes)
        orders.append(sequence)


@pytest.mark.django_db
def test_group_rule_holds_over_many_small_groups(nli_project, clients):
    """Statistical: 12 groups of 1-3 items; every annotator's order keeps the rule."""
    sizes = {f"g{n}": 1 + n % 3 for n in range(12)}
    records = [
        {"id": f"{group}-{n}", "premise": group, "hypothesis": f"h{n}", "group": group}
        for group, size in sizes.items()
        for n in range(size)
    ]
    import_records(nli_project, *records)
    for name in ("ann1", "ann2", "ann3"):
        sequence = []
        while (claim := next_for(clients[name])).status_code == 200:
            sequence.append(claim.json()["item"]["external_id"].split("-")[0])
            submit(clients[name], claim.json()["assignment"])
        _check_group_sequence(sequence, sizes)


# ---------------------------------------------------------------- disqualified


@pytest.mark.django_db
def test_disqualified_member_gets_403_on_next_and_submit(nli_project, clients):
    from annotation.models import Annotation

    import_records(
        nli_project, {"id": "a", "premise": "p", "hypothesis": "h"}, {"id": "b", "premise": "q", "hypothesis": "h"}
    )
    claim = next_for(clients["ann1"]).json()
    patched = clients["sup"].patch(f"/api/projects/{SLUG}/members/ann1/", {"status": "disqualified"}, format="json")
    assert patched.status_code == 200
    error_list(next_for(clients["ann1"]), 403)
    error_list(submit(clients["ann1"], claim["assignment"]), 403)
    error_list(clients["ann1"].get(f"/api/projects/{SLUG}/progress/"), 403)
    assert Annotation.objects.count() == 0


# ---------------------------------------------------------------- submit


BAD_VALUES = [
    ("label-outside-set", {"value": {"label": "maybe"}}, "value.label"),
    ("short-code", {"value": {"label": "e"}}, "value.label"),
    ("label-null", {"value": {"label": None}}, "value.label"),
    ("label-number", {"value": {"label": 1}}, "value.label"),
    ("empty-value", {"value": {}}, "value.label"),
    ("missing-value", {}, "value"),
    ("other-key-instead", {"label": "neutral"}, "value"),
    ("value-a-string", {"value": "neutral"}, "value"),
    ("value-a-list", {"value": ["neutral"]}, "value"),
    ("value-null", {"value": None}, "value"),
    ("extra-keys", {"value": {"label": "neutral", "confidence": 0.9}}, "value"),
    ("body-a-list", [{"value": {"label": "neutral"}}], "body"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "field"), [case[1:] for case in BAD_VALUES], ids=[case[0] for case in BAD_VALUES])
def test_bad_value_is_400_naming_the_field_and_stores_nothing(nli_project, clients, body, field):
    from annotation.models import Annotation, Assignment

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    response = clients["ann1"].post(f"/api/assignments/{claim}/submit/", body, format="json")
    errors = error_list(response, 400)
    fields = [error["field"] for error in errors]
    assert any(name == field or (name or "").startswith(f"{field}.") for name in fields), fields
    if field == "value" and isinstance(body, dict) and isinstance(body.get("value"), dict):
        assert "confidence" in " ".join(error["message"] + str(error["field"]) for error in errors)
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=claim).status == "claimed"
    # the claim is still good for a valid value
    assert submit(clients["ann1"], claim, {"label": "entailment"}).status_code == 201


@pytest.mark.django_db
def test_submit_returns_the_annotation(nli_project, clients):
    from annotation.models import Annotation

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()
    response = submit(clients["ann1"], claim["assignment"], {"label": "contradiction"})
    assert response.status_code == 201
    body = response.json()
    assert body["value"] == {"label": "contradiction"}
    assert body["assignment"] == claim["assignment"]
    assert body["item"] == claim["item"]["id"]
    annotation = Annotation.objects.get()
    assert annotation.pk == body["id"] and annotation.annotator.username == "ann1"


@pytest.mark.django_db
def test_submit_body_is_the_documented_annotation_shape(nli_project, clients):
    """The submit view builds its body by hand (hot path); it must stay what the schema's
    SubmittedSerializer says, value for value, for the stored row and the kind's warnings
    (none for nli_relabel)."""
    from annotation.models import Annotation
    from api.serializers import SubmittedSerializer

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann2"]).json()
    body = submit(clients["ann2"], claim["assignment"], {"label": "entailment"}).json()
    annotation = Annotation.objects.get()
    annotation.warnings = []
    assert body == json.loads(json.dumps(SubmittedSerializer(annotation).data))


@pytest.mark.django_db
def test_second_submit_is_409(nli_project, clients):
    from annotation.models import Annotation

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    assert submit(clients["ann1"], claim, {"label": "neutral"}).status_code == 201
    error_list(submit(clients["ann1"], claim, {"label": "entailment"}), 409)
    assert list(Annotation.objects.values_list("value", flat=True)) == [{"label": "neutral"}]


@pytest.mark.django_db
def test_idempotency_key_replays_the_first_result(nli_project, clients):
    from annotation.models import Annotation

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    first = submit(clients["ann1"], claim, {"label": "neutral"}, HTTP_IDEMPOTENCY_KEY="key-1")
    assert first.status_code == 201
    replay = submit(clients["ann1"], claim, {"label": "neutral"}, HTTP_IDEMPOTENCY_KEY="key-1")
    assert replay.status_code == first.status_code
    assert replay.json() == first.json()
    # the same key with another body is refused and changes nothing
    other = error_list(submit(clients["ann1"], claim, {"label": "entailment"}, HTTP_IDEMPOTENCY_KEY="key-1"), 409)
    assert other[0]["field"] == "Idempotency-Key"
    assert Annotation.objects.count() == 1
    assert Annotation.objects.get().value == {"label": "neutral"}
    # a different key (or none) after success is a conflict
    error_list(submit(clients["ann1"], claim, {"label": "neutral"}, HTTP_IDEMPOTENCY_KEY="key-2"), 409)
    error_list(submit(clients["ann1"], claim, {"label": "neutral"}), 409)
    assert Annotation.objects.count() == 1


@pytest.mark.django_db
def test_idempotency_key_is_per_user(nli_project, clients):
    """Another user's identical key does not replay someone else's result."""
    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    assert submit(clients["ann1"], claim, HTTP_IDEMPOTENCY_KEY="shared").status_code == 201
    stolen = submit(clients["ann2"], claim, HTTP_IDEMPOTENCY_KEY="shared")
    assert stolen.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "x" * 201, "bad\nkey"], ids=["empty", "too-long", "control-char"])
def test_bad_idempotency_key_is_400(nli_project, clients, key):
    from annotation.models import Annotation

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    response = submit(clients["ann1"], claim, HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 400, response.content
    assert Annotation.objects.count() == 0


RAW_BODIES = [
    ("nul-escape-in-value", b'{"value": {"label": "neutral\\u0000"}}'),
    ("nul-escape-in-key", b'{"value": {"lab\\u0000el": "neutral"}}'),
    ("lone-surrogate", b'{"value": {"label": "\\ud800"}}'),
    ("lone-low-surrogate-in-key", b'{"\\udc00": 1, "value": {"label": "neutral"}}'),
    ("raw-nul-byte", b'{"value": {"label": "neu\x00tral"}}'),
    ("invalid-utf8", b'{"value": {"label": "\xff\xfe"}}'),
    ("invalid-json", b'{"value": {"label": '),
    ("not-json-at-all", b"label=neutral"),
    ("trailing-garbage", b'{"value": {"label": "neutral"}} x'),
    ("empty-body", b""),
    ("json-null", b"null"),
    ("nan", b'{"value": {"label": NaN}}'),
]


@pytest.mark.django_db
@pytest.mark.parametrize("raw", [case[1] for case in RAW_BODIES], ids=[case[0] for case in RAW_BODIES])
def test_hostile_json_body_is_400_not_500(nli_project, clients, raw):
    from annotation.models import Annotation

    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    claim = next_for(clients["ann1"]).json()["assignment"]
    response = clients["ann1"].generic(
        "POST", f"/api/assignments/{claim}/submit/", raw, content_type="application/json"
    )
    error_list(response, 400)
    assert Annotation.objects.count() == 0


# ---------------------------------------------------------------- progress


@pytest.mark.django_db
def test_progress_counts_done_and_remaining(nli_project, clients):
    import_records(nli_project, *({"id": f"i{n}", "premise": f"p{n}", "hypothesis": "h"} for n in range(3)))
    assert clients["ann1"].get(f"/api/projects/{SLUG}/progress/").json() == {"done": 0, "remaining": 3}
    label_one(clients["ann1"])
    progress = clients["ann1"].get(f"/api/projects/{SLUG}/progress/").json()
    assert progress["done"] == 1 and progress["remaining"] == 2


# ---------------------------------------------------------------- the item list


@pytest.fixture
def many_items(nli_project):
    records = [
        {
            "id": f"i{n:04d}",
            "premise": f"p{n}",
            "hypothesis": "h",
            "split": "train" if n % 5 else "dev",
            "group": f"g{n // 3}",
        }
        for n in range(1005)
    ]
    import_records(nli_project, *records)
    return records


@pytest.mark.django_db
def test_item_list_pagination(clients, many_items):
    sup = clients["sup"]
    url = f"/api/projects/{SLUG}/items/"
    default = sup.get(url).json()
    assert default["count"] == 1005
    assert len(default["results"]) == 50
    full = sup.get(f"{url}?page_size=1000").json()
    assert len(full["results"]) == 1000 and full["next"]
    capped = sup.get(f"{url}?page_size=100000").json()
    assert len(capped["results"]) == 1000
    last = sup.get(f"{url}?page_size=1000&page=2").json()
    assert len(last["results"]) == 5 and last["next"] is None
    ids = [item["external_id"] for item in full["results"] + last["results"]]
    assert len(set(ids)) == 1005
    for junk in ("abc", "-1", "0"):
        response = sup.get(f"{url}?page_size={junk}")
        assert response.status_code == 200
        assert 1 <= len(response.json()["results"]) <= 1000
    error_list(sup.get(f"{url}?page=999"), 404)
    error_list(sup.get(f"{url}?page=abc"), 404)


@pytest.mark.django_db
def test_item_list_shape(clients, nli_project):
    import_records(
        nli_project,
        {"id": "a", "premise": "p", "hypothesis": "h", "label": "e", "author": "ann3", "split": "dev", "group": "g"},
    )
    [item] = clients["rev"].get(f"/api/projects/{SLUG}/items/").json()["results"]
    assert {"id", "external_id", "payload", "status", "split", "group", "round"} <= set(item)
    assert isinstance(item["id"], int)
    assert (item["external_id"], item["status"], item["split"], item["group"], item["round"]) == (
        "a",
        "open",
        "dev",
        "g",
        1,
    )
    assert item["payload"]["premise"] == "p"
    # The author's username is for supervisors; the reviewer reads the export's pseudonym.
    from annotation.models import Item
    from annotation.selectors.names import annotator_pseudonym

    author = Item.objects.get(project=nli_project, external_id="a").author
    assert item["author"] == annotator_pseudonym(nli_project.pk, author.pk)
    assert clients["sup"].get(f"/api/projects/{SLUG}/items/").json()["results"][0]["author"] == "ann3"


@pytest.mark.django_db
def test_item_list_filters(clients, many_items, nli_project):
    sup = clients["sup"]
    url = f"/api/projects/{SLUG}/items/"
    assert sup.get(f"{url}?split=dev").json()["count"] == 201
    assert sup.get(f"{url}?split=train").json()["count"] == 804
    assert sup.get(f"{url}?split=nope").json()["count"] == 0
    assert sup.get(f"{url}?group=g0").json()["count"] == 3
    assert sup.get(f"{url}?status=open").json()["count"] == 1005
    assert sup.get(f"{url}?status=complete").json()["count"] == 0
    assert sup.get(f"{url}?status=open&split=dev").json()["count"] == 201
    errors = error_list(sup.get(f"{url}?status=bogus"))
    assert errors[0]["field"] == "status"
    # parameters outside the allow-list never reach the ORM
    for junk in ("external_id=i0001", "payload__premise=p1", "project__slug=x", "author__password__startswith=m"):
        response = sup.get(f"{url}?{junk}")
        assert response.status_code in (200, 400), junk
        if response.status_code == 200:
            assert response.json()["count"] == 1005, junk


@pytest.mark.django_db
def test_item_list_status_filter_after_completion(make_project):
    project, team = make_project("c2", annotators=1, settings={"consensus_n": 2, "consensus_k": 2})
    import_records(
        project,
        {"id": "L", "premise": "p", "hypothesis": "h", "label": "e"},
        {"id": "U", "premise": "q", "hypothesis": "h"},
    )
    while (claim := next_for(team["a1"], "c2")).status_code == 200:
        submit(team["a1"], claim.json()["assignment"])
    complete = team["sup"].get("/api/projects/c2/items/?status=complete").json()["results"]
    assert [item["external_id"] for item in complete] == ["L"]
    open_ = team["sup"].get("/api/projects/c2/items/?status=open").json()["results"]
    assert [item["external_id"] for item in open_] == ["U"]


@pytest.mark.django_db
def test_item_list_shows_votes_per_label(nli_project, clients):
    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h", "label": "e"})
    label_one(clients["ann1"], label="neutral")
    label_one(clients["ann2"], label="entailment")
    label_one(clients["ann3"], label="neutral")
    assert next_for(clients["ann1"]).status_code == 204
    [item] = clients["sup"].get(f"/api/projects/{SLUG}/items/").json()["results"]
    assert item["votes"] == {"entailment": 1, "neutral": 2}
    # votes never name who cast them
    assert "ann1" not in json.dumps(item) and "ann2" not in json.dumps(item)


@pytest.mark.django_db
def test_open_claims_are_not_votes(nli_project, clients):
    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h"})
    next_for(clients["ann1"])
    [item] = clients["sup"].get(f"/api/projects/{SLUG}/items/").json()["results"]
    assert not item["votes"]


@pytest.mark.django_db
@pytest.mark.parametrize(("caller", "expected"), [("sup", 200), ("rev", 200), ("ann1", 403)])
def test_item_list_is_for_supervisors_and_reviewers(nli_project, clients, caller, expected):
    import_records(nli_project, {"id": "a", "premise": "p", "hypothesis": "h", "label": "contradiction"})
    response = clients[caller].get(f"/api/projects/{SLUG}/items/")
    assert response.status_code == expected
    if expected == 403:
        error_list(response, 403)
        assert b"contradiction" not in response.content
