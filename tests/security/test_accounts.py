"""Accounts through HTTP: passwords that are only blanks or invisible characters, tokens
that outlive a password change, usernames that impersonate another, and emails are all
refused, with nothing stored; a user can revoke their own token."""

import pytest

STRONG = "a-Long-pass-phrase-42"
REVOKE = "/api/auth/token/current/"


def field_errors(response, status: int = 400) -> dict[str, str]:
    assert response.status_code == status, (response.status_code, response.content[:1000])
    return {error["field"]: error["message"] for error in response.json()["errors"]}


@pytest.fixture
def supervisor(make_user, client_for):
    return client_for(make_user("root", staff=True))


def create(client, username, password=STRONG, **extra):
    return client.post("/api/users/", {"username": username, "password": password, **extra}, format="json")


def token_for(api_client, username, password):
    response = api_client.post("/api/auth/token/", {"username": username, "password": password}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def projects_with(api_client, token):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    status = api_client.get("/api/projects/").status_code
    api_client.credentials()
    return status


# ---------------------------------------------------------------- passwords


@pytest.mark.django_db
@pytest.mark.parametrize(
    "password",
    [
        " " * 8,
        "\u200f" * 8,  # RLM
        "\u200e\u200f\u200c\u200d\u200b\u2060\ufeff\u00ad",  # LRM, RLM, ZWNJ, ZWJ, ZWSP, WJ, BOM, soft hyphen
        "\u3000" * 8,  # ideographic space
        "\t\n\r\u00a0\u2028\u2029\u202f\u205f",
        "\u05b0\u05b4\u05b8\u05bc\u0301\u0301\u0301\u0301",  # combining marks with no letter
        "\u3164" * 8,  # Hangul filler: a letter that shows nothing
        " a b c d e f ",  # six visible characters padded to length
    ],
    ids=[
        "spaces",
        "rlm",
        "format-controls",
        "ideographic-space",
        "other-whitespace",
        "marks-only",
        "hangul-filler",
        "too-few-visible",
    ],
)
def test_blank_or_invisible_passwords_are_refused(supervisor, django_user_model, password):
    before = django_user_model.objects.count()
    errors = field_errors(create(supervisor, "dana", password))
    assert set(errors) == {"password"}
    assert "visible" in errors["password"]
    assert django_user_model.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize("password", ["a long passphrase", "pass-word-123", "סיסמה ארוכה מאוד", "رمز\u200cعبور طولانی"])
def test_passphrases_with_spaces_or_zwnj_are_fine(supervisor, api_client, password):
    assert create(supervisor, "dana", password).status_code == 201
    assert token_for(api_client, "dana", password)


@pytest.mark.django_db
def test_django_validators_still_apply_with_their_messages(supervisor, django_user_model):
    errors = field_errors(create(supervisor, "dana", "password"))
    assert "too common" in errors["password"]
    assert not django_user_model.objects.filter(username="dana").exists()


# ---------------------------------------------------------------- tokens


@pytest.mark.django_db
def test_revoking_the_token_logs_it_out_and_a_new_login_issues_another(make_user, api_client):
    make_user("dana", password=STRONG)
    token = token_for(api_client, "dana", STRONG)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = api_client.delete(REVOKE)
    assert response.status_code == 204, response.content
    assert api_client.get("/api/projects/").status_code == 401
    assert api_client.delete(REVOKE).status_code == 401
    api_client.credentials()
    fresh = token_for(api_client, "dana", STRONG)
    assert fresh != token
    assert projects_with(api_client, fresh) == 200


@pytest.mark.django_db
def test_revoking_needs_a_login(api_client):
    assert api_client.delete(REVOKE).status_code == 401


@pytest.mark.django_db
def test_revoking_touches_only_the_callers_token(make_user, api_client):
    make_user("dana", password=STRONG)
    make_user("reza", password=STRONG)
    dana, reza = token_for(api_client, "dana", STRONG), token_for(api_client, "reza", STRONG)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {dana}")
    assert api_client.delete(REVOKE).status_code == 204
    assert projects_with(api_client, reza) == 200


@pytest.fixture
def admin_client(make_user, client):
    admin = make_user("site-admin", staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    return client


@pytest.mark.django_db
def test_a_password_changed_in_the_admin_ends_the_old_token(admin_client, make_user, api_client):
    dana = make_user("dana", password=STRONG)
    token = token_for(api_client, "dana", STRONG)
    new_password = "another-Long-phrase-7"
    response = admin_client.post(
        f"/admin/auth/user/{dana.pk}/password/", {"password1": new_password, "password2": new_password}
    )
    assert response.status_code == 302, response.content[:2000]
    assert projects_with(api_client, token) == 401
    assert projects_with(api_client, token_for(api_client, "dana", new_password)) == 200


@pytest.mark.django_db
def test_a_password_set_in_code_ends_the_old_token(make_user, api_client):
    dana = make_user("dana", password=STRONG)
    token = token_for(api_client, "dana", STRONG)
    dana.set_password("another-Long-phrase-7")
    dana.save()
    assert projects_with(api_client, token) == 401


@pytest.mark.django_db
def test_other_saves_of_the_user_keep_the_token(make_user, api_client):
    dana = make_user("dana", password=STRONG)
    token = token_for(api_client, "dana", STRONG)  # logging in writes last_login
    dana.email = "dana@example.org"
    dana.save()
    assert projects_with(api_client, token) == 200


@pytest.mark.django_db
def test_the_admin_refuses_an_invisible_password(admin_client, make_user):
    dana = make_user("dana", password=STRONG)
    blank = "\u200f" * 10
    response = admin_client.post(f"/admin/auth/user/{dana.pk}/password/", {"password1": blank, "password2": blank})
    assert response.status_code == 200  # the form again, with its error
    dana.refresh_from_db()
    assert dana.check_password(STRONG)


# ---------------------------------------------------------------- usernames


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("existing", "spoof"),
    [
        ("admin", "\u0430dmin"),  # Cyrillic a
        ("\u0430dmin", "admin"),  # the spoof came first
        ("dana", "d\u0430n\u0430"),
        ("coca", "\u0441\u043e\u0441\u0430"),  # every letter Cyrillic
        ("paypal", "p\u0430yp\u0430l"),
        ("noa", "n\u03bfa"),  # Greek omicron
    ],
    ids=["cyrillic-a", "reverse", "two-letters", "whole-script", "paypal", "greek-omicron"],
)
def test_a_lookalike_of_an_existing_username_is_refused(supervisor, make_user, django_user_model, existing, spoof):
    make_user(existing)
    before = django_user_model.objects.count()
    errors = field_errors(create(supervisor, spoof))
    assert set(errors) == {"username"}
    assert existing in errors["username"]
    assert django_user_model.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("existing", "variant"), [("admin", "\uff41\uff44\uff4d\uff49\uff4e"), ("admin", "Admin"), ("dana", "DANA")]
)
def test_fullwidth_and_case_variants_of_an_existing_username_conflict(
    supervisor, make_user, django_user_model, existing, variant
):
    make_user(existing)
    before = django_user_model.objects.count()
    errors = field_errors(create(supervisor, variant), 409)
    assert "username" in errors
    assert django_user_model.objects.count() == before


