"""The kinds' checks on submitted answers and on settings answer in the request's language:
`field` names the answer's or the setting's field (docs/api.md "General rules"), `message`
is written in Hebrew or Persian when the request asks for it, with no English word left, so
a page can show it beside that field as it is. English stays the default."""

import io
import json
import re

import pytest

pytestmark = pytest.mark.django_db

HEBREW = re.compile(r"[\u0590-\u05ff]")
PERSIAN = re.compile(r"[\u0600-\u06ff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
LANGUAGES = ("he", "fa")


def _in(language: str, message: str) -> bool:
    """The message is written in `language`: its letters, and no English word left."""
    script = HEBREW if language == "he" else PERSIAN
    return bool(script.search(message)) and not LATIN_WORD.search(message)


def _upload(rows) -> io.BytesIO:
    handle = io.BytesIO("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8"))
    handle.name = "rows.jsonl"
    return handle


def _project(root, slug: str, kind: str, language: str, rows, settings=None) -> None:
    body = {"slug": slug, "name": slug, "kind": kind, "language": language}
    if settings:
        body["settings"] = settings
    made = root.post("/api/projects/", body, format="json")
    assert made.status_code == 201, made.content
    if rows:
        imported = root.post(f"/api/projects/{slug}/import/", {"file": _upload(rows), "format": "jsonl"})
        assert imported.status_code == 201, imported.content


def _claim(client, slug: str, language: str) -> int:
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    response = client.get(f"/api/projects/{slug}/next/")
    assert response.status_code == 200, response.content
    return response.json()["assignment"]


def _errors(response) -> list[dict]:
    assert response.status_code == 400, response.content
    return response.json()["errors"]


@pytest.fixture
def root(make_user, client_for):
    return client_for(make_user("root", staff=True))


@pytest.fixture
def annotator(make_user, client_for, root):
    user = make_user("ann")

    def join(slug: str):
        added = root.post(
            f"/api/projects/{slug}/members/",
            {"username": "ann", "role": "annotator", "status": "active"},
            format="json",
        )
        assert added.status_code == 201, added.content
        return client_for(user)

    return join


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_summary_rating_out_of_range(root, annotator, language):
    rows = [
        {
            "id": "a1",
            "article": "הממשלה אישרה אמש את תקציב המדינה לשנת 2025 אחרי דיון ארוך.",
            "summaries": [
                {"system": "s1", "text": "הממשלה אישרה את התקציב."},
                {"system": "s2", "text": "התקציב אושר אחרי דיון."},
            ],
        }
    ]
    _project(root, "he-sum", "summary_rating", "he", rows)
    client = annotator("he-sum")
    assignment = _claim(client, "he-sum", language)
    value = {"ratings": {"0": {"coherence": 9, "completeness": 3}, "1": {"coherence": 3, "completeness": 3}}}
    errors = _errors(client.post(f"/api/assignments/{assignment}/submit/", {"value": value}, format="json"))
    assert [e["field"] for e in errors] == ["value.ratings.0.coherence"]
    assert _in(language, errors[0]["message"]), errors
    assert "1" in errors[0]["message"] and "5" in errors[0]["message"], errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_translation_rating_that_is_not_a_score(root, annotator, language):
    rows = [
        {
            "id": "x1",
            "source": {"premise": "The cat sat on the mat.", "hypothesis": "A cat sat.", "label": "e"},
            "candidates": [
                {"system": "amazon", "premise": "החתול ישב על השטיח.", "hypothesis": "חתול ישב."},
                {"system": "dicta", "premise": "החתול ישב על המחצלת.", "hypothesis": "חתול ישב שם."},
            ],
        }
    ]
    _project(root, "he-mt", "translation_rating", "he", rows)
    client = annotator("he-mt")
    assignment = _claim(client, "he-mt", language)
    good = {"accuracy": 4, "fluency": 4, "cultural_fit": 4, "label_valid": True}
    value = {"ratings": {"0": {**good, "fluency": "good"}, "1": {**good, "label_valid": None}}}
    errors = _errors(client.post(f"/api/assignments/{assignment}/submit/", {"value": value}, format="json"))
    assert {e["field"] for e in errors} == {"value.ratings.0.fluency", "value.ratings.1.label_valid"}
    assert all(_in(language, e["message"]) for e in errors), errors


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_authored_pair_with_an_empty_and_a_missing_hypothesis(root, annotator, language):
    _project(root, "fa-relabel", "nli_relabel", "fa", [])
    question = {"id": "q1", "question": "پایتخت ایران کدام شهر است؟", "choices": ["اصفهان", "تهران"], "answer_index": 1}
    _project(root, "fa-author", "nli_authoring", "fa", [question], settings={"relabel_project": "fa-relabel"})
    client = annotator("fa-author")
    annotator("fa-relabel")
    assignment = _claim(client, "fa-author", language)
    value = {"premise": "تهران پایتخت ایران است.", "entailment": "ایران پایتخت دارد.", "contradiction": " "}
    errors = _errors(client.post(f"/api/assignments/{assignment}/submit/", {"value": value}, format="json"))
    assert {e["field"] for e in errors} == {"value.contradiction", "value.neutral"}
    assert all(_in(language, e["message"]) for e in errors), errors


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("kind", "settings", "field"),
    [
        ("translation_rating", {"raters_per_item": 99}, "settings.raters_per_item"),
        ("summary_rating", {"error_tags": ["hallucination", "hallucination"]}, "settings.error_tags[1]"),
        ("nli_relabel", {"overlap_max": 5}, "settings.overlap_min"),
    ],
)
def test_a_settings_error_on_update(root, language, kind, settings, field):
    _project(root, "proj", kind, "he", [])
    root.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    errors = _errors(root.patch("/api/projects/proj/", {"settings": settings}, format="json"))
    assert [e["field"] for e in errors] == [field]
    message = errors[0]["message"]
    # A repeated tag is quoted as the supervisor typed it; the rest is in their language.
    assert _in(language, message.replace("'hallucination'", "")), errors


def test_english_stays_the_default(root):
    _project(root, "proj", "translation_rating", "he", [])
    errors = _errors(root.patch("/api/projects/proj/", {"settings": {"raters_per_item": 99}}, format="json"))
    assert errors == [{"field": "settings.raters_per_item", "message": "must be between 1 and 50"}]
