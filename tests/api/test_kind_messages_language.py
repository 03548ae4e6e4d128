"""The rest of the server's messages in the request's language: where a text cannot be stored
(a NUL character, a bidi control: the text checks say what and where, the message is built
here), the question project's validation, final audit and answer corrections, the phrase
kind's answer check, the kind registry, and messages that name a kind, which name it as
people do (its title), never by its code. `field` stays the machine-readable path; the
`message` is in Hebrew or Persian with no English word left. English stays the default."""

import re

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, claim, good_value, qa, submit  # noqa: F401 (qa is a fixture)
from tests.kinds.qa.test_graphemes import pointed  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

HEBREW = re.compile(r"[\u0590-\u05ff]")
PERSIAN = re.compile(r"[\u0600-\u06ff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
KIND_CODE = re.compile(r"[a-z]+_[a-z_]+")
LANGUAGES = ("he", "fa")


def _in(language: str, message: str) -> bool:
    """The message is written in `language`: its letters, and no English word or code left
    (NLI, in the kinds' names, is the task's name in every language)."""
    script = HEBREW if language == "he" else PERSIAN
    message = message.replace("NLI", "")
    return bool(script.search(message)) and not LATIN_WORD.search(message) and not KIND_CODE.search(message)


def _errors(response, status: int = 400) -> list[dict]:
    assert response.status_code == status, response.content
    return response.json()["errors"]


def _speaking(client, language: str):
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    return client


# --- where a text cannot be stored ------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_nul_character_in_a_json_body(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    body = {"slug": "new-one", "name": "שם\x00אחר", "kind": "nli_relabel", "language": "he"}
    errors = _errors(sup.post("/api/projects/", body, format="json"))
    assert [e["field"] for e in errors] == ["name"]
    assert _in(language, errors[0]["message"]) and "2" in errors[0]["message"], errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_nul_character_in_a_json_key(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    body = {"slug": "new-one", "name": "x", "kind": "nli_relabel", "language": "he", "settings": {"ab\x00": 1}}
    errors = _errors(sup.post("/api/projects/", body, format="json"))
    assert [e["field"] for e in errors] == ["settings.<key>"]
    assert _in(language, errors[0]["message"]) and "2" in errors[0]["message"], errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_bidi_control_in_a_username(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    body = {"username": "dana\u202ecohen", "password": "a-Long-pass-phrase-42"}
    errors = _errors(sup.post("/api/users/", body, format="json"))
    assert [e["field"] for e in errors] == ["username"]
    message = errors[0]["message"]
    assert _in(language, message) and "4" in message and "U+202E" in message, errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_nul_character_in_an_authored_question(qa, language):
    from tests.kinds.qa.test_api import claim

    client = _speaking(qa["client"]("a1"), language)
    value = good_value()
    value["questions"][0]["question"] = "באיזו\x00 עיר?"
    claimed = claim(client)
    errors = _errors(client.post(f"/api/assignments/{claimed['assignment']}/submit/", {"value": value}, format="json"))
    assert [e["field"] for e in errors] == ["value.questions[0].question"]
    assert _in(language, errors[0]["message"]) and "5" in errors[0]["message"], errors


def test_english_names_the_character_and_its_position(nli_project, django_user_model, client_for):
    sup = client_for(django_user_model.objects.get(username="sup"))
    body = {"slug": "new-one", "name": "שם\x00אחר", "kind": "nli_relabel", "language": "he"}
    assert _errors(sup.post("/api/projects/", body, format="json")) == [
        {"field": "name", "message": "contains a NUL character at position 2"}
    ]


# --- the question project: final audit, validation, answer corrections ------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("body", "field"),
    [({"per_source": 0, "seed": 1}, "per_source"), ({"per_source": 10, "seed": -1}, "seed")],
)
def test_a_bad_audit_draw(qa, language, body, field):
    sup = _speaking(qa["client"]("sup"), language)
    errors = _errors(sup.post("/api/projects/heq/question-audit/", body, format="json"))
    assert [e["field"] for e in errors] == [field]
    assert _in(language, errors[0]["message"]), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_bad_audit_mark_and_an_unknown_question(qa, language):
    submit(qa, "a1")
    sup = _speaking(qa["client"]("sup"), language)
    assert sup.post("/api/projects/heq/question-audit/", {"per_source": 5, "seed": 1}, format="json").status_code == 201
    entry = sup.get("/api/projects/heq/question-audit/").json()["results"][0]["id"]
    for body, field in (
        ({"question_correct": "yes", "span_correct": True}, "question_correct"),
        ({"question_correct": True, "span_correct": "no"}, "span_correct"),
        ({"question_correct": True, "verdict": 1}, "verdict"),
    ):
        errors = _errors(sup.post(f"/api/projects/heq/question-audit/{entry}/", body, format="json"))
        assert [e["field"] for e in errors] == [field]
        # An unknown field is answered with the body's field names, which an API client types.
        message = re.sub(r"\b(question_correct|span_correct)\b", "", errors[0]["message"])
        assert _in(language, message), errors
    missing = _errors(
        sup.post(f"/api/projects/heq/question-audit/{entry + 999}/", {"question_correct": True}, format="json"), 404
    )
    assert _in(language, missing[0]["message"]), missing


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_audit_of_a_project_without_questions_names_its_kind(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    slug = nli_project.slug
    errors = _errors(sup.post(f"/api/projects/{slug}/question-audit/", {"per_source": 5, "seed": 1}, format="json"))
    assert [e["field"] for e in errors] == ["slug"]
    assert _in(language, errors[0]["message"]), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_question_export_and_a_pool_draw_with_bad_parameters(qa, language):
    sup = _speaking(qa["client"]("sup"), language)
    errors = _errors(sup.get("/api/projects/heq/questions/export/?format=squad&include_rejected=maybe"))
    assert [e["field"] for e in errors] == ["include_rejected"]
    assert _in(language, errors[0]["message"]), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_bad_answer_correction(qa, language):
    annotation = submit(qa, "a1")
    item = _item_of(annotation)
    sup = _speaking(qa["client"]("sup"), language)
    url = f"/api/items/{item}/answer-corrections/"
    for body, field in (
        ({"annotation": annotation, "question": 0, "answer": {"start": 0, "text": "x"}, "why": 1}, "why"),
        ({"annotation": annotation, "question": 0, "answer": {"start": 0, "text": PARAGRAPH[:3] + "x"}}, None),
        ({"annotation": annotation, "question": 0, "answer": {"start": 0, "text": "x\x00"}}, None),
    ):
        errors = _errors(sup.post(url, body, format="json"))
        if field is not None:
            assert [e["field"] for e in errors] == [field]
        # An unknown field is answered with the body's field names, which an API client types.
        fields = r"\b(why|annotation|question|question_key|answer_index|answer|reason)\b"
        assert all(_in(language, re.sub(fields, "", e["message"])) for e in errors), errors


def _item_of(annotation_id: int) -> int:
    from annotation.models import Annotation

    return Annotation.objects.get(pk=annotation_id).item_id


# --- the phrase kind's answer, the registry, messages naming a kind ---------------------------


def _phrase_project(root, annotator_client):
    import io
    import json

    made = root.post(
        "/api/projects/", {"slug": "phr", "name": "phr", "kind": "phrase_pair", "language": "he"}, format="json"
    )
    assert made.status_code == 201, made.content
    row = {"id": "p1", "left": "בית גדול", "right": "בית ענק", "label": "EQUIVALENT"}
    handle = io.BytesIO((json.dumps(row, ensure_ascii=False) + "\n").encode())
    handle.name = "rows.jsonl"
    assert root.post("/api/projects/phr/import/", {"file": handle, "format": "jsonl"}).status_code == 201


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_phrase_label_that_is_not_one(make_user, client_for, language):
    root = client_for(make_user("root", staff=True))
    _phrase_project(root, None)
    user = make_user("ann")
    added = root.post(
        "/api/projects/phr/members/", {"username": "ann", "role": "annotator", "status": "active"}, format="json"
    )
    assert added.status_code == 201, added.content
    client = _speaking(client_for(user), language)
    assignment = client.get("/api/projects/phr/next/").json()["assignment"]
    for value, field in (
        ({"label": "SAME"}, "value.label"),
        ({"label": "EQUIVALENT", "note": 1}, "value"),
        ([], "value"),
    ):
        errors = _errors(client.post(f"/api/assignments/{assignment}/submit/", {"value": value}, format="json"))
        assert [e["field"] for e in errors] == [field]
        # The labels are PhrasIS's codes, named as the paper names them.
        message = re.sub(r"\b(EQUIVALENT|[A-Z]+(?:_[A-Z]+)*)\b", "", errors[0]["message"])
        assert _in(language, message), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_kind_that_is_not_offered(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    body = {"slug": "new-one", "name": "x", "kind": "no_such_kind", "language": "he"}
    errors = _errors(sup.post("/api/projects/", body, format="json"))
    assert [e["field"] for e in errors] == ["kind"]
    assert _in(language, errors[0]["message"]), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_export_format_the_kind_lacks_names_the_kind(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    errors = _errors(sup.get(f"/api/projects/{nli_project.slug}/export/?format=squad"))
    assert [e["field"] for e in errors] == ["format"]
    # The formats themselves are file formats (jsonl, csv): codes a person types, not words.
    message = re.sub(r"\b(jsonl|csv|tsv|squad|json|hf|farstail)\b", "", errors[0]["message"])
    assert _in(language, message), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_phrasis_export_of_another_kind_names_the_kind(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    errors = _errors(sup.get(f"/api/projects/{nli_project.slug}/export/phrasis/"))
    assert [e["field"] for e in errors] == ["format"]
    assert _in(language, re.sub(r"\bPhrasIS\b", "", errors[0]["message"])), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_refusals_before_any_view_and_an_unknown_address(nli_project, django_user_model, client_for, language):
    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    errors = _errors(sup.get(f"/api/projects/{nli_project.slug}/items/?status=a%00b"))
    assert [e["field"] for e in errors] == ["status"]
    assert _in(language, errors[0]["message"]) and "1" in errors[0]["message"], errors
    missing = _errors(sup.get("/api/no-such-address/"), 404)
    assert _in(language, missing[0]["message"]), missing
    gone = _errors(sup.get("/api/items/999999/decisions/"), 404)
    assert _in(language, gone[0]["message"]), gone


# --- an answer span that splits a character, a webhook address that may not be called --------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", ["starts on a point", "ends between the points", "whitespace only"])
def test_a_span_that_splits_a_character_or_holds_nothing(pointed, language, case):
    from tests.kinds.qa.test_graphemes import BAD_SPANS, import_plain, value_with

    start, text, field = BAD_SPANS[case]
    import_plain(pointed["client"]("sup"))
    author = _speaking(pointed["client"]("a1"), language)
    claimed = claim(author, "pointed")
    errors = _errors(
        author.post(
            f"/api/assignments/{claimed['assignment']}/submit/", {"value": value_with(start, text)}, format="json"
        )
    )
    assert f"value.questions.0.{field}" in [e["field"] for e in errors]
    message = next(e["message"] for e in errors if e["field"] == f"value.questions.0.{field}")
    assert _in(language, message), errors
    if case != "whitespace only":
        assert str(start if field == "answer.start" else start + len(text)) in message, errors


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("url", ["https://10.1.2.3/hook", "https://169.254.1.1/hook"])
def test_a_webhook_address_that_may_not_be_called(nli_project, django_user_model, client_for, language, url):
    from annotation.models import Webhook

    sup = _speaking(client_for(django_user_model.objects.get(username="sup")), language)
    body = {"url": url, "events": ["item.decided"]}
    errors = _errors(sup.post(f"/api/projects/{nli_project.slug}/webhooks/", body, format="json"))
    assert [e["field"] for e in errors] == ["url"]
    # The address and the setting's name are what the operator types; the rest is in the language.
    message = errors[0]["message"].replace("MASHOV_WEBHOOK_ALLOWED_NETWORKS", "")
    assert url.split("/")[2] in message and _in(language, message), errors
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(("language", "separator"), [("he", "; "), ("fa", "؛ ")])
def test_a_weak_password_is_refused_with_the_languages_clauses(
    nli_project, django_user_model, client_for, language, separator
):
    sup = _speaking(client_for(django_user_model.objects.get(username="root")), language)
    errors = _errors(sup.post("/api/users/", {"username": "weak.one", "password": "1234"}, format="json"))
    assert [e["field"] for e in errors] == ["password"]
    message = errors[0]["message"]
    assert _in(language, message) and separator in message, errors
    if language == "fa":
        assert "; " not in message, errors
    assert not django_user_model.objects.filter(username="weak.one").exists()