@pytest.mark.django_db
def test_usernames_are_stored_in_nfkc(supervisor, django_user_model, api_client):
    response = create(supervisor, "\uff44\uff41\uff4e\uff41")  # fullwidth "dana"
    assert response.status_code == 201, response.content
    assert response.json()["username"] == "dana"
    assert django_user_model.objects.filter(username="dana").exists()
    assert token_for(api_client, "dana", STRONG)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "names",
    [
        ("דנה", "مریم", "ولی"),  # one script each (Hebrew vav looks like l, Persian heh like o)
        ("dana.כהן", "dana"),  # a mixed name that imitates no one
        ("user1", "userl", "userI"),  # look-alikes within one script are a matter of fonts, not spoofing
        ("\u0441\u043e\u0441\u0430", "сон"),  # Cyrillic names among themselves
    ],
    ids=["hebrew-persian", "mixed-not-imitating", "same-script", "cyrillic"],
)
def test_names_that_imitate_no_one_in_another_script_are_fine(supervisor, names):
    for name in names:
        response = create(supervisor, name)
        assert response.status_code == 201, (name, response.content)
        assert response.json()["username"] == name


@pytest.mark.django_db
def test_the_admin_refuses_a_lookalike_username(admin_client, make_user, django_user_model):
    make_user("admin")
    before = django_user_model.objects.count()
    response = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "\u0430dmin", "usable_password": "true", "password1": STRONG, "password2": STRONG},
    )
    assert response.status_code == 200  # the form again, with its error
    assert "looks like the existing username" in response.content.decode()
    assert django_user_model.objects.count() == before
    response = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "dana", "usable_password": "true", "password1": STRONG, "password2": STRONG},
    )
    assert response.status_code == 302
    assert django_user_model.objects.count() == before + 1


@pytest.mark.django_db
def test_the_admin_refuses_renaming_into_a_lookalike(admin_client, make_user):
    make_user("admin")
    dana = make_user("dana")

    def rename(username):
        return admin_client.post(
            f"/admin/auth/user/{dana.pk}/change/",
            {"username": username, "is_active": "on", "date_joined_0": "2024-01-01", "date_joined_1": "00:00:00"},
        )

    response = rename("\u0430dmin")
    assert response.status_code == 200
    assert "looks like the existing username" in response.content.decode()
    dana.refresh_from_db()
    assert dana.username == "dana"
    assert rename("dana2").status_code == 302
    dana.refresh_from_db()
    assert dana.username == "dana2"


# ---------------------------------------------------------------- emails


@pytest.mark.django_db
@pytest.mark.parametrize(
    "email",
    [
        "not-an-email",
        "a@b",
        "a@@example.org",
        "a b@example.org",
        "@example.org",
        "dana@",
        "dana@example..org",
        42,
        ["a@example.org"],
    ],
)
def test_bad_emails_are_refused(supervisor, django_user_model, email):
    before = django_user_model.objects.count()
    errors = field_errors(create(supervisor, "dana", email=email))
    assert set(errors) == {"email"}
    assert django_user_model.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize("email", ["dana@example.org", "dana@דוגמה.ישראל", ""])
def test_good_or_absent_emails_are_kept(supervisor, django_user_model, email):
    response = create(supervisor, "dana", email=email)
    assert response.status_code == 201, response.content
    assert django_user_model.objects.get(username="dana").email == email
