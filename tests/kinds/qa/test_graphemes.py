"""Answer spans never split a character (HeQ §2; docs/text.md "Offsets"): through every path that stores a
span — an author's submitted value, a validator's extra gold span, an imported file's answers —
a span whose start or end falls inside an extended grapheme cluster (a niqqud point without its
letter, half a ZWJ emoji sequence, one regional indicator of a flag) or that holds only
whitespace is a 400 naming the field, and nothing is stored. A span over whole pointed letters
is accepted."""

import json

import pytest

from tests.kinds.qa.test_api import claim, jsonl, upload

pytestmark = pytest.mark.django_db

SHALOM = "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd"  # shin + shin dot + qamats, lamed, vav + holam, final mem
CODER = "\U0001f469\u200d\U0001f4bb"  # woman + ZWJ + laptop: one character, three code points
FLAG = "\U0001f1ee\U0001f1f1"  # two regional indicators: one flag
RLM = "\u200f"
PARAGRAPH = f"{SHALOM} עליכם, אמר המתכנת {CODER} ליד הדגל {FLAG} {RLM}בבוקר."
AT_SHALOM, AT_CODER, AT_FLAG = PARAGRAPH.index(SHALOM), PARAGRAPH.index(CODER), PARAGRAPH.index(FLAG)

# (start, text, the field named by the refusal on the author's value)
BAD_SPANS = {
    "starts on a point": (AT_SHALOM + 1, SHALOM[1:], "answer.start"),
    "ends before the points": (AT_SHALOM, SHALOM[:1], "answer.text"),
    "ends between the points": (AT_SHALOM, SHALOM[:2], "answer.text"),
    "half a zwj sequence": (AT_CODER, CODER[:1], "answer.text"),
    "starts after the zwj": (AT_CODER + 2, CODER[2:], "answer.start"),
    "half a flag": (AT_FLAG, FLAG[:1], "answer.text"),
    "second half of a flag": (AT_FLAG + 1, FLAG[1:], "answer.start"),
    "whitespace only": (AT_SHALOM + len(SHALOM), " ", "answer.text"),
    "whitespace and a bidi mark": (PARAGRAPH.index(RLM) - 1, f" {RLM}", "answer.text"),
}


@pytest.fixture
def pointed(make_user, client_for):
    """A qa_authoring project holding our pointed paragraph; annotator a1, validator v1."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(
        actor=admin,
        slug="pointed",
        name="Pointed",
        kind="qa_authoring",
        language="he",
        settings={"validate_splits": ["train", "dev", "test"]},
    )
    users = {"root": admin}
    for name, role in (("sup", "supervisor"), ("a1", "annotator"), ("v1", "annotator")):
        users[name] = make_user(name)
        Membership.objects.create(project=project, user=users[name], role=role, status="active")
    return {"users": users, "client": lambda name: client_for(users[name])}


def import_paragraph(client, answers=()):
    """Our paragraph as a squad file with one question answered by `answers`."""
    data = {
        "version": "v1.1",
        "data": [
            {
                "title": "ברכה",
                "paragraphs": [
                    {
                        "context": PARAGRAPH,
                        "qas": [
                            {
                                "question": "מה אמר המתכנת?",
                                "id": "q1",
                                "answers": list(answers),
                                "is_impossible": not answers,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    return client.post(
        "/api/projects/pointed/import/",
        {"file": upload("p.json", json.dumps(data, ensure_ascii=False)), "format": "squad"},
        format="multipart",
    )


def value_with(start, text):
    unanswerable = {"question": "כמה?", "answerable": False, "answer": None}
    return {
        "questions": [
            {"question": "מה נאמר?", "answerable": True, "answer": {"start": start, "text": text}},
            unanswerable,
            unanswerable,
        ]
    }


def import_plain(client):
    response = client.post(
        "/api/projects/pointed/import/",
        {"file": upload("p.jsonl", jsonl([{"id": "p1", "context": PARAGRAPH, "title": "ברכה"}])), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("case", BAD_SPANS)
def test_author_span_splitting_a_character_is_400_and_stores_nothing(pointed, case):
    from annotation.models import Annotation, Assignment

    start, text, field = BAD_SPANS[case]
    assert PARAGRAPH[start : start + len(text)] == text  # a true slice: only the edges are wrong
    import_plain(pointed["client"]("sup"))
    client = pointed["client"]("a1")
    claimed = claim(client, "pointed")
    response = client.post(
        f"/api/assignments/{claimed['assignment']}/submit/", {"value": value_with(start, text)}, format="json"
    )
    assert response.status_code == 400, response.content
    assert f"value.questions.0.{field}" in [e["field"] for e in response.json()["errors"]]
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=claimed["assignment"]).status == "claimed"


def test_span_over_whole_pointed_letters_and_emoji_is_accepted(pointed):
    from annotation.models import Annotation

    import_plain(pointed["client"]("sup"))
    client = pointed["client"]("a1")
    claimed = claim(client, "pointed")
    value = value_with(AT_SHALOM, SHALOM)
    value["questions"][1] = {"question": "מי?", "answerable": True, "answer": {"start": AT_CODER, "text": CODER}}
    value["questions"][2] = {"question": "איזה דגל?", "answerable": True, "answer": {"start": AT_FLAG, "text": FLAG}}
    response = client.post(f"/api/assignments/{claimed['assignment']}/submit/", {"value": value}, format="json")
    assert response.status_code == 201, response.content
    assert Annotation.objects.get().value == value


@pytest.mark.parametrize("case", BAD_SPANS)
def test_validator_span_splitting_a_character_is_400_and_stores_nothing(pointed, case):
    from annotation.models import Item, QuestionValidation

    start, text, field = BAD_SPANS[case]
    assert import_paragraph(pointed["client"]("sup"), [{"text": SHALOM, "answer_start": AT_SHALOM}]).status_code == 201
    body = {
        "item": Item.objects.get().pk,
        "question_key": "q1",
        "answerable": True,
        "answer": {"start": start, "text": text},
    }
    response = pointed["client"]("v1").post("/api/validations/submit/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert QuestionValidation.objects.count() == 0
    body["answer"] = {"start": AT_SHALOM, "text": SHALOM}
    assert pointed["client"]("v1").post("/api/validations/submit/", body, format="json").status_code == 201


@pytest.mark.parametrize("case", BAD_SPANS)
def test_an_imported_answer_is_taken_as_the_dataset_has_it(pointed, case):
    """Published files come in as they are: the character rule binds what annotators and
    validators mark here, not the spans of a dataset someone else released (refusing one
    would refuse the whole file), which are stored and exported byte for byte."""
    from annotation.models import Item

    start, text, _field = BAD_SPANS[case]
    response = import_paragraph(pointed["client"]("sup"), [{"text": text, "answer_start": start}])
    assert response.status_code == 201, response.content
    [item] = Item.objects.all()
    assert json.dumps(item.payload, ensure_ascii=False).count(json.dumps(text, ensure_ascii=False)) >= 1
