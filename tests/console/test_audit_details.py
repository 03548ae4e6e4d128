"""The audit log's before/after as a person reads them: each field by its label in the
interface language, settings by their form labels (a table setting's columns too), codes by
their names, and never JSON."""

import pytest
from django.utils import translation

from annotation.views.audit import entry_details
from annotation.wording import join_list


@pytest.mark.parametrize("language", ["he", "fa"])
def test_a_created_project_reads_as_labelled_fields(language):
    after = {
        "kind": "qa_authoring",
        "language": "he",
        "settings": {"pool_rules": {"geektime": {"min_chars": 550, "max_chars": None}}, "fold_letter_variants": False},
    }
    with translation.override(language):
        rows = entry_details(after, "qa_authoring")
        gettext = translation.gettext
        assert [row["label"] for row in rows] == [
            gettext("kind"),
            gettext("language"),
            f"{gettext('settings')} › {gettext('Paragraph pool rules')}",
            f"{gettext('settings')} › {gettext('Treat Arabic yeh and kaf as Persian')}",
        ]
        values = [row["value"] for row in rows]
        rule = join_list([f"{gettext('Fewest characters')}: 550", f"{gettext('Most characters')}: —"])
        assert values[2] == f"geektime ({rule})"  # the list separator is the language's ("، " in Persian)
        assert values[3] == gettext("no")
    text = " ".join(f"{row['label']} {row['value']}" for row in rows)
    for code in ("qa_authoring", "pool_rules", "min_chars", "null", "false", "{", "fold_letter_variants"):
        assert code not in text


def test_a_decision_names_its_label_status_and_reasons():
    with translation.override("fa"):
        rows = entry_details(
            {"gold": "entailment", "status": "accepted", "reasons": ["methods_disagree"]}, "nli_relabel"
        )
        assert [row["value"] for row in rows] == [
            translation.gettext("entailment"),
            translation.gettext("accepted"),
            translation.gettext("the aggregation methods disagree"),
        ]
    assert entry_details(None, "nli_relabel") == []
