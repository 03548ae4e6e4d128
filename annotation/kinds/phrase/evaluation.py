"""Model evaluation of phrase pairs (fine-grained-nli-coherence §3-§5): accuracy, macro F1,
per-class P/R/F1 and the confusion matrix over the seven labels, and — for the pairs the
model also labeled in reversed order (a row's `reversed`: its label for (right, left)) — its
soft and hard coherence (§3.1, §3.2; annotation.metrics.coherence), with y_rev = Rev(y) as §5
builds the reversed pairs. Beside accuracy and macro F1, the paper's own measure, weighted F1,
for each of its six evaluation scenarios (§5, Table 3): the positive pairs or all pairs
(`tracks.positives|all`) of the images, the headlines or both sources
(`.images|headlines|all`); the confusion matrix also normalised over each gold row
(appendix A.2).

Gold: the item's stored gold (the majority of its labels), else its imported label; probes
(annotators' reversed copies) are never scored."""

import numpy as np

from annotation.metrics.coherence import LABELS, hard_coherence, soft_coherence
from annotation.metrics.evaluation import (
    classification_point,
    masked_rates_statistic,
    selections_classification_statistic,
)
from annotation.release.evaluation_scorers import ClassificationScorer

from .labels import canonical_label

NO_REVERSED = -1
# An item's scenario group is source × polarity: source 0 images, 1 headlines, 2 neither
# named; polarity 0 positive (a PhrasIS positives file, or gold other than UNRELATED), 1
# negative.
SOURCES = ("images", "headlines")
POLARITIES = ("positives", "negatives")
UNKNOWN = -1
GROUPS = (len(SOURCES) + 1) * len(POLARITIES)
TRACKS = {
    f"tracks.{polarity}.{source}": [
        group
        for group in range(GROUPS)
        if (source == "all" or group // len(POLARITIES) == SOURCES.index(source))
        and (polarity == "all" or group % len(POLARITIES) == 0)
    ]
    for polarity in ("positives", "all")
    for source in (*SOURCES, "all")
}


class PhraseScorer(ClassificationScorer):
    fields = ("prediction", "reversed")
    columns = ("accuracy", "macro_f1", "weighted_f1", "soft_coherence", "hard_coherence")
    gold_columns = ("payload__source", "payload__phrasis__polarity")

    def __init__(self):
        super().__init__(LABELS, canonical_label, ("gold_label", "reference_label"))

    def items(self, project, split):
        return super().items(project, split).filter(probe_of__isnull=True)

    def gold_extra(self, source, polarity) -> tuple:
        return (
            SOURCES.index(source) if source in SOURCES else len(SOURCES),
            POLARITIES.index(polarity) if polarity in POLARITIES else UNKNOWN,
        )

    def clean(self, record: dict, row: int):
        predicted, errors = self.label_of(record.get("prediction"), "prediction", row)
        reversed_, more = self.label_of(record.get("reversed"), "reversed", row, required=False)
        return (predicted, NO_REVERSED if reversed_ is None else reversed_), errors + more

    def prediction_label(self, prediction) -> int:
        return prediction[0]

    def more_arrays(self, keys: list, gold: dict, predictions: dict) -> dict:
        reversed_ = np.array([predictions[key][1] for key in keys], dtype=np.int64)
        soft = np.zeros(len(keys))
        hard = np.zeros(len(keys))
        for i, key in enumerate(keys):
            if reversed_[i] == NO_REVERSED:
                continue
            original, backwards, label = LABELS[predictions[key][0]], LABELS[reversed_[i]], LABELS[gold[key][0]]
            soft[i] = soft_coherence([(original, backwards)]).coherent
            hard[i] = hard_coherence([(original, backwards, label)]).coherent
        unrelated = LABELS.index("UNRELATED")
        groups = np.array(
            [
                gold[key][1] * len(POLARITIES)
                + (gold[key][2] if gold[key][2] != UNKNOWN else int(gold[key][0] == unrelated))
                for key in keys
            ],
            dtype=np.int64,
        )
        return {"reversed": reversed_, "soft_coherence": soft, "hard_coherence": hard, "group": groups}

    def more_statistics(self, arrays: dict) -> list:
        flags = {name: arrays[name].astype(bool) for name in ("soft_coherence", "hard_coherence")}
        return [
            masked_rates_statistic(flags, arrays["reversed"] != NO_REVERSED),
            selections_classification_statistic(
                arrays["gold"], arrays["predicted"], len(LABELS), arrays["group"], GROUPS, TRACKS
            ),
        ]

    def extras(self, arrays: dict) -> dict:
        out = super().extras(arrays)
        point = classification_point(arrays["gold"], arrays["predicted"], self.labels)
        out["confusion"] = {**out["confusion"], "normalized": point["confusion_normalized"]}
        out["reversed_pairs"] = int((arrays["reversed"] != NO_REVERSED).sum())
        return out
