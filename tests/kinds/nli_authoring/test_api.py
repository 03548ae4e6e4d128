"""`nli_authoring` through the HTTP contract (FarsTail §3.1; docs/api.md; docs/kinds.md "The kinds"):
multiple-choice questions are imported, an author writes premise + three hypotheses through
next/submit, and three `nli_relabel` items appear in the linked project with their author,
intended labels and the question as group. Bad values are 400s naming the field and store
nothing; a missing link is a 409; authors never relabel their own pairs."""

import io
import json

import pytest

pytestmark = pytest.mark.django_db

ZWNJ, RLM, NBSP = "\u200c", "\u200f", "\u00a0"

QUESTIONS = [
    {
        "id": "q1",
        "question": "دبیر کل سازمان ملل متحد قبل از آنتونیو گوترش چه کسی بود؟",
        "choices": ["خاویر سولانا", "بان کی مون", "کوفی عنان", "یوشیرو موری"],
        "answer_index": 1,
        "group": "un",
        "split": "train",
    },
    {
        "id": "q2",
        "question": f"پایتخت ایران کدام شهر است؟{RLM}",
        "choices": ["اصفهان", "تهران"],
        "answer_index": 1,
        "split": "test",
    },
]

# FarsTail Fig. 2, with a ZWNJ, an NBSP and surrounding spaces that must all survive.
AUTHORED = {
    "premise": f" مجمع عمومی سازمان ملل، آنتونیو گوترش را به عنوان جانشین بان کی{ZWNJ}مون برگزید.\n",
    "entailment": "بان کی مون قبل از آنتونیو گوترش دبیر کل سازمان ملل متحد بود.",
    "contradiction": f"پیش از آنتونیو گوترش، کوفی عنان به عنوان دبیر کل سازمان ملل انتخاب شده{NBSP}بود.",
    "neutral": "اعضای سازمان ملل به اتفاق آرا آنتونیو گوترش را به عنوان دبیر کل نامزد کردند. ",
}


def upload(name: str, text: str):
    handle = io.BytesIO(text.encode("utf-8"))
    handle.name = name
    return handle


def jsonl(rows) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n" for row in rows)


