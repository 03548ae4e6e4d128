"""The error pages: 403, 404 and 500 in the interface language, styled, each
with a way forward; the 500 page renders without the database or a request context (it is
what shows when either has failed)."""

import pytest
from django.test import RequestFactory
from django.utils import translation
from django.views.defaults import server_error


@pytest.mark.parametrize(
    ("language", "heading", "direction"),
    [
        ("he", "משהו השתבש אצלנו", "rtl"),
        ("fa", "مشکلی در سمت ما پیش آمد", "rtl"),
        ("en", "Something went wrong on our side", "ltr"),
    ],
)
def test_500_page_needs_no_database_and_speaks_the_interface_language(language, heading, direction):
    # No django_db mark: any query here would fail the test (pytest-django blocks the database).
    with translation.override(language):
        response = server_error(RequestFactory().get("/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert f'<html lang="{language}" dir="{direction}">' in html
    assert heading in html
    assert 'href="/static/annotation/app.css"' in html or "annotation/app." in html
    assert 'href="/"' in html  # a way forward: back to the projects


@pytest.mark.django_db
def test_404_and_403_pages_in_hebrew_with_a_way_forward(client, django_user_model):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = django_user_model.objects.create_user(username="err-admin", password="pw-123456789", is_staff=True)
    user = django_user_model.objects.create_user(username="err-user", password="pw-123456789")
    project = project_create(actor=admin, slug="err-p", name="Errors", kind="nli_relabel", language="he")
    Membership.objects.create(project=project, user=user, role="annotator", status="disqualified")
    client.force_login(user)
    client.cookies["django_language"] = "he"

    missing = client.get("/p/no-such-project/")
    assert missing.status_code == 404
    html = missing.content.decode()
    assert '<html lang="he" dir="rtl">' in html and "הדף לא נמצא" in html and "/login/" in html

    refused = client.get("/p/err-p/annotate/")
    assert refused.status_code == 403
    html = refused.content.decode()
    assert '<html lang="he" dir="rtl">' in html and "לא זמין" in html
    assert "כבר אינך מקבל/ת פריטים בפרויקט הזה." in html  # the access layer's reason, translated
    assert "/login/?next=/p/err-p/annotate/" in html


@pytest.mark.django_db
def test_a_form_sent_after_the_session_ended_gets_the_translated_csrf_page():
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.cookies["django_language"] = "fa"
    response = client.post("/login/", {"username": "x", "password": "y"})  # no CSRF token: a stale form
    html = response.content.decode()
    assert response.status_code == 403
    assert '<html lang="fa" dir="rtl">' in html and "نشست شما منقضی شده است" in html and 'href="/login/"' in html


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_an_unknown_address_gets_the_product_404_page_with_a_language_switch_also_under_debug(client, settings, debug):
    # `make run` has DEBUG on: it showed Django's debug 404 page, in English, with no way back.
    settings.DEBUG = debug
    client.cookies["django_language"] = "fa"
    response = client.get("/no/such/address/")
    html = response.content.decode()
    assert response.status_code == 404
    assert '<html lang="fa" dir="rtl">' in html and 'id="error-page"' in html
    assert 'action="/i18n/setlang/"' in html and "annotation/language_switch" in html  # filled in as it is sent
    assert "csrftoken" in response.cookies  # the token the buttons send
    assert 'href="/"' in html
    assert "URLconf" not in html  # Django's debug page lists the URL patterns


@pytest.mark.django_db
def test_debug_pages_only_when_asked_for(client, settings):
    settings.DEBUG = True
    settings.MASHOV_DEBUG_PAGES = True
    assert "URLconf" in client.get("/no/such/address/").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_an_unknown_api_address_answers_in_the_api_error_shape(client, settings, debug):
    settings.DEBUG = debug
    response = client.get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"errors": [{"field": None, "message": "Not found."}]}
    # A known API address without its final slash is still redirected, not refused.
    assert client.get("/api/projects").status_code == 301


def test_the_500_page_has_a_language_switch():
    from annotation.views.errors import server_error

    with translation.override("he"):
        response = server_error(RequestFactory().get("/p/x/annotate/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert (
        'action="/i18n/setlang/"' in html
        and 'name="csrfmiddlewaretoken"' in html
        and "annotation/language_switch" in html
    )


def test_a_server_error_under_debug_gets_the_product_500_page(settings):
    from annotation.middleware import AccessErrorPageMiddleware

    settings.DEBUG = True
    middleware = AccessErrorPageMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get("/"), ZeroDivisionError())
    assert response.status_code == 500 and 'id="error-page"' in response.content.decode()
    settings.MASHOV_DEBUG_PAGES = True
    assert middleware.process_exception(RequestFactory().get("/"), ZeroDivisionError()) is None
