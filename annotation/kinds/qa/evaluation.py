"""Model evaluation of qa_authoring (HeQ §4, appendix B): exact match, token F1 and TLNLS of
a model's answers against every gold answer of each question — the author's span, the
validators' extra spans (HeQ §3.3) and an imported file's answers, exactly the answers the
SQuAD export carries (formats.export_questions; rejected questions are left out) — over
all questions, and for answerable and unanswerable ones apart.

A prediction is the answer text, "" for "no answer" (SQuAD 2.0's predictions file), scored
as annotation.metrics.spans scores None; matching folds letters as the project's
`fold_letter_variants` says."""

import numpy as np
from django.utils.translation import gettext

from annotation.errors import FieldError
from annotation.kinds.base import EvaluationScorer, item_slice_attributes
from annotation.metrics import spans
from annotation.metrics.evaluation import masked_means_statistic

from .formats import export_questions
from .questions import imported_golds

FIGURES = (("exact_match", spans.exact_match), ("f1", spans.f1), ("tlnls", spans.tlnls))


class QaScorer(EvaluationScorer):
    primary = "f1"
    accepts_squad_dict = True
    columns = ("exact_match", "f1", "tlnls", "answerable.f1", "unanswerable.f1")

    def __init__(self, kind):
        self.kind = kind

    def gold(self, project, split):
        """{question id: [gold answer texts] or [None]} of the questions of `split` (the
        article split of HeQ §3.3 that the export applies), in export order."""
        out = {}
        for paragraph in export_questions(project, split=split):
            for question in paragraph["paragraph"]["qas"]:
                if isinstance(question.get("id"), str) and question["id"]:
                    out[question["id"]] = imported_golds(question)
        return out

    def slice_attributes(self, project, keys: list[str]) -> list[dict[str, str]]:
        """A question's paragraph's attributes: the article split the export gives it,
        the article's `source` (Wikipedia, Geektime: HeQ Tables 6-7), the item's extra."""
        wanted = set(keys)
        found = {}
        for entry in export_questions(project):
            ids = [q.get("id") for q in entry["paragraph"]["qas"] if q.get("id") in wanted]
            if not ids:
                continue
            attributes = item_slice_attributes(entry["split"] or "", entry["item"].payload)
            if entry.get("source"):
                attributes["source"] = str(entry["source"])
            found.update(dict.fromkeys(ids, attributes))
        return [found.get(key, {}) for key in keys]

    def clean(self, record: dict, row: int):
        answer = record.get("prediction")
        if not isinstance(answer, str):
            shown = "missing" if answer is None else f"a {type(answer).__name__}"
            return None, [
                FieldError(
                    "prediction",
                    gettext('must be the answer text, a string ("" for no answer), not %(shown)s') % {"shown": shown},
                    row,
                )
            ]
        return (answer or None), []

    def arrays(self, project, gold: dict, predictions: dict) -> dict:
        fold = self.kind.project_settings(project)["fold_letter_variants"]
        keys = list(gold)
        out = {
            name: np.array([measure(predictions[key], gold[key], fold_letters=fold) for key in keys], dtype=float)
            for name, measure in FIGURES
        }
        out["answerable"] = np.array([None not in gold[key] for key in keys], dtype=bool)
        return out

    def statistic(self, arrays: dict):
        answerable = arrays["answerable"].astype(bool)
        return masked_means_statistic(
            {name: arrays[name] for name, _measure in FIGURES}, {"answerable": answerable, "unanswerable": ~answerable}
        )

    def extras(self, arrays: dict) -> dict:
        answerable = arrays["answerable"].astype(bool)
        return {"questions": {"answerable": int(answerable.sum()), "unanswerable": int((~answerable).sum())}}
