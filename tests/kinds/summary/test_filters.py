"""HeSum §3.1's import filters through the HTTP contract: articles not in the project's
language and articles whose reference summary has 10 or fewer words are held out at import
and listed with their reason (in the requester's language); each filter has a setting that
turns it off; bad settings are a 400 naming the setting with nothing stored. The script
share they rest on is property-tested."""

import html
import io
import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.metrics.text import script_share

# --- the script share ------------------------------------------------------------------------

HEBREW_LETTERS = st.text(alphabet=st.characters(min_codepoint=0x05D0, max_codepoint=0x05EA), min_size=1)
PERSIAN_LETTERS = st.text(alphabet=st.sampled_from("ابپتثجچحخدذرزژسشصضطظعغفقکگلمنوهیيكﺍﺏﻼﭖ"), min_size=1)
LATIN_LETTERS = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéüßçñ"), min_size=1
)
# Digits (Western, Persian, Arabic-Indic), punctuation, spaces, ZWNJ, RLM, a combining mark.
NON_LETTERS = st.text(alphabet=st.sampled_from("0123456789۰۱۲۳٤ .,;:!?-–—()\"'«»\n\t\u00a0\u200c\u200f\u05b8%/"))


@given(HEBREW_LETTERS, LATIN_LETTERS)
def test_the_share_is_the_fraction_of_letters_in_the_script(hebrew, latin):
    share = script_share(hebrew + latin, "he")
    assert share == pytest.approx(len(hebrew) / (len(hebrew) + len(latin)))
    assert script_share(hebrew + latin, "en") == pytest.approx(len(latin) / (len(hebrew) + len(latin)))


@given(HEBREW_LETTERS, PERSIAN_LETTERS, LATIN_LETTERS)
def test_each_language_reads_its_own_script(hebrew, persian, latin):
    assert script_share(hebrew, "he") == script_share(persian, "fa") == script_share(latin, "en") == 1.0
    assert script_share(hebrew, "fa") == script_share(persian, "he") == script_share(latin, "he") == 0.0


@given(st.lists(st.one_of(HEBREW_LETTERS, LATIN_LETTERS, NON_LETTERS)), NON_LETTERS, st.randoms())
def test_non_letters_and_order_do_not_change_the_share(parts, noise, random):
    text = "".join(parts)
    shuffled = list(text + noise)
    random.shuffle(shuffled)
    share, other = script_share(text, "he"), script_share("".join(shuffled), "he")
    assert (share is None and other is None) or share == pytest.approx(other)


@given(st.text())
def test_the_share_is_a_fraction_or_none_without_letters(text):
    share = script_share(text, "fa")
    has_letters = any(unicodedata.category(char).startswith("L") for char in text)
    assert (share is not None) == has_letters
    assert share is None or 0.0 <= share <= 1.0
    assert script_share(text, "xx") is None


@given(NON_LETTERS)
def test_text_without_letters_has_no_share(text):
    assert script_share(text, "he") is None and script_share(text, "fa") is None


# --- the import filters through HTTP ---------------------------------------------------------

LONG_REFERENCE = "הממשלה אישרה אמש את תקציב המדינה לשנה הבאה עם תוספת משמעותית לחינוך ולבריאות."  # 14 words
SHORT_REFERENCE = "הממשלה אישרה את התקציב אמש אחרי דיון ארוך בכנסת."  # 9 words
TEN_WORDS = "הממשלה אישרה את התקציב אמש אחרי דיון ארוך בכנסת היום."  # HeSum left out 10 or fewer
HEBREW_ARTICLE = "הממשלה אישרה אמש את תקציב המדינה לשנת 2025 אחרי דיון ארוך, וכן תוספת לחינוך."
ENGLISH_ARTICLE = "The government approved the 2025 budget last night after a long debate (וגם ‏בכנסת)."


def row(row_id, article, reference, system="reference"):
    return {
        "id": row_id,
        "article": article,
        "summaries": [{"system": system, "text": reference}, {"system": "gpt-4", "text": "תקציר קצר."}],
    }


ROWS = [
    row("good-1", HEBREW_ARTICLE, LONG_REFERENCE),
    row("english", ENGLISH_ARTICLE, LONG_REFERENCE),
    row("short", HEBREW_ARTICLE, SHORT_REFERENCE),
    row("ten-words", HEBREW_ARTICLE, TEN_WORDS),
    # No reference summary: the length rule never holds it out.
    row("no-reference", HEBREW_ARTICLE, "קצר.", system="mlongt5"),
    row("good-2", HEBREW_ARTICLE + "\u200f", LONG_REFERENCE + "\n"),
]


