"""HeQ §3.4's corrected wrong answers through HTTP: a validator or a supervisor replaces an
existing answer span (of an authored question, or of a question of the published sample),
under the authoring span rules; the old span is kept as a revision (who, when, old, new),
exports carry the new one, the audit log records it; bad input is a 400 naming the field
and stores nothing."""

import json

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, V11, export, import_file, qa, submit  # noqa: F401 (qa is a fixture)

pytestmark = pytest.mark.django_db

FOUNDERS = "אמנון שעשוע וזיו אבירם"


def correct(client, item_id, **body):
    return client.post(f"/api/items/{item_id}/answer-corrections/", body, format="json")


@pytest.fixture
def authored(qa):
    from annotation.models import Annotation

    annotation = Annotation.objects.get(pk=submit(qa, "a1"))
    return {**qa, "annotation": annotation, "item": annotation.item_id}


def test_a_validator_corrects_an_authored_span_and_the_export_carries_it(authored):
    from annotation.models import Annotation, AuditEntry, ItemRevision

    v1 = authored["client"]("v1")
    start = PARAGRAPH.index(FOUNDERS)
    # Sent with the sentence's full stop, stored without it, as the answer API stores spans.
    response = correct(
        v1, authored["item"], annotation=authored["annotation"].pk, question=2,
        answer={"start": start, "text": FOUNDERS + "."}, reason="both founders",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    assert response.json()["details"]["new"] == {"start": start, "text": FOUNDERS}
    assert response.json()["details"]["old"] == {"start": start, "text": "אמנון שעשוע"}
    value = Annotation.objects.get(pk=authored["annotation"].pk).value
    assert value["questions"][2]["answer"] == {"start": start, "text": FOUNDERS}
    assert value["questions"][0] == authored["annotation"].value["questions"][0]  # the others untouched
    # The history: who, when, old and new; the supervisor sees the name.
    history = authored["client"]("sup").get(f"/api/items/{authored['item']}/revisions/").json()
    assert [(r["action"], r["by"], r["reason"]) for r in history] == [("answer_corrected", "v1", "both founders")]
    assert history[0]["details"]["old"]["text"] == "אמנון שעשוע" and history[0]["created_at"]
    assert AuditEntry.objects.filter(action="answer_correct").count() == 1
    # The export writes the corrected span and no longer the old one as the author's answer.
    squad = json.loads(export(authored["client"]("sup"), "heq", include_rejected="true"))
    answers = [q["answers"] for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
    assert [{"text": FOUNDERS, "answer_start": start}] in answers
    assert [{"text": "אמנון שעשוע", "answer_start": start}] not in answers
    # The status and the gold are the ledger's: a correction leaves them.
    assert ItemRevision.objects.get().item.status == authored["annotation"].item.status


def test_who_may_correct(authored):
    item, annotation = authored["item"], authored["annotation"].pk
    body = {"annotation": annotation, "question": 1, "answer": {"start": PARAGRAPH.index("1999"), "text": "1999"}}
    assert correct(authored["client"]("a1"), item, **body).status_code == 403  # the author
    assert correct(authored["client"]("t1"), item, **body).status_code == 403  # a trial annotator
    assert correct(authored["client"]("sup"), item, **body).status_code == 201
    assert (
        correct(authored["client"]("rev"), item, **{**body, "answer": {"start": 5, "text": "1948"}}).status_code == 201
    )


def test_a_span_of_the_published_file_is_corrected_in_place(qa):
    from annotation.models import Item

    sup = qa["client"]("sup")
    assert import_file(sup, V11).status_code == 201
    paragraph = json.loads(V11.read_bytes())["data"][0]["paragraphs"][0]
    target = next(q for q in paragraph["qas"] if not q["is_impossible"] and len(q["answers"][0]["text"]) > 2)
    gold = target["answers"][0]
    item = Item.objects.get(project__slug="heq", payload__context=paragraph["context"])
    # "הטיטאנים" without its article, a prefix letter: a span the authoring rules allow.
    new = {"start": gold["answer_start"] + 1, "text": gold["text"][1:]}
    response = correct(sup, item.pk, question_key=target["id"], answer=new, reason="without the article")
    assert response.status_code == 201, response.content
    new_text = response.json()["details"]["new"]["text"]
    stored = next(q for q in Item.objects.get(pk=item.pk).payload["questions"] if q["id"] == target["id"])
    assert stored["answers"][0]["text"] == new_text and stored["answers"][0]["answer_start"] == new["start"]
    exported = json.loads(export(sup, "heq"))
    qas = {q["id"]: q for a in exported["data"] for p in a["paragraphs"] for q in p["qas"]}
    assert qas[target["id"]]["answers"][0] == {"text": new_text, "answer_start": new["start"]}


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"question": 2, "answer": {"start": 0, "text": "אמנון"}}, "answer.text", 400),
        ({"question": 2, "answer": {"start": 10_000, "text": "אמנון"}}, "answer.start", 400),
        ({"question": 2, "answer": {"start": "0", "text": "אמנון"}}, "answer.start", 400),
        ({"question": 2, "answer": None}, "answer", 400),
        ({"question": 9, "answer": {"start": 0, "text": "בשנת"}}, "question", 400),
        ({"question": 2, "answer": {"start": 0, "text": "בשנת"}, "colour": 1}, "colour", 400),
        ({"question": 2, "answer": {"start": 0, "text": "בשנת"}, "reason": "a\x00b"}, "reason", 400),
        ({"question": 2, "answer": {"start": 0, "text": "בשנת"}, "question_key": "x"}, "annotation", 400),
        ({"question": 3, "answer": {"start": 0, "text": "בשנת"}}, "question", 409),
    ],
)
def test_bad_corrections_name_the_field_and_store_nothing(authored, body, field, code):
    from annotation.models import Annotation, AuditEntry, ItemRevision

    response = correct(authored["client"]("sup"), authored["item"], annotation=authored["annotation"].pk, **body)
    assert response.status_code == code, response.content
    assert response.json()["errors"][0]["field"] == field
    assert ItemRevision.objects.count() == 0 and not AuditEntry.objects.filter(action="answer_correct").exists()
    assert Annotation.objects.get(pk=authored["annotation"].pk).value == authored["annotation"].value
