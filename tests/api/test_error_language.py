"""The API's errors in the request's language: `field` stays the machine-readable code of
docs/api.md "General rules", `message` is in the language the request asks for
(Accept-Language, or the interface's language cookie), so that a page can show it beside
its field as it is. English stays the default."""

import re

import pytest

from tests.api.test_auth_and_projects import error_list, new_project

STRONG = "a-Long-pass-phrase-42"
HEBREW = re.compile(r"[\u0590-\u05ff]")
PERSIAN = re.compile(r"[\u0600-\u06ff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


@pytest.fixture
def sup(nli_project, django_user_model, client_for):
    return client_for(django_user_model.objects.get(username="sup"))


def _in(language: str, message: str) -> bool:
    """The message is written in `language`: its letters, and no English word left."""
    script = HEBREW if language == "he" else PERSIAN
    return bool(script.search(message)) and not LATIN_WORD.search(message)


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"slug": "Not A Slug"}, "slug"),
        ({"slug": ...}, "slug"),
        ({"name": ...}, "name"),
        ({"language": "xx"}, "language"),
        ({"settings": {"claim_ttl": 1}}, "settings.claim_ttl"),
        ({"settings": {"consensus_n": 99}}, "settings.consensus_n"),
        ({"settings": {"consensus_k": 1}}, "settings.consensus_k"),
        ({"settings": {"consensus_k": "four"}}, "settings.consensus_k"),
        ({"settings": {"quality_flag_below": 3.0}}, "settings.quality_flag_below"),
    ],
)
def test_project_errors_follow_the_request_language(sup, language, overrides, field):
    sup.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    errors = error_list(new_project(sup, **overrides))
    assert [e["field"] for e in errors] == [field]
    assert _in(language, errors[0]["message"]), errors


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["he", "fa"])
def test_password_errors_follow_the_request_language(sup, language):
    sup.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    errors = error_list(sup.post("/api/users/", {"username": "new.user", "password": "short"}, format="json"))
    assert {e["field"] for e in errors} == {"password"}
    assert all(_in(language, e["message"]) for e in errors), errors


@pytest.mark.django_db
def test_english_stays_the_default(sup):
    errors = error_list(new_project(sup, slug="Not A Slug"))
    assert errors[0]["message"] == "must be 2-63 lower-case letters, digits or hyphens"
