"""The three NLI pairs an author's annotation becomes: items of the linked `nli_relabel`
project, one per label, each with the author's intended label as its reference label (one
of the k-of-n votes, FarsTail §3.1)."""

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.translation import gettext

from annotation.errors import Conflict
from annotation.rows import store_extra

# Label of each generated item and the suffix of its external id.
GENERATED = (("entailment", "e"), ("contradiction", "c"), ("neutral", "n"))


def pairs_create_for_annotation(annotation, item, settings: dict) -> None:
    """Create the three `nli_relabel` items of this annotation. Call inside the submit
    transaction with the question item locked: a refusal here (Conflict) rolls the whole
    submit back, so nothing is stored."""
    from annotation.models import Item, Project

    target = linked_relabel_project(item.project, settings)
    # Lock the target project row so that concurrent authors get distinct positions.
    Project.objects.select_for_update().filter(pk=target.pk).first()
    last = Item.objects.filter(project=target).aggregate(last=Max("position"))["last"] or 0
    value = annotation.value
    question_id = item.external_id
    rows = [
        Item(
            project=target,
            external_id=f"{question_id}-{annotation.pk}-{suffix}",
            payload=_pair_payload(value, label),
            reference_label=label,
            group=f"{item.project.slug}:{question_id}",
            split=item.split,
            author_id=annotation.annotator_id,
            position=last + offset,
        )
        for offset, (label, suffix) in enumerate(GENERATED, start=1)
    ]
    try:
        with transaction.atomic():
            Item.objects.bulk_create(rows)
    except IntegrityError:
        raise Conflict(
            f"the relabel project {target.slug!r} already holds an item with one of the ids "
            f"{', '.join(row.external_id for row in rows)}",
            field="relabel_project",
        ) from None


def _pair_payload(value: dict, label: str) -> dict:
    """premise and hypothesis, and in `extra` (exported like an imported file's extra
    columns) the web sources the author gave: the premise's for every pair, the neutral
    hypothesis's for the neutral pair."""
    payload = {"premise": value["premise"], "hypothesis": value[label]}
    sources = ("premise_source", "neutral_source") if label == "neutral" else ("premise_source",)
    extra = {name: value[name] for name in sources if value.get(name)}
    if extra:
        store_extra(payload, extra)
    return payload


def relabel_link_problem(project, settings: dict) -> str | None:
    """Why `project` cannot put its generated items into its linked `nli_relabel` project,
    naming that project (for its supervisors, never for authors), or None when the link
    holds: no link set, or one that does not hold (the target is missing, of another kind,
    or no longer supervised by whoever made the link: `relabel_link_holds`)."""
    from annotation.models import Project

    from .links import relabel_link_holds

    slug = settings.get("relabel_project") or ""
    if not slug:
        return "this authoring project has no linked relabel project (settings.relabel_project); set one"
    target = Project.objects.filter(slug=slug).first()
    if target is None or not relabel_link_holds(project, target):
        return (
            f"the linked relabel project {slug!r} does not take this project's items: it must be an nli_relabel project "
            "supervised by whoever linked it"
        )
    return None


def linked_relabel_project(project, settings: dict):
    """The `nli_relabel` project that receives `project`'s generated items, or Conflict
    (409) when `relabel_link_problem` finds one. Checked at every submit, so that a link
    stops working as soon as the target's supervisors revoke it. The refusal names no
    project: the author may not be a member of the target; the supervisors read the reason
    on the project's page."""
    from annotation.models import Project

    if relabel_link_problem(project, settings) is not None:
        raise Conflict(
            gettext("this project is not accepting new pairs at the moment; its supervisors have been told why"),
            field="relabel_project",
        )
    return Project.objects.get(slug=settings["relabel_project"])
