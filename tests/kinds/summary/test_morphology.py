"""HeSum Table 1's morphology columns in the `summary_rating` report and results page: lemma
vocabulary, anaphors and construct state from hspell (annotation/metrics/hebrew_morphology.py
gives the rules), on a small project of our own sentences counted by hand from hspell 1.4's
analyses (tests/metrics/test_hebrew_morphology.py keeps its real output for some of them).
Without hspell, and for a Persian project, the figures are None and the page says why."""

import shutil

import pytest

from annotation.metrics.hebrew_morphology import FIGURES as MORPHOLOGY
from tests.kinds.summary.test_api import jsonl, upload

pytestmark = pytest.mark.django_db
needs_hspell = pytest.mark.skipif(
    shutil.which("hspell") is None, reason="hspell is not installed (apt-get install hspell)"
)

# Every Hebrew word's readings, as hspell 1.4 gives them (lemmas; A: anaphoric, C: construct,
# in all readings / some reading):
#   ממשלת   ממשלה, השלה        C all
#   ישראל   ישראל
#   אישרה   אישר               A some
#   תקציבה  הקציב, תקציב       A all
#   ילדיה   יילד, ילד          A all
#   שמחו    שימח, שמח, מחה
#   עליו    על, עלה            A all
#   קלמנטינוביץ  unknown: its own lemma
#   הממשלה  ממשלה
#   ספריו   ספר                A all
#   נסגרו   נסגר
ITEMS = [
    {
        "id": "m1",
        "split": "test",
        "article": "ממשלת ישראל אישרה תקציבה. ילדיה שמחו עליו 2025 קלמנטינוביץ.",
        "summaries": [{"system": "gpt-4", "text": "הממשלה אישרה תקציבה."}],
    },
    {"id": "m2", "article": "ספריו נסגרו.", "summaries": [{"system": "gpt-4", "text": "ספריו"}]},
]


def make_project(make_user, client_for, language, items):
    admin = client_for(make_user("root", staff=True))
    slug = f"{language}-morph"
    made = admin.post(
        "/api/projects/",
        {"slug": slug, "name": "Morphology", "kind": "summary_rating", "language": language},
        format="json",
    )
    assert made.status_code == 201, made.content
    sup = make_user("sup")
    added = admin.post(
        f"/api/projects/{slug}/members/", {"username": "sup", "role": "supervisor", "status": "active"}, format="json"
    )
    assert added.status_code == 201, added.content
    client = client_for(sup)
    imported = client.post(
        f"/api/projects/{slug}/import/", {"file": upload("m.jsonl", jsonl(items)), "format": "jsonl"}
    )
    assert imported.status_code == 201, imported.content
    return slug, client, sup


def measure(slug, client):
    from annotation.tasks import run_job

    queued = client.post(f"/api/projects/{slug}/intrinsic/", {}, format="json")
    assert queued.status_code == 202, queued.content
    run_job(queued.json()["job"])
    return client.get(f"/api/projects/{slug}/report/").json()["profile"]


def results_page(sup, slug, language):
    from django.test import Client

    browser = Client(HTTP_ACCEPT_LANGUAGE=language)
    browser.force_login(sup)
    page = browser.get(f"/p/{slug}/summaries/")
    assert page.status_code == 200
    return page.content.decode()


@needs_hspell
def test_the_profile_counts_lemmas_anaphors_and_construct_state_with_hspell(make_user, client_for):
    slug, client, sup = make_project(make_user, client_for, "he", ITEMS)
    profile = measure(slug, client)
    assert profile["analyser"] == "hspell 1.4"
    splits = {row["split"]: row for row in profile["splits"]}

    def morphology(figures):
        return {key: figures[key] for key in MORPHOLOGY}

    assert morphology(splits["test"]["articles"]) == {
        # ממשלה השלה ישראל אישר הקציב תקציב יילד ילד שימח שמח מחה על עלה קלמנטינוביץ
        "lemmas": 14,
        "anaphors_mean": 3.0,  # תקציבה ילדיה עליו
        "anaphors_possible_mean": 4.0,  # and אישרה
        "construct_mean": 1.0,  # ממשלת
        "construct_possible_mean": 1.0,
        "known_words": 7 / 8,  # 2025 is not a Hebrew word; קלמנטינוביץ is unknown
    }
    assert morphology(splits["test"]["systems"]["gpt-4"]) == {
        "lemmas": 4,  # ממשלה אישר הקציב תקציב
        "anaphors_mean": 1.0,
        "anaphors_possible_mean": 2.0,
        "construct_mean": 0.0,
        "construct_possible_mean": 0.0,
        "known_words": 1.0,
    }
    assert morphology(splits[""]["articles"]) == {
        "lemmas": 2,
        "anaphors_mean": 1.0,
        "anaphors_possible_mean": 1.0,
        "construct_mean": 0.0,
        "construct_possible_mean": 0.0,
        "known_words": 1.0,
    }
    # The text figures are those of before.
    assert splits["test"]["articles"]["vocabulary"] == 9 and splits["test"]["articles"]["sentences_mean"] == 2

    html = results_page(sup, slug, "he")
    assert "למות" in html and "סמיכות (ממוצע)" in html  # the column headings, in Hebrew
    assert "hspell 1.4" in html and "DictaBERT" in html and "ללא הקשר" in html  # the note, translated
    assert '<td class="num" data-figure="anaphors"><bdi dir="ltr">3.0–4.0</bdi></td>' in html
    assert '<td class="num" data-figure="known"><bdi dir="ltr">88%</bdi></td>' in html


def test_without_hspell_the_figures_are_none_and_the_page_says_so(make_user, client_for, monkeypatch):
    from annotation import hspell

    monkeypatch.setattr(hspell.shutil, "which", lambda name: None)
    slug, client, sup = make_project(make_user, client_for, "he", ITEMS)
    profile = measure(slug, client)
    assert profile["analyser"] is None
    articles = profile["splits"][1]["articles"]
    assert articles["texts"] == 1 and articles["vocabulary"] == 9
    assert {key: articles[key] for key in MORPHOLOGY} == dict.fromkeys(MORPHOLOGY)
    html = results_page(sup, slug, "fa")
    assert "تحلیلگر صرفی hspell" in html and 'data-figure="lemmas"' not in html  # "not installed", in Persian


@needs_hspell
def test_a_persian_project_has_no_morphology_figures(make_user, client_for):
    items = [
        {
            "id": "p1",
            "article": "دولت بودجه را تصویب کرد و وزیر از آن دفاع کرد.",
            "summaries": [{"system": "gpt-4", "text": "بودجه تصویب شد."}],
        }
    ]
    slug, client, sup = make_project(make_user, client_for, "fa", items)
    profile = measure(slug, client)
    assert profile["analyser"] is None
    assert profile["splits"][0]["systems"]["gpt-4"]["lemmas"] is None
    assert 'data-figure="lemmas"' not in results_page(sup, slug, "en")


def test_bad_requests_are_refused_and_store_no_profile(make_user, client_for):
    slug, client, _sup = make_project(make_user, client_for, "he", ITEMS)
    for body in ({"all": "yes"}, {"all": 1}):
        bad = client.post(f"/api/projects/{slug}/intrinsic/", body, format="json")
        assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "all", bad.content
    assert client.get(f"/api/projects/{slug}/report/").json()["profile"] is None
