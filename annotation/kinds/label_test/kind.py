"""The `label_test` kind: the NLI labeling page with the gold label hidden."""

from django.utils.translation import gettext_lazy as _

from annotation.errors import InvalidInput
from annotation.kinds.base import ProjectLink, ReleaseFile
from annotation.kinds.lchaim.formats import lchaim_json, lchaim_record, lchaim_uid
from annotation.kinds.nli.kind import NliKind
from annotation.kinds.settings import AGGREGATION_SETTINGS, MODEL_SETTINGS, between, check_aggregation_settings


class LabelTestKind(NliKind):
    """The same page with the gold label hidden; results are scored against the gold."""

    name = "label_test"
    title = _("NLI labeling test")
    short_title = _("Label test")
    recompute_pages = ("lchaim-results",)

    # What report_sections adds to the project's report, for the API's schema.
    report_keys = {
        "label_test": "accuracy and per-class P/R/F1 per annotator and for the group (LCHAIM Table 2)",
    }
    # LCHAIM §3.2: four testers, each on every one of 200 random test samples.
    # Aggregation: the testers' labels are aggregated like any crowd's and the aggregates
    # scored against the hidden gold; the gold itself is never changed.
    default_settings = {"labels_per_item": 4, "sample_size": 200, **AGGREGATION_SETTINGS, **MODEL_SETTINGS}
    # The imported label is the hidden gold the testers (annotator quality) and models
    # (model evaluation) are scored against.
    reference_label_is_gold = True
    settings_help = {
        "labels_per_item": _("Testers who label each item (LCHAIM: four)."),
        "sample_size": _("Items drawn for the test (LCHAIM: 200)."),
    }
    settings_labels = {"labels_per_item": _("Testers per item"), "sample_size": _("Sample size")}
    settings_units = {"labels_per_item": _("testers"), "sample_size": _("items")}
    round_bound_settings = {
        "labels_per_item": _(
            "items being labelled would need a different number of labels than their testers were counted for"
        )
    }
    # LCHAIM's results page (Table 2 from results.py here) and its stratified sample,
    # shared with translation rating.
    urls = ("annotation.kinds.lchaim.urls",)

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["labels_per_item"] <= 100:
            raise InvalidInput(between(1, 100), field="settings.labels_per_item")
        if not 1 <= settings["sample_size"] <= 1_000_000:
            raise InvalidInput(between(1, 1000000), field="settings.sample_size")
        check_aggregation_settings(settings)

    def blind_to_suggestions(self, settings: dict) -> bool:
        # LCHAIM §3.2: a human baseline measures people alone; a model's suggestion would
        # make it a measure of people with the model.
        return True

    def k_of_n_rule(self, settings: dict) -> tuple[int, int]:
        # Table 2's majority line: more than half of the testers (3 of 4).
        n = settings["labels_per_item"]
        return n // 2 + 1, n

    def votes_for(self, settings: dict, *, with_reference: bool) -> int:
        # The gold is hidden and is not a vote.
        return settings["labels_per_item"]

    def gold_statuses_from_aggregation(self, method: str) -> tuple[str, ...]:
        # The hidden gold is given: no method's label ever replaces it.
        return ()

    def round_rule_decision(self, item, labels: list, settings: dict) -> tuple[str, None]:
        # The round ends once every tester labelled; the gold is the hidden one the file
        # gave, never changed by the votes: the decision closes the round with no gold of its own.
        return "reference", None

    def report_sections(self, project) -> dict:
        """`label_test`: LCHAIM Table 2 (accuracy, per-class P/R/F1 per annotator, their
        mean as the group, and the majority line) against the hidden gold; see results.py."""
        from annotation.selectors.aggregation import aggregation_report_for_project

        from .results import label_test_results_for_project

        chosen = self.project_settings(project)["aggregation"]
        return {
            "label_test": label_test_results_for_project(project),
            "aggregation": aggregation_report_for_project(project, chosen, score_against_reference=True),
        }

    def release_files(self, project, split: str, items):
        """The split as LCHAIM publishes it (annotation/kinds/lchaim/formats.py), with the
        gold label; a JSON array of records the Hub reads as the `lchaim` config."""
        records = [
            lchaim_record(
                lchaim_uid(item),
                item.payload.get("premise"),
                item.payload.get("hypothesis"),
                item.gold_label or item.reference_label,
            )
            for item in items.iterator(chunk_size=2000)
        ]
        yield ReleaseFile(f"lchaim/{split}.json", lchaim_json(records), config="lchaim")

    # --- pages and review ------------------------------------------------------------

    def project_links(self, project) -> list[ProjectLink]:
        return [ProjectLink("lchaim-results", _("LCHAIM results"))]