def upload(name: str, rows) -> io.BytesIO:
    handle = io.BytesIO("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
    handle.name = name
    return handle


@pytest.fixture
def world(make_user, client_for, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    root = client_for(make_user("root", staff=True))
    sup = make_user("sup")

    def project(slug, language="he", project_settings=None):
        body = {"slug": slug, "name": slug, "kind": "summary_rating", "language": language}
        if project_settings is not None:
            body["settings"] = project_settings
        made = root.post("/api/projects/", body, format="json")
        if made.status_code == 201:
            added = root.post(
                f"/api/projects/{slug}/members/", {"username": "sup", "role": "supervisor", "status": "active"},
                format="json",
            )  # fmt: skip
            assert added.status_code == 201, added.content
        return made

    return {"root": root, "sup": client_for(sup), "sup_user": sup, "project": project}


def stored_ids(slug):
    from annotation.models import Item

    return set(Item.objects.filter(project__slug=slug).values_list("external_id", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "not_in_hebrew", "short"),
    [
        ("en", "the article is not in Hebrew", "the reference summary has 9 words, fewer than 11"),
        ("he", "הכתבה אינה בעברית", "לתקציר הייחוס יש 9 מילים, פחות מ־11"),
        ("fa", "مقاله به زبان عبری نیست", "خلاصهٔ مرجع 9 کلمه دارد، کمتر از 11"),
    ],
)
def test_other_language_and_short_references_are_held_out_with_their_reason(world, language, not_in_hebrew, short):
    assert world["project"]("hesum").status_code == 201
    sup = world["sup"]
    sup.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    response = sup.post("/api/projects/hesum/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["skipped"], body["held_out"]) == (3, 0, 3)
    ten = short.replace("9", "10")
    assert body["held_out_rows"] == [
        {"row": 2, "id": "english", "reason": not_in_hebrew},
        {"row": 3, "id": "short", "reason": short},
        {"row": 4, "id": "ten-words", "reason": ten},
    ]
    assert stored_ids("hesum") == {"good-1", "no-reference", "good-2"}
    # Importing the file again: the good rows are skipped as present, the others held out again.
    again = sup.post("/api/projects/hesum/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"}).json()
    assert (again["created"], again["skipped"], again["held_out"]) == (0, 3, 3)


@pytest.mark.django_db
def test_a_persian_project_holds_out_a_hebrew_article_and_reads_presentation_forms(world):
    assert world["project"]("farsum", language="fa", project_settings={"min_reference_words": 0}).status_code == 201
    persian = "دولت دیروز بودجهٔ سال آینده را\u200cتصویب کرد و ﻻﺯﻡ ﺍﺳﺖ ۱۴۰۳ را بدانیم."
    rows = [row("fa-1", persian, "خلاصه"), row("he-1", HEBREW_ARTICLE, "خلاصه")]
    body = (
        world["sup"].post("/api/projects/farsum/import/", {"file": upload("f.jsonl", rows), "format": "jsonl"}).json()
    )
    assert body["created"] == 1 and body["held_out_rows"] == [
        {"row": 2, "id": "he-1", "reason": "the article is not in Persian"}
    ]
    assert stored_ids("farsum") == {"fa-1"}


@pytest.mark.django_db
def test_settings_turn_each_filter_off(world, client_for):
    root = world["root"]
    assert world["project"]("hesum").status_code == 201
    no_language = root.patch("/api/projects/hesum/", {"settings": {"hold_out_other_language": False}}, format="json")
    assert no_language.status_code == 200, no_language.content
    body = world["sup"].post("/api/projects/hesum/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"}).json()
    assert body["created"] == 4 and [held["id"] for held in body["held_out_rows"]] == ["short", "ten-words"]
    # Both off: every row is stored.
    assert world["project"]("hesum-off", project_settings={"hold_out_other_language": False, "min_reference_words": 0})
    body = (
        world["sup"]
        .post("/api/projects/hesum-off/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"})
        .json()
    )
    assert (body["created"], body["held_out"], body["held_out_rows"]) == (len(ROWS), 0, [])
    assert stored_ids("hesum-off") == {r["id"] for r in ROWS}
    # Another reference system: its summary (two words here) is the one counted.
    assert world["project"]("hesum-gpt", project_settings={"reference_system": "gpt-4", "min_reference_words": 3})
    body = (
        world["sup"]
        .post("/api/projects/hesum-gpt/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"})
        .json()
    )
    assert body["created"] == 0 and body["held_out"] == len(ROWS)
    assert {held["reason"] for held in body["held_out_rows"] if held["id"] != "english"} == {
        "the reference summary has 2 words, fewer than 3"
    }
    assert stored_ids("hesum-gpt") == set()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("project_settings", "field"),
    [
        ({"min_reference_words": -1}, "settings.min_reference_words"),
        ({"min_reference_words": 1001}, "settings.min_reference_words"),
        ({"min_reference_words": 2**64}, "settings.min_reference_words"),
        ({"min_reference_words": "11"}, "settings.min_reference_words"),
        ({"min_reference_words": 10.5}, "settings.min_reference_words"),
        ({"min_reference_words": True}, "settings.min_reference_words"),
        ({"min_reference_words": None}, "settings.min_reference_words"),
        ({"hold_out_other_language": "false"}, "settings.hold_out_other_language"),
        ({"hold_out_other_language": 0}, "settings.hold_out_other_language"),
        ({"hold_out_other_language": None}, "settings.hold_out_other_language"),
    ],
)
def test_bad_filter_settings_are_400_naming_the_setting_and_store_nothing(world, project_settings, field):
    from annotation.models import Project

    made = world["project"]("bad", project_settings=project_settings)
    assert made.status_code == 400, made.content
    assert [error["field"] for error in made.json()["errors"]] == [field]
    assert not Project.objects.filter(slug="bad").exists()
    assert world["project"]("hesum").status_code == 201
    before = world["root"].get("/api/projects/hesum/").json()["settings"]
    patched = world["root"].patch("/api/projects/hesum/", {"settings": project_settings}, format="json")
    assert patched.status_code == 400 and [error["field"] for error in patched.json()["errors"]] == [field]
    assert world["root"].get("/api/projects/hesum/").json()["settings"] == before


