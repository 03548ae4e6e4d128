"""Bad rows of every kind's own files are refused in the interface's language: the row
checks of each kind and the readers of its file formats (FarsTail TSV, PhrasIS, LCHAIM)
build their messages with gettext, so a Hebrew or Persian supervisor reads no English
sentence from the import."""

import html
import json
import re

import pytest
from django.utils import translation

from tests.api.test_supervisor_pages import logged_in, upload

LANGUAGES = ["he", "fa"]


def _line(**record) -> str:
    return json.dumps(record, ensure_ascii=False)


def _fixed_part(message: str) -> str:
    """The longest run of the message between its placeholders: what the page must show
    whatever the values are."""
    return max(re.split(r"%\([a-z_]+\)s", message), key=len).strip()


# kind, file name, format, file text, messages (msgids; a placeholder's value is not
# checked), English that must not be on the page.
CASES = {
    "translation_rating": (
        "t.jsonl",
        "jsonl",
        _line(id="t1", source={"premise": "p", "hypothesis": "h", "label": "maybe"}, candidates=[]) + "\n",
        ["must be one of %(choices)s (or e, n, c)", "must be a non-empty list"],
        ["must be one of", "must be a non-empty list"],
    ),
    "summary_rating": (
        "s.jsonl",
        "jsonl",
        _line(id="s1", article="   ", summaries="x") + "\n",
        ["is blank", "must be a list of summaries, each with a system, a text and optional scores"],
        ["is blank", "must be a list"],
    ),
    "phrase_pair": (
        "PhrasIS.train.images.positives.txt",
        "phrasis",
        "1\tEQUI\ta\tb\nabc\tEQUI\ta\tb\t0 1\t0 1\tx\n",
        [
            "has %(n)s tab-separated columns; PhrasIS lines have 7",
            "column 1 (similarity score) “%(score)s” is not a finite number",
        ],
        ["tab-separated columns", "is not a finite number"],
    ),
    "nli_relabel": (
        "Train-word.csv",
        "farstail",
        "premise\thypothesis\tlabel\na\tb\nc\td\tmaybe\n",
        ["has %(fields)s fields, the header has %(header)s", "must be one of %(choices)s (or e, n, c)"],
        ["fields, the header has", "must be one of"],
    ),
    "nli_authoring": (
        "q.jsonl",
        "jsonl",
        _line(id="q1", question=" ", choices="x", answer_index="a") + "\n",
        ["is blank", "must be a list of strings", "must be an integer"],
        ["is blank", "must be a list of strings", "must be an integer"],
    ),
    "label_test": (
        "l.csv",
        "csv",
        "id,premise,hypothesis,label\nl1,p,h,maybe\n",
        ["must be one of %(choices)s (or e, n, c)"],
        ["must be one of"],
    ),
}


@pytest.fixture
def project_of(db, make_user):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    def make(kind: str):
        admin = make_user("root", staff=True)
        supervisor = make_user("sup")
        project = project_create(actor=admin, slug=f"bad-{kind.replace('_', '-')}", name=kind, kind=kind, language="fa")
        Membership.objects.create(project=project, user=supervisor, role="supervisor", status="active")
        return project, logged_in(supervisor)

    return make


@pytest.mark.django_db
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("kind", list(CASES))
def test_bad_rows_of_every_kind_are_explained_in_the_interface_language(project_of, kind, language):
    name, fmt, text, messages, english = CASES[kind]
    project, sup = project_of(kind)
    sup.cookies["django_language"] = language
    response = sup.post(f"/p/{project.slug}/import/", {"file": upload(name, text), "format": fmt}, follow=True)
    body = html.unescape(response.content.decode())
    with translation.override(language):
        expected = [_fixed_part(translation.gettext(message)) for message in messages]
        expected.append(translation.gettext("row %(row)s") % {"row": 2 if fmt in ("farstail", "phrasis") else 1})
    for text_ in expected:
        # A translation that is missing would leave the English msgid: refuse that too.
        assert text_ and text_ in body, (text_, body[body.find('class="error"') : body.find('class="error"') + 900])
    for sentence in english:
        assert sentence not in body, sentence
    assert project.items.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("language", LANGUAGES)
def test_lchaim_files_that_do_not_match_are_explained_in_the_interface_language(project_of, language):
    project, sup = project_of("translation_rating")
    sup.cookies["django_language"] = language
    translated = json.dumps([{"uid": "1", "premise": "p", "hypothesis": "h"}, {"uid": "1", "premise": "q"}])
    response = sup.post(
        f"/api/projects/{project.slug}/import-lchaim/",
        {"split": "dev", "system": ["gpt", "gpt"], "translation": [upload("a.json", translated)]},
    )
    assert response.status_code == 400, response.content
    body = json.dumps(response.json(), ensure_ascii=False)
    with translation.override(language):
        gettext = translation.gettext
        expected = [
            gettext("%(systems)s system name(s) for %(files)s translation file(s)") % {"systems": 2, "files": 1},
            gettext("system “%(system)s” is given twice") % {"system": "gpt"},
        ]
    for text in expected:
        assert text in body, (text, body)
    for sentence in ("nothing was imported", "system name(s)", "is given twice"):
        assert sentence not in body, sentence

    # The files agree in number but one translation repeats a uid the source lacks.
    source = _line(uid="1", premise="p", hypothesis="h", label="entailment") + "\n"
    response = sup.post(
        f"/api/projects/{project.slug}/import-lchaim/",
        {
            "split": "dev",
            "source": upload("s.jsonl", source),
            "system": ["gpt"],
            "translation": [upload("a.json", translated)],
        },
    )
    assert response.status_code == 400, response.content
    body = json.dumps(response.json(), ensure_ascii=False)
    with translation.override(language):
        duplicate = translation.gettext("duplicate uid “%(uid)s” (first in row %(row)s)") % {"uid": "1", "row": 1}
    assert duplicate in body, body
    assert "duplicate uid" not in body
    assert project.items.count() == 0
