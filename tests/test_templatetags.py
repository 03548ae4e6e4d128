"""People's words for codes on the dashboards (annotation/templatetags/mashov.py)."""

import pytest
from django.template import Context, Template
from django.utils import translation

from annotation.templatetags.mashov import scope_name


def test_scopes_read_as_words_in_the_interface_language():
    scope = {"criterion": "accuracy", "system": "system A"}
    with translation.override("en"):
        assert scope_name(scope) == "system A · accuracy"
        assert scope_name({"round": "all"}) == "All rounds"
        assert scope_name({"criterion": "all"}) == "all criteria"
    with translation.override("he"):
        assert scope_name(scope) == "system A · דיוק"
        assert scope_name({"round": 2}) == "סבב 2"
    with translation.override("fa"):
        assert scope_name({"criterion": "coherence"}) == "انسجام"


def test_kinds_statuses_levels_and_languages_translated():
    template = Template(
        "{% load mashov %}{{ k|kind_name }}|{{ s|status_name }}|{{ l|level_name }}|{{ lang|language_name }}|{{ x|word }}"
    )
    context = Context({"k": "qa_authoring", "s": "queued", "l": "ordinal", "lang": "fa", "x": "GPT-4"})
    with translation.override("en"):
        assert template.render(context) == "Question authoring|queued|ordinal|Persian|GPT-4"
    with translation.override("he"):
        assert template.render(context) == "כתיבת שאלות|בתור|אורדינלי|פרסית|GPT-4"


@pytest.mark.parametrize("language", ["he", "fa"])
def test_a_figure_path_reads_in_the_interface_language(language):
    """The leaderboard's full table names "per_class.entailment.precision" in words."""
    from django.utils import translation

    from annotation.release.views.leaderboard import figure_name

    with translation.override(language):
        name = figure_name("per_class.entailment.precision")
    assert "_" not in name and "entailment" not in name and name.count("›") == 2