@pytest.mark.django_db
def test_the_settings_are_explained_in_hebrew_and_persian(world):
    from django.utils import translation

    from annotation.kinds.registry import get_kind

    kind = get_kind("summary_rating")
    for language in ("he", "fa"):
        with translation.override(language):
            explained = {entry["name"]: entry for entry in kind.settings_explained(language)}
        for name in ("hold_out_other_language", "min_reference_words"):
            entry = explained[name]
            for text in (entry["label"], entry["help"]):
                assert text and not any("a" <= char <= "z" for char in text.replace("HeSum", "")), (language, text)
        assert explained["min_reference_words"]["unit"] in ("מילים", "کلمه")
        assert (explained["min_reference_words"]["default"], explained["hold_out_other_language"]["default"]) == (
            11,
            True,
        )


@pytest.mark.django_db
def test_the_import_page_lists_held_out_rows_in_the_interface_language(world):
    from django.test import Client

    assert world["project"]("hesum").status_code == 201
    page = Client()
    page.force_login(world["sup_user"])
    page.cookies["django_language"] = "he"
    response = page.post("/p/hesum/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"}, follow=True)
    body = html.unescape(response.content.decode())
    assert "3 שורות לא יובאו: הכתבה אינה בעברית (שורות 2); לתקציר הייחוס יש 9 מילים, פחות מ־11 (שורות 3)" in body, body[
        -3000:
    ]
    assert stored_ids("hesum") == {"good-1", "no-reference", "good-2"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "not_in_hebrew", "short"),
    [
        ("he", "הכתבה אינה בעברית", "לתקציר הייחוס יש 9 מילים, פחות מ־11"),
        ("fa", "مقاله به زبان عبری نیست", "خلاصهٔ مرجع 9 کلمه دارد، کمتر از 11"),
        ("en", "the article is not in Hebrew", "the reference summary has 9 words, fewer than 11"),
    ],
)
def test_a_large_import_job_lists_the_held_out_rows(world, settings, language, not_in_hebrew, short):
    settings.MASHOV_IMPORT_JOB_ROWS = 3
    assert world["project"]("hesum").status_code == 201
    sup = world["sup"]
    sup.defaults["HTTP_ACCEPT_LANGUAGE"] = "he"
    response = sup.post("/api/projects/hesum/import/", {"file": upload("h.jsonl", ROWS), "format": "jsonl"})
    assert response.status_code == 202, response.content
    from annotation.tasks import run_job

    run_job(response.json()["job"])  # what the worker runs once the request commits
    # Whoever reads the job reads the reasons in their own language, not the requester's.
    sup.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    job = sup.get(f"/api/jobs/{response.json()['job']}/").json()
    assert job["status"] == "done", job
    assert job["result"]["created"] == 3 and job["result"]["held_out"] == 3
    assert job["result"]["held_out_rows"][:2] == [
        {"row": 2, "id": "english", "reason": not_in_hebrew},
        {"row": 3, "id": "short", "reason": short},
    ]
    assert stored_ids("hesum") == {"good-1", "no-reference", "good-2"}
