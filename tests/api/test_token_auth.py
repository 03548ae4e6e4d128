"""Token authentication (api/authentication.py): the hand-written lookup answers as DRF's
own class does, and no token text can make it fail with a 500."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_valid_token_authenticates(client_for, nli_project):
    from django.contrib.auth import get_user_model

    response = client_for(get_user_model().objects.get(username="ann1")).get("/api/projects/")
    assert response.status_code == 200
    assert [p["slug"] for p in response.json()["results"]] == ["fa-nli"]


def test_an_inactive_user_is_refused(client_for, make_user):
    user = make_user("gone")
    client = client_for(user)
    user.is_active = False
    user.save()
    response = client.get("/api/projects/")
    assert response.status_code == 401
    assert response.json()["errors"][0]["message"] == "User inactive or deleted."


@pytest.mark.parametrize(
    "credentials",
    [
        "Token nope",
        "Token " + "a" * 41,
        "Token " + "a" * 5000,
        "Token abc\x00def",
        "Token \u200fשלום",  # as an in-process caller could pass it
        "Token \u200fשלום".encode().decode("latin-1"),  # as a WSGI server passes UTF-8 bytes
        "Token a b",
    ],
)
def test_unknown_and_malformed_tokens_are_401(api_client, make_user, credentials):
    make_user("someone")
    api_client.credentials(HTTP_AUTHORIZATION=credentials)
    response = api_client.get("/api/projects/")
    assert response.status_code == 401
    assert response.json()["errors"]


def test_request_auth_is_the_token(client_for, make_user):
    """DRF's contract: request.user is the token's user, request.auth the token."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIRequestFactory

    from api.authentication import FastTokenAuthentication

    user = make_user("dana")
    token = Token.objects.create(user=user)
    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Token {token.key}")
    got_user, got_token = FastTokenAuthentication().authenticate(request)
    assert got_user == user and got_user.username == "dana" and got_user.is_active
    assert got_token == token and got_token.user == user and got_token.created == token.created
