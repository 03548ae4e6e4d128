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
    project = project_create(actor=admin, slug=slug, name=slug, kind="qa_authoring", language=language,
                             settings={"validate_splits": ["train", "dev", "test"], **(settings or {})})
    users = {}
    for name, role in (("sup", "supervisor"), ("v1", "annotator"), ("v2", "annotator")):
        users[name] = make_user(f"{name}-{slug}")
        Membership.objects.create(project=project, user=users[name], role=role, status="active")
    data = json.dumps({"version": "v1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]},
                      ensure_ascii=False)
    response = client_for(users["sup"]).post(f"/api/projects/{slug}/import/",
                                             {"file": upload("f.json", data), "format": "squad"}, format="multipart")
    assert response.status_code == 201, response.content
    return project, lambda name: client_for(users[name])


def answer(text, context):
    return {"text": text, "answer_start": context.index(text)}


def test_tlnls_chooses_f1_for_every_gold_when_one_gold_is_a_number(make_user, client_for):
    # Golds "1999" (all digits) and "בשנת 1948"; the validator marks "בשנת 1999".
    # mrl_eval: one number-like gold puts the whole question on F1: max(2/3, 1/2) = 2/3.
    # Chosen per gold, "בשנת 1948" would get TLNLS (1 + 1/2) / 2 = 0.75.
    start = PARAGRAPH.index("בשנת 1999")
    qas = [{"question": "מתי נוסדה החברה?", "id": "q1", "is_impossible": False,
            "answers": [answer("1999", PARAGRAPH), answer("בשנת 1948", PARAGRAPH)]}]
    project, client = import_project(make_user, client_for, slug="heq-golds", language="he", context=PARAGRAPH, qas=qas)
    item = project.items.get()
    response = client("v1").post(SUBMIT, {"item": item.pk, "question_key": "q1", "answerable": True,
                                          "answer": {"start": start, "text": "בשנת 1999"}}, format="json")
    assert response.status_code == 201, response.content
    agreement = client("sup").get(f"/api/projects/{project.slug}/report/").json()["span_agreement"]
    assert agreement["pairs"] == 1
    assert agreement["em"] == 0.0
    assert agreement["f1"] == pytest.approx(2 / 3)
    assert agreement["tlnls"] == pytest.approx(2 / 3)
