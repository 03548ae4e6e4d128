"""The supervisor's bias page (/p/<slug>/bias/): FarsTail §4.3's figures drawn by
static/release/bias.js from `GET /api/projects/{slug}/bias/`, and the form that starts a
new analysis (supervisors)."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation import access
from annotation.kinds.registry import get_kind
from annotation.models import Evaluation
from annotation.release.bias import DEFAULTS, SPLITS, analysable, bias_latest_job
from annotation.templatetags.mashov import word


@login_required
@require_GET
def bias_page(request, slug):
    project = access.access_project_for_staff(request.user, slug)
    if not analysable(get_kind(project.kind)):
        raise Http404
    context = {
        "project": project,
        "splits": SPLITS,
        "has_result": bias_latest_job(project) is not None,
        "defaults": DEFAULTS,
        "can_run": access.supervises(request.user, project),
        "evaluations": [
            evaluation
            for evaluation in Evaluation.objects.filter(project=project)
            .select_related("job")
            .defer("per_item")
            .order_by("-id")
            if evaluation.status == "done"
        ],
        "strings": {
            "hypothesis_only": _("Hypothesis-only (TF-IDF + logistic regression)"),
            "overlap": _("Overlap-based (cosine + SVM)"),
            "dev": _("dev"),
            "test": _("test"),
            "accuracy": _("accuracy"),
            "trained_on": _("fitted on"),
            "gold": _("gold label"),
            "predicted": _("predicted label"),
            "queued": _("Queued…"),
            "running": _("Running…"),
            "done": _("Done."),
            "failed": _("Failed:"),
            "undefined": _("not defined"),
            "joint_computed": _("This analysis"),
            "joint_imported": _("The imported columns"),
            "analysed": _("Analysed split: %(split)s, PMI smoothing %(smoothing)s."),
            "corpus": _(
                "Tokenizer: %(tokenizer)s. All splits hold %(tokens)s distinct tokens, %(left_out)s of them "
                "stopwords or one character long (left out of the processed tokens)."
            ),
            # The kind's label codes by their names in the interface language.
            "labelNames": {label: str(word(label)) for label in get_kind(project.kind).labels},
        },
    }
    return render(request, "release/bias.html", context)