@pytest.fixture
def setup(make_user, client_for):
    """An admin creates a relabel project and an authoring project linked to it; authors
    a1, a2 and relabeler r1 are annotators of both."""
    admin = make_user("root", staff=True)
    root = client_for(admin)
    made = root.post(
        "/api/projects/",
        {"slug": "fa-relabel", "name": "Persian relabel", "kind": "nli_relabel", "language": "fa"},
        format="json",
    )
    assert made.status_code == 201, made.content
    made = root.post(
        "/api/projects/",
        {
            "slug": "fa-author",
            "name": "Persian authoring",
            "kind": "nli_authoring",
            "language": "fa",
            "settings": {"relabel_project": "fa-relabel"},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["authors_per_question"] == 1
    users = {"root": admin}
    for name in ("a1", "a2", "r1"):
        users[name] = make_user(name)
        for slug in ("fa-author", "fa-relabel"):
            added = root.post(
                f"/api/projects/{slug}/members/",
                {"username": name, "role": "annotator", "status": "active"},
                format="json",
            )
            assert added.status_code == 201, added.content
    imported = root.post(
        "/api/projects/fa-author/import/", {"file": upload("q.jsonl", jsonl(QUESTIONS)), "format": "jsonl"}
    )
    assert imported.status_code == 201, imported.content
    assert imported.json()["created"] == 2
    return {"users": users, "root": root, "client": lambda name: client_for(users[name])}


def take_question(client, external_id=None):
    response = client.get("/api/projects/fa-author/next/")
    assert response.status_code == 200, response.content
    return response.json()


def generated(slug="fa-relabel"):
    from annotation.models import Item

    return list(
        Item.objects.filter(project__slug=slug, author__isnull=False)
        .select_related("author")
        .order_by("position", "id")
    )


def test_import_validates_rows_and_accepts_csv_with_json_choices(setup):
    from annotation.models import Item

    root = setup["root"]
    bad = [
        {"id": "ok", "question": "سؤال؟", "choices": ["الف", "ب"], "answer_index": 0},
        {"id": "one-choice", "question": "سؤال؟", "choices": ["الف"], "answer_index": 0},
        {"id": "out-of-range", "question": "سؤال؟", "choices": ["الف", "ب"], "answer_index": 2},
        {"id": "empty-choice", "question": "سؤال؟", "choices": ["الف", " "], "answer_index": 0},
        {"id": "no-question", "choices": ["الف", "ب"], "answer_index": 0},
        {"id": "bool-index", "question": "سؤال؟", "choices": ["الف", "ب"], "answer_index": True},
        {"id": "not-a-list", "question": "سؤال؟", "choices": "الف,ب", "answer_index": 0},
        '{"id": "nul", "question": "a\\u0000b", "choices": ["x", "y"], "answer_index": 0}',
        '{"id": "surrogate", "question": "ok", "choices": ["x", "\\ud800"], "answer_index": 0}',
        {"id": "x" * 121, "question": "سؤال؟", "choices": ["الف", "ب"], "answer_index": 0},
    ]
    response = root.post(
        "/api/projects/fa-author/import/", {"file": upload("bad.jsonl", jsonl(bad)), "format": "jsonl"}
    )
    assert response.status_code == 400, response.content
    errors = {(e["row"], e["field"]) for e in response.json()["errors"]}
    assert errors == {
        (2, "choices"),
        (3, "answer_index"),
        (4, "choices[1]"),
        (5, "question"),
        (6, "answer_index"),
        (7, "choices"),
        (8, "question"),
        (9, "choices[1]"),
        (10, "id"),
    }
    assert not Item.objects.filter(project__slug="fa-author", external_id="ok").exists()

    csv_text = 'id,question,choices,answer_index,split\r\nc1,پرسش؟,"[""یک"", ""دو"", ""سه""]",2,dev\r\n'
    response = root.post("/api/projects/fa-author/import/", {"file": upload("q.csv", csv_text), "format": "csv"})
    assert response.status_code == 201, response.content
    item = Item.objects.get(project__slug="fa-author", external_id="c1")
    assert item.payload == {"question": "پرسش؟", "choices": ["یک", "دو", "سه"], "answer_index": 2}
    assert item.split == "dev"
    bad_csv = 'id,question,choices,answer_index\r\nc2,پرسش؟,not json,0\r\nc3,پرسش؟,"[""یک""]",x\r\n'
    response = root.post("/api/projects/fa-author/import/", {"file": upload("b.csv", bad_csv), "format": "csv"})
    assert response.status_code == 400
    assert {(e["row"], e["field"]) for e in response.json()["errors"]} == {
        (1, "choices"),
        (2, "choices"),
        (2, "answer_index"),
    }  # the column that is not JSON


def test_author_writes_three_pairs_that_land_in_the_relabel_project(setup):
    from annotation.models import Annotation, Item

    root = setup["root"]
    # An item already in the relabel project: generated items come after it.
    prior = {"id": "old", "premise": "p", "hypothesis": "h", "label": "e"}
    assert (
        root.post(
            "/api/projects/fa-relabel/import/", {"file": upload("o.jsonl", jsonl([prior] * 1)), "format": "jsonl"}
        ).status_code
        == 201
    )
    Item.objects.filter(project__slug="fa-relabel", external_id="old").update(position=41)

    a1 = setup["client"]("a1")
    body = take_question(a1)
    source = {q["id"]: q for q in QUESTIONS}[body["item"]["external_id"]]
    assert body["item"]["payload"] == {k: source[k] for k in ("question", "choices", "answer_index")}
    progress = a1.get("/api/projects/fa-author/progress/").json()
    assert progress["done"] == 0

    response = a1.post(
        f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert response.status_code == 201, response.content
    replay = a1.post(
        f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert replay.status_code == 201 and replay.json() == response.json()
    annotation = Annotation.objects.get(annotator__username="a1")
    assert annotation.value == AUTHORED  # stored exactly: spaces, newline, ZWNJ, NBSP

    items = generated()
    qid = source["id"]
    assert [(i.external_id, i.reference_label) for i in items] == [
        (f"{qid}-{annotation.pk}-e", "entailment"),
        (f"{qid}-{annotation.pk}-c", "contradiction"),
        (f"{qid}-{annotation.pk}-n", "neutral"),
    ]
    for item, label in zip(items, ("entailment", "contradiction", "neutral")):
        assert item.author.username == "a1"
        assert item.payload == {"premise": AUTHORED["premise"], "hypothesis": AUTHORED[label]}
        assert item.group == f"fa-author:{qid}"
        assert item.split == source["split"]
        assert item.status == Item.Status.OPEN and item.round == 1
    assert [i.position for i in items] == [42, 43, 44]
    question = Item.objects.get(project__slug="fa-author", external_id=qid)
    assert question.status == Item.Status.COMPLETE  # authors_per_question = 1

    # The relabel project sees them through the supervisor's item list, with author and label.
    listed = root.get("/api/projects/fa-relabel/items/?page_size=100").json()["results"]
    by_id = {row["external_id"]: row for row in listed}
    assert by_id[f"{qid}-{annotation.pk}-c"]["author"] == "a1"
    assert by_id[f"{qid}-{annotation.pk}-c"]["payload"]["hypothesis"] == AUTHORED["contradiction"]

    # The second question, then nothing left.
    second = take_question(a1)
    assert second["item"]["external_id"] != qid
    assert (
        a1.post(f"/api/assignments/{second['assignment']}/submit/", {"value": AUTHORED}, format="json").status_code
        == 201
    )
    assert a1.get("/api/projects/fa-author/next/").status_code == 204
    assert a1.get("/api/projects/fa-author/progress/").json() == {"done": 2, "remaining": 0}
    assert len(generated()) == 6
    assert len({i.external_id for i in generated()}) == 6


@pytest.mark.parametrize(
    ("value", "fields"),
    [
        ({**AUTHORED, "premise": ""}, {"value.premise"}),
        ({**AUTHORED, "neutral": " \n\t"}, {"value.neutral"}),
        ({k: v for k, v in AUTHORED.items() if k != "contradiction"}, {"value.contradiction"}),
        ({**AUTHORED, "entailment": 5}, {"value.entailment"}),
        ({**AUTHORED, "premise": "a\x00b"}, {"value.premise"}),
        ({**AUTHORED, "neutral": "x\ud800y"}, {"value.neutral"}),
        ({**AUTHORED, "label": "entailment"}, {"value.label"}),
        ({**AUTHORED, "premise": None, "entailment": ""}, {"value.premise", "value.entailment"}),
        ("just text", {"value"}),
        ([AUTHORED], {"value"}),
    ],
)
def test_bad_values_are_400_naming_the_field_and_store_nothing(setup, value, fields):
    from annotation.models import Annotation, Assignment

    a1 = setup["client"]("a1")
    body = take_question(a1)
    # Sent as ASCII-escaped JSON, so that a lone surrogate reaches the server as "\\ud800".
    raw = json.dumps({"value": value})
    response = a1.post(f"/api/assignments/{body['assignment']}/submit/", raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert {e["field"] for e in response.json()["errors"]} == fields
    assert generated() == []
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(pk=body["assignment"]).status == "claimed"
    # The same claim still takes a good value.
    assert (
        a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json").status_code == 201
    )
    assert len(generated()) == 3


def test_clean_value_never_echoes_an_unencodable_key():
    """Keys that cannot be stored or sent back are reported without the key itself (over
    HTTP the JSON parser refuses them first; this is the kind's own guard)."""
    from annotation.errors import InvalidInput
    from annotation.kinds.registry import get_kind

    kind = get_kind("nli_authoring")
    for key in ("x\udc00", "a\x00"):
        with pytest.raises(InvalidInput) as caught:
            kind.clean_value({**AUTHORED, key: "y"}, None)
        assert [(e.field, key in e.message) for e in caught.value.errors] == [("value", False)]
    assert kind.clean_value(dict(AUTHORED), None) == AUTHORED


def test_authors_never_relabel_their_own_pairs(setup):
    a1, a2, r1 = (setup["client"](name) for name in ("a1", "a2", "r1"))
    body = take_question(a1)
    assert (
        a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json").status_code == 201
    )
    mine = {i.pk for i in generated()}
    # a1 is an annotator of the relabel project too, but gets none of their own pairs.
    assert a1.get("/api/projects/fa-relabel/next/").status_code == 204
    assert a1.get("/api/projects/fa-relabel/progress/").json() == {"done": 0, "remaining": 0}
    for client in (a2, r1):
        seen = set()
        while True:
            response = client.get("/api/projects/fa-relabel/next/")
            if response.status_code == 204:
                break
            item = response.json()["item"]
            # Blind: premise and hypothesis only, no intended label or author.
            assert set(item["payload"]) == {"premise", "hypothesis"}
            seen.add(item["id"])
            assert (
                client.post(
                    f"/api/assignments/{response.json()['assignment']}/submit/",
                    {"value": {"label": "neutral"}},
                    format="json",
                ).status_code
                == 201
            )
        assert seen == mine


def test_two_authors_per_question(setup):
    root = setup["root"]
    made = root.post(
        "/api/projects/",
        {
            "slug": "fa-author2",
            "name": "Two authors",
            "kind": "nli_authoring",
            "language": "fa",
            "settings": {"relabel_project": "fa-relabel", "authors_per_question": 2},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    for name in ("a1", "a2", "r1"):
        root.post(
            "/api/projects/fa-author2/members/",
            {"username": name, "role": "annotator", "status": "active"},
            format="json",
        )
    root.post("/api/projects/fa-author2/import/", {"file": upload("q.jsonl", jsonl(QUESTIONS[:1])), "format": "jsonl"})
    for name in ("a1", "a2"):
        client = setup["client"](name)
        body = client.get("/api/projects/fa-author2/next/").json()
        assert (
            client.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json"
            ).status_code
            == 201
        )
    assert setup["client"]("r1").get("/api/projects/fa-author2/next/").status_code == 204
    items = generated()
    assert len(items) == 6
    assert {i.author.username for i in items} == {"a1", "a2"}
    assert {i.group for i in items} == {"fa-author2:q1"}


def test_settings_are_validated_and_a_missing_link_is_a_409(setup, make_user, client_for):
    from annotation.models import Annotation, Project

    root = setup["root"]
    cases = [
        ({"relabel_project": "no-such"}, "settings.relabel_project"),
        ({"relabel_project": "fa-author"}, "settings.relabel_project"),  # not nli_relabel
        ({"authors_per_question": "2"}, "settings.authors_per_question"),
        ({"authors_per_question": 0}, "settings.authors_per_question"),
        ({"consensus_k": 4}, "settings.consensus_k"),
    ]
    for settings, field in cases:
        response = root.post(
            "/api/projects/",
            {"slug": "bad", "name": "Bad", "kind": "nli_authoring", "language": "fa", "settings": settings},
            format="json",
        )
        assert response.status_code == 400, (settings, response.content)
        assert response.json()["errors"][0]["field"] == field
    assert not Project.objects.filter(slug="bad").exists()

    # Created without a link (allowed: the relabel project may come later); submitting is a 409.
    made = root.post(
        "/api/projects/",
        {"slug": "fa-unlinked", "name": "Unlinked", "kind": "nli_authoring", "language": "fa"},
        format="json",
    )
    assert made.status_code == 201
    root.post(
        "/api/projects/fa-unlinked/members/", {"username": "a1", "role": "annotator", "status": "active"}, format="json"
    )
    root.post("/api/projects/fa-unlinked/import/", {"file": upload("q.jsonl", jsonl(QUESTIONS[:1])), "format": "jsonl"})
    a1 = setup["client"]("a1")
    body = a1.get("/api/projects/fa-unlinked/next/").json()
    response = a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json")
    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "relabel_project"
    # The annotator is told the project takes no pairs now, never the name of a project
    # they may not see; the supervisors read the reason on their page.
    assert "not accepting new pairs" in response.json()["errors"][0]["message"]
    assert not Annotation.objects.exists() and generated() == []

    # A supervisor (not an admin) cannot pour items into a relabel project they do not run:
    # the link is refused when the project is created (tests/security/test_cross_project.py).
    sup = make_user("sup2")
    Project.objects.get(slug="fa-author").memberships.create(user=sup, role="supervisor", status="active")
    made = client_for(sup).post(
        "/api/projects/",
        {
            "slug": "fa-foreign",
            "name": "Foreign",
            "kind": "nli_authoring",
            "language": "fa",
            "settings": {"relabel_project": "fa-relabel"},
        },
        format="json",
    )
    assert made.status_code == 400, made.content
    assert made.json()["errors"][0]["field"] == "settings.relabel_project"
    assert not Project.objects.filter(slug="fa-foreign").exists()
    assert generated() == []


def test_annotate_page_renders_for_authors_only(setup, client, make_user):
    from annotation.models import Membership

    client.force_login(setup["users"]["a1"])
    response = client.get("/p/fa-author/annotate/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'dir="rtl"' in html and 'lang="fa"' in html
    assert "nli_authoring/annotate.js" in html
    assert 'href="/p/fa-relabel/revisions/"' in html
    assert " style=" not in html and "<script>" not in html.replace(
        '<script id="annotate-config" type="application/json">', ""
    )
    outsider = make_user("outsider")
    client.force_login(outsider)
    assert client.get("/p/fa-author/annotate/").status_code == 404
    assert not Membership.objects.filter(user=outsider).exists()


# --- web sources and length warnings (FarsTail §3.1 steps 2-4) ----------------------------

PREMISE_SOURCE = "https://fa.wikipedia.org/wiki/%D8%B3%D8%A7%D8%B2%D9%85%D8%A7%D9%86_%D9%85%D9%84%D9%84"
NEUTRAL_SOURCE = "http://example.org/news/un?id=7"


def test_web_sources_are_stored_and_carried_to_the_relabel_items_and_exports(setup):
    from annotation.models import Annotation

    a1, root = setup["client"]("a1"), setup["root"]
    body = take_question(a1)
    value = {**AUTHORED, "premise_source": PREMISE_SOURCE, "neutral_source": NEUTRAL_SOURCE}
    response = a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json")
    assert response.status_code == 201, response.content
    assert Annotation.objects.get().value == value
    extras = {item.reference_label: item.payload.get("extra") for item in generated()}
    assert extras == {
        "entailment": {"premise_source": PREMISE_SOURCE},
        "contradiction": {"premise_source": PREMISE_SOURCE},
        "neutral": {"premise_source": PREMISE_SOURCE, "neutral_source": NEUTRAL_SOURCE},
    }
    exported = root.get("/api/projects/fa-relabel/export/?format=jsonl&status=all")
    assert exported.status_code == 200
    body = b"".join(exported.streaming_content) if getattr(exported, "streaming", False) else exported.content
    records = {json.loads(line)["hypothesis"]: json.loads(line) for line in body.decode().splitlines()}
    assert records[AUTHORED["neutral"]]["extra"] == {"premise_source": PREMISE_SOURCE, "neutral_source": NEUTRAL_SOURCE}
    assert records[AUTHORED["entailment"]]["extra"] == {"premise_source": PREMISE_SOURCE}

    # Sources are optional: without them the value and the items are as before.
    second = take_question(a1)
    assert (
        a1.post(
            f"/api/assignments/{second['assignment']}/submit/",
            {"value": {**AUTHORED, "neutral_source": ""}},
            format="json",
        ).status_code
        == 201
    )
    assert Annotation.objects.order_by("-pk").first().value == AUTHORED
    assert all("extra" not in item.payload for item in generated()[3:])


@pytest.mark.parametrize(
    ("value", "fields"),
    [
        ({**AUTHORED, "premise_source": "not a url"}, {"value.premise_source"}),
        ({**AUTHORED, "neutral_source": "javascript:alert(1)"}, {"value.neutral_source"}),
        ({**AUTHORED, "neutral_source": "ftp://example.org/a"}, {"value.neutral_source"}),
        ({**AUTHORED, "premise_source": 7}, {"value.premise_source"}),
        (
            {**AUTHORED, "premise_source": "https://", "neutral_source": ["https://example.org"]},
            {"value.premise_source", "value.neutral_source"},
        ),
    ],
)
def test_bad_sources_are_400_naming_the_field_and_store_nothing(setup, value, fields):
    from annotation.models import Annotation

    a1 = setup["client"]("a1")
    body = take_question(a1)
    response = a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json")
    assert response.status_code == 400, response.content
    assert {e["field"] for e in response.json()["errors"]} == fields
    assert generated() == [] and not Annotation.objects.exists()


def test_length_warnings_for_every_hypothesis(setup):
    """Step 3: the contradiction about as long as the entailment; step 4: the neutral about
    as long as both. Warnings in the submit response; the submit still goes through."""
    a1 = setup["client"]("a1")
    body = take_question(a1)
    short_neutral = {**AUTHORED, "neutral": "سازمان ملل."}
    response = a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": short_neutral}, format="json")
    assert response.status_code == 201, response.content
    assert [(w["field"], w["code"]) for w in response.json()["warnings"]] == [("value.neutral", "length")]
    assert len(generated()) == 3

    second = take_question(a1)
    similar = a1.post(f"/api/assignments/{second['assignment']}/submit/", {"value": AUTHORED}, format="json")
    assert similar.status_code == 201
    assert similar.json()["warnings"] == []


def test_an_authored_value_cannot_be_changed_once_its_pairs_exist(setup):
    """PATCH /api/annotations/{id}/ is refused (409) for authoring: the submit made three
    relabel items from the value, which an edit would leave describing another text."""
    from annotation.models import Annotation

    a1 = setup["client"]("a1")
    body = take_question(a1)
    assert (
        a1.post(f"/api/assignments/{body['assignment']}/submit/", {"value": AUTHORED}, format="json").status_code == 201
    )
    annotation = Annotation.objects.get(item__project__slug="fa-author")
    mine = a1.get("/api/projects/fa-author/mine/").json()["results"]
    assert [entry["editable"] for entry in mine] == [False]
    changed = a1.patch(
        f"/api/annotations/{annotation.pk}/", {"value": {**AUTHORED, "neutral": "جمله‌ای دیگر"}}, format="json"
    )
    assert changed.status_code == 409 and "cannot be changed" in changed.json()["errors"][0]["message"]
    annotation.refresh_from_db()
    assert annotation.value["neutral"] == AUTHORED["neutral"]
