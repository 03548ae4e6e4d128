"""How a qa_authoring report matches answers: EM, F1 and TLNLS against several gold answers
(mrl_eval's rule, chosen once per question) and the letter-variant folding."""

import json

import pytest

from tests.kinds.qa.test_api import PARAGRAPH, upload

SUBMIT = "/api/validations/submit/"


def import_project(make_user, client_for, *, slug, language, context, qas, settings=None):
    """A qa_authoring project whose SQuAD file holds one paragraph with `qas`; returns a
    client factory for its supervisor "sup" and its annotators "v1", "v2"."""
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user(f"root-{slug}", staff=True)
    project = project_create(
        actor=admin,
        slug=slug,
        name=slug,
        kind="qa_authoring",
        language=language,
        settings={"validate_splits": ["train", "dev", "test"], **(settings or {})},
    )
    users = {}
    for name, role in (("sup", "supervisor"), ("v1", "annotator"), ("v2", "annotator")):
        users[name] = make_user(f"{name}-{slug}")
        Membership.objects.create(project=project, user=users[name], role=role, status="active")
    data = json.dumps(
        {"version": "v1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]},
        ensure_ascii=False,
    )
    response = client_for(users["sup"]).post(
        f"/api/projects/{slug}/import/", {"file": upload("f.json", data), "format": "squad"}, format="multipart"
    )
    assert response.status_code == 201, response.content
    return project, lambda name: client_for(users[name])


def answer(text, context):
    return {"text": text, "answer_start": context.index(text)}


def test_tlnls_chooses_f1_for_every_gold_when_one_gold_is_a_number(make_user, client_for):
    # Golds "1999" (all digits) and "בשנת 1948"; the validator marks "בשנת 1999".
    # mrl_eval: one number-like gold puts the whole question on F1: max(2/3, 1/2) = 2/3.
    # Chosen per gold, "בשנת 1948" would get TLNLS (1 + 1/2) / 2 = 0.75.
    start = PARAGRAPH.index("בשנת 1999")
    qas = [
        {
            "question": "מתי נוסדה החברה?",
            "id": "q1",
            "is_impossible": False,
            "answers": [answer("1999", PARAGRAPH), answer("בשנת 1948", PARAGRAPH)],
        }
    ]
    project, client = import_project(make_user, client_for, slug="heq-golds", language="he", context=PARAGRAPH, qas=qas)
    item = project.items.get()
    response = client("v1").post(
        SUBMIT,
        {"item": item.pk, "question_key": "q1", "answerable": True, "answer": {"start": start, "text": "בשנת 1999"}},
        format="json",
    )
    assert response.status_code == 201, response.content
    agreement = client("sup").get(f"/api/projects/{project.slug}/report/").json()["span_agreement"]
    assert agreement["pairs"] == 1
    assert agreement["em"] == 0.0
    assert agreement["f1"] == pytest.approx(2 / 3)
    assert agreement["tlnls"] == pytest.approx(2 / 3)


# "كتاب علي" (Arabic kaf and yeh) and "کتاب علی" (Persian keheh and yeh) are one phrase;
# so are "كيف" and "کیف" (a bag).
ARABIC_FORMS = "\u0643\u062a\u0627\u0628 \u0639\u0644\u064a"
PERSIAN_FORMS = "\u06a9\u062a\u0627\u0628 \u0639\u0644\u06cc"
ARABIC_BAG, PERSIAN_BAG = "\u0643\u064a\u0641", "\u06a9\u06cc\u0641"
# Only the Persian forms of the phrase; both forms of the bag.
CONTEXT = f"{PERSIAN_FORMS} \u0648 {PERSIAN_BAG} \u0648 {ARABIC_BAG}."


@pytest.mark.parametrize(
    ("language", "settings", "folded"),
    [
        ("fa", None, True),  # on by default for Persian
        ("fa", {"fold_letter_variants": False}, False),
        ("he", None, False),  # off elsewhere
        ("he", {"fold_letter_variants": True}, True),
    ],
)
def test_letter_variants_match_where_the_project_folds_them(make_user, client_for, language, settings, folded):
    # The file's question is the phrase in Arabic forms; its gold answer is the Persian bag,
    # the validator marks the Arabic one.
    qas = [
        {
            "question": f"{ARABIC_FORMS}\u061f",
            "id": "q1",
            "is_impossible": False,
            "answers": [answer(PERSIAN_BAG, CONTEXT)],
        }
    ]
    project, client = import_project(
        make_user,
        client_for,
        slug=f"variants-{language}-{folded}".lower(),
        language=language,
        context=CONTEXT,
        qas=qas,
        settings=settings,
    )
    item = project.items.get()
    assert project.settings["fold_letter_variants"] is folded
    response = client("v1").post(
        SUBMIT,
        {
            "item": item.pk,
            "question_key": "q1",
            "answerable": True,
            "answer": {"start": CONTEXT.index(ARABIC_BAG), "text": ARABIC_BAG},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    report = client("sup").get(f"/api/projects/{project.slug}/report/").json()
    assert report["question_overlap"]["mean_imported"] == (1.0 if folded else 0.0)
    agreement = report["span_agreement"]
    # Unfolded, "كيف" and "کیف" differ in 2 of 3 letters: TLNLS 1/3.
    expected = (1.0, 1.0, 1.0) if folded else (0.0, 0.0, 1 / 3)
    assert [agreement[m] for m in ("em", "f1", "tlnls")] == pytest.approx(expected)
    # Stored text keeps the letters it came with.
    item.refresh_from_db()
    assert item.payload["questions"][0]["question"] == f"{ARABIC_FORMS}\u061f"
    assert item.payload["questions"][0]["answers"][0]["text"] == PERSIAN_BAG


def test_existing_projects_without_the_setting_fold_by_language(make_user, client_for):
    # Settings stored before the setting existed: a Persian project still folds.
    qas = [
        {
            "question": f"{ARABIC_FORMS}\u061f",
            "id": "q1",
            "is_impossible": False,
            "answers": [answer(PERSIAN_BAG, CONTEXT)],
        }
    ]
    project, client = import_project(
        make_user, client_for, slug="variants-old", language="fa", context=CONTEXT, qas=qas
    )
    project.settings.pop("fold_letter_variants")
    project.save(update_fields=["settings"])
    report = client("sup").get(f"/api/projects/{project.slug}/report/").json()
    assert report["question_overlap"]["mean_imported"] == 1.0


def test_the_setting_must_be_a_boolean(make_user, client_for):
    from annotation.models import Project

    client = client_for(make_user("boss", staff=True))
    response = client.post(
        "/api/projects/",
        {
            "slug": "bad-fold",
            "name": "B",
            "kind": "qa_authoring",
            "language": "fa",
            "settings": {"fold_letter_variants": "yes"},
        },
        format="json",
    )
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["settings.fold_letter_variants"]
    assert not Project.objects.filter(slug="bad-fold").exists()
