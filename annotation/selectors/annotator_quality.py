"""Reads behind the annotator-quality figures and the adjudication queue (failed k-of-n
rounds, methods that disagree, reversed-pair probes answered incoherently as in the
coherence paper §3): `GET /api/projects/{slug}/annotators/`, `GET .../adjudication/`,
the quality and adjudication pages and the project page. A bounded number of queries each,
whatever the number of items or annotators.

Words as used here, for a kind with `labels` (a closed label set):
- an item's **votes** are the labels cast in its current round (coherence probes are not
  items of the dataset and are left out);
- its **consensus** is the adjudicator's label if it was adjudicated, else its decided gold
  (`Item.gold_label`: k-of-n for nli_relabel, the majority for phrase pairs), else the
  plurality of its votes when one label leads (none on a tie or with fewer than two votes);
- its **gold** is the adjudicator's label, else the imported label where the kind says that
  label is gold (`Kind.reference_label_is_gold`: label_test's hidden gold, PhrasIS's
  experts' label), else none."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery, Sum
from django.db.models.fields.json import KT

from annotation.kinds.registry import get_kind
from annotation.metrics.annotator_quality import suggestion_figures
from annotation.metrics.figures import adjudication_agreement, annotator_figures, annotators_figures
from annotation.models import (
    Adjudication,
    AdjudicationReason,
    Annotation,
    AnnotatorCompetence,
    ConsensusOutcome,
    Item,
    ItemAggregate,
    ItemRevision,
    Membership,
    QueueCount,
    QueueSighting,
    Review,
)
from annotation.selectors.figures import project_figure_sums
from annotation.selectors.items import beyond
from annotation.selectors.names import shown_name
from annotation.sql import column_in

COMPETENCE_METHODS = ("dawid_skene", "mace")
GRADE_POINTS = {"rejected": 0, "verified": 1, "good": 2, "gold": 3}  # HeQ §3.3's order
REASONS = ("failed", "methods_disagree", "incoherent_probe")


def _competences(project) -> dict[int, dict[str, float | None]]:
    found: dict[int, dict[str, float | None]] = defaultdict(lambda: dict.fromkeys(COMPETENCE_METHODS))
    for annotator_id, method, competence in AnnotatorCompetence.objects.filter(
        project=project, method__in=COMPETENCE_METHODS
    ).values_list("annotator_id", "method", "competence"):
        found[annotator_id][method] = competence
    return found


def _review_grades(project) -> dict[int, dict]:
    """{annotator: {"reviewed", "mean", "counts": {grade: n}}} from the reviews of their
    annotations (HeQ's grades of question authors; one grade per whole annotation in other
    kinds). `mean` on 0 (rejected) … 3 (gold)."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for annotator_id, grade, n in (
        Review.objects.filter(annotation__item__project=project)
        .order_by()
        .values_list("annotation__annotator_id", "grade")
        .annotate(n=Count("pk"))
    ):
        counts[annotator_id][grade] += n
    out = {}
    for annotator_id, counter in counts.items():
        reviewed = sum(counter.values())
        out[annotator_id] = {
            "reviewed": reviewed,
            "mean": sum(GRADE_POINTS[g] * n for g, n in counter.items() if g in GRADE_POINTS) / reviewed,
            "counts": {grade: counter.get(grade, 0) for grade in GRADE_POINTS},
        }
    return out


def _suggestions(project) -> dict[int, dict]:
    """{annotator: metrics.annotator_quality.suggestion_figures} over their annotations that
    were shown a model's suggestion (probes left out), the consensus being the item's decided
    gold (the ledger's: the round's rule, a pool method or an adjudicator). One query."""
    rows: dict[int, list] = defaultdict(list)
    for annotator_id, label, suggested, gold in (
        Annotation.objects.filter(item__project=project, suggested_label__isnull=False, item__probe_of__isnull=True)
        .order_by()
        .values_list("annotator_id", KT("value__label"), "suggested_label", "item__gold_label")
    ):
        rows[annotator_id].append((label, suggested, gold or ""))
    return {annotator_id: suggestion_figures(found) for annotator_id, found in rows.items()}


def annotator_figures_compute(project, kind) -> dict[int, dict]:
    """{annotator id: figures} for everyone who submitted or voted here
    (annotation.metrics.figures.annotator_figures), from the sums over every item: reads
    every submitted claim and current-round vote of the project, so it runs per request
    only on small projects; a large one's are kept up to date on the worker
    (services.figures) from the same sums."""
    return annotators_figures(project_figure_sums(project, kind), kind.annotator_coherence(project), kind.labels)


def annotator_quality_for_project(project) -> list[dict]:
    """Per annotator (members in the annotator role, and anyone else who annotated here),
    sorted by username:

    - `items`: annotations on items of the dataset (probes left out), every round;
    - `seconds_median`: median seconds from claim to submit over those;
    - `agreement_with_consensus` / `kappa`: share of their current-round labels equal to the
      consensus and Cohen's kappa against it (scikit-learn), over items with a consensus;
      `agreement_without_adjudicated`: the share over the items nobody adjudicated;
    - `agreement_with_gold`: the share over items with a gold (null without any);
    - `competence`: {"dawid_skene", "mace"} as last computed (null when not computed);
    - `coherence`: {"probes", "soft", "hard"} for kinds with reversed-pair probes, else null;
    - `review_grades`: {"reviewed", "mean", "counts"} or null when nothing was graded;
    - `suggestions`: {"shown", "taken", "acceptance_rate", "suggestion_wrong",
      "agreement_when_wrong"} over their annotations shown a model's suggestion (anchoring;
      metrics.annotator_quality.suggestion_figures), null when none was shown;
    - `flagged`: kappa below the project's `quality_flag_below`.
    Besides: `status`, `trusted`, `adjudicator` of their membership (null for non-members).
    The figures that need every vote are computed per request on a small project and read
    as the worker stored them on a large one (services.figures). On a large project seven
    queries or fewer, whatever the number of items, votes or annotators; a small one
    (fewer items than MASHOV_FIGURES_LIVE_ITEMS, one chunk) adds the nine of its items' read."""
    from annotation.selectors.figures import ANNOTATOR_QUALITY, figures_are_live, stored_figures

    kind = get_kind(project.kind)
    settings = kind.project_settings(project)
    threshold = settings["quality_flag_below"]
    memberships = {m.user_id: m for m in Membership.objects.filter(project=project).select_related("user").order_by()}
    if figures_are_live(project):
        figures = annotator_figures_compute(project, kind)
    else:
        figures = {
            int(annotator_id): row for annotator_id, row in (stored_figures(project, ANNOTATOR_QUALITY) or {}).items()
        }
    annotators = {m.user_id for m in memberships.values() if m.role == Membership.Role.ANNOTATOR} | set(figures)
    competences = _competences(project)
    grades = _review_grades(project)
    suggestions = _suggestions(project)
    annotators |= set(suggestions)
    names = {m.user_id: m.user.get_username() for m in memberships.values()}
    missing = annotators - set(names)
    if missing:
        names.update(get_user_model().objects.filter(pk__in=missing).values_list("pk", "username"))
    nothing = annotator_figures({}, {}, None, kind.labels)
    rows = []
    for annotator_id in annotators:
        membership = memberships.get(annotator_id)
        found = figures.get(annotator_id, nothing)
        competence = competences.get(annotator_id)
        rows.append(
            {
                "annotator": names.get(annotator_id, str(annotator_id)),
                **{key: value for key, value in found.items() if key != "coherence"},
                "competence": dict(competence) if competence else dict.fromkeys(COMPETENCE_METHODS),
                "coherence": found["coherence"],
                "review_grades": grades.get(annotator_id),
                "suggestions": suggestions.get(annotator_id),
                "flagged": found["kappa"] is not None and found["kappa"] < threshold,
                "status": membership.status if membership else None,
                "trusted": membership.trusted if membership else None,
                "adjudicator": membership.adjudicator if membership else None,
            }
        )
    return sorted(rows, key=lambda row: row["annotator"])


# --- the adjudication queue ------------------------------------------------------------------


def queue_reasons_compute(project, kind) -> dict[int, list[str]]:
    """{item id: why it waits}, adjudicated items included. Three queries and the kind's
    probe read; reads every aggregate of the project, so it runs per request only on small
    projects and else on the worker (services.figures)."""
    reasons: dict[int, list[str]] = defaultdict(list)
    withdrawn = set(
        ItemRevision.objects.filter(
            item__project=project, action=ItemRevision.Action.WITHDRAWN, failed_round=F("item__round")
        ).values_list("item_id", flat=True)
    )
    for item_id in ConsensusOutcome.objects.filter(
        item__project=project, round=F("item__round"), outcome=ConsensusOutcome.Outcome.FAILED
    ).values_list("item_id", flat=True):
        if item_id not in withdrawn:  # an author who withdrew the pair removed it on purpose
            reasons[item_id].append("failed")
    decided: dict[int, set[str]] = defaultdict(set)
    for item_id, label in (
        ItemAggregate.objects.filter(item__project=project, round=F("item__round"))
        .exclude(label="")
        .values_list("item_id", "label")
    ):
        decided[item_id].add(label)
    for item_id, labels in decided.items():
        if len(labels) > 1:
            reasons[item_id].append("methods_disagree")
    for item_id in sorted({original for original, *_rest in kind.incoherent_probes(project)}):
        reasons[item_id].append("incoherent_probe")
    return dict(reasons)


def _queue_reasons(project, kind) -> dict[int, list[str]]:
    """{item id: why it waits}, over items nobody adjudicated: computed on a small project,
    as the worker stored them on a large one. Two queries and, on a small project, the
    kind's probe read."""
    from annotation.selectors.figures import figures_are_live

    if figures_are_live(project):
        reasons = queue_reasons_compute(project, kind)
    else:
        reasons = dict(AdjudicationReason.objects.filter(project=project).values_list("item_id", "reasons"))
    adjudicated = set(
        Adjudication.objects.filter(item__project=project, round=F("item__round")).values_list("item_id", flat=True)
    )
    return {item_id: why for item_id, why in reasons.items() if item_id not in adjudicated}


def adjudication_reasons_for_item(item) -> list[str]:
    """Why `item` is in its project's queue ([] if it is not)."""
    from annotation.selectors.figures import figures_are_live

    kind = get_kind(item.project.kind)
    if not kind.labels:
        return []
    if figures_are_live(item.project):
        return _queue_reasons(item.project, kind).get(item.pk, [])
    # A large project: the one item's stored row, not every waiting item's (70,000 of a
    # million read per decision).
    if Adjudication.objects.filter(item_id=item.pk, round=item.round).exists():
        return []
    stored = AdjudicationReason.objects.filter(project=item.project, item_id=item.pk)
    return stored.values_list("reasons", flat=True).first() or []


def queue_count_for_adjudicator(project, user) -> int:
    """How many items of a large project's queue `user`, an adjudicator who does not
    supervise, may decide (PostgreSQL): the waiting stored reasons less those they voted on,
    as PostgreSQL keeps them (QueueCount)."""
    counts = QueueCount.objects.filter(project_id=project.pk, annotator_id__in=(0, user.pk)).aggregate(
        waiting=Sum("items", filter=Q(annotator_id=0), default=0),
        voted=Sum("items", filter=Q(annotator_id=user.pk), default=0),
    )
    return counts["waiting"] - counts["voted"]


class LazyIds(Sequence):
    """Ids of a query ordered by (position, id), read by the slice asked for, and its length
    counted by `count`. `edges`, the (position, id) of the same items read from a smaller
    index, gives a slice that does not start at the first item its start: the slice is then
    read by keyset after the item before it (the items an OFFSET would give); `key` names the
    query's column of the item's id."""

    def __init__(self, query, count, edges=None, key="id"):
        self._query, self._count, self._edges, self._key, self._len = query, count, edges, key, None

    def __len__(self) -> int:
        if self._len is None:
            self._len = self._count()
        return self._len

    def __getitem__(self, index):
        if not isinstance(index, slice):
            return self._query[index]
        start = index.start or 0
        if not start or self._edges is None or index.step is not None or start < 0:
            return list(self._query[index])
        edge = list(self._edges[start - 1 : start])
        if not edge:
            return []
        position, pk = edge[0]
        following = self._query.filter(beyond(position, pk, after=True, key=self._key))
        return list(following if index.stop is None else following[: max(0, index.stop - start)])


class QueuePage(Sequence):
    """The queue's items in source order, built only for the slice asked for (a page):
    len() without reading any item's votes. Django's and DRF's paginators take it."""

    def __init__(self, ids: Sequence[int], build):
        self.ids, self._build = ids, build

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._build(self.ids[index])
        return self._build([self.ids[index]])[0]


def adjudication_queue_for_project(project, user, *, names: bool) -> Sequence[dict]:
    """The items waiting for an adjudicator, in source order, each with its votes of the
    current round (who — usernames when `names`, else the export's pseudonyms — the label
    and that annotator's competences), the methods' labels, and for an incoherent probe
    the annotator's two labels. `names` is given to supervisors (and admins) only. A
    QueuePage: the details are read for the page shown only, in six queries.

    An adjudicator who does not supervise sees only items that can no longer be served
    to them: closed rounds, never an open item, and not the items they voted on (nobody
    decides over their own vote); never a hidden gold (label_test's reference label). What
    such an adjudicator is shown is remembered (QueueSighting) as each page is built, so
    that the assignment engine never serves it to them in a later round either."""
    from annotation.selectors.figures import figures_are_live

    kind = get_kind(project.kind)
    if not kind.labels:
        return []
    reasons: dict[int, list[str]] | None = None
    if figures_are_live(project):
        reasons = _queue_reasons(project, kind)
        if not reasons:
            return []
        candidates = Item.objects.filter(column_in(Item, "id", list(reasons)), project=project)
    else:
        # A large project: the items with a stored reason, not adjudicated in their round,
        # their reasons read for the page shown only (reading every waiting item's reasons
        # and then their positions took 2–4 s per request for the 70,000 waiting in a million).
        stored = AdjudicationReason.objects.filter(project=project)
        adjudicated = Adjudication.objects.filter(item=OuterRef("pk"), round=OuterRef("round"))
        candidates = Item.objects.filter(project=project).exclude(Exists(adjudicated))
    if not names:
        mine = Annotation.objects.filter(item=OuterRef("pk"), round=OuterRef("round"), annotator=user)
        candidates = candidates.exclude(status=Item.Status.OPEN).exclude(Exists(mine))
    ids: Sequence[int]
    if reasons is None and not names and connection.vendor == "postgresql":
        # An adjudicator who does not supervise, on PostgreSQL: the stored reasons' rows
        # keep whether their item waits and who voted in its round, so the page and a page
        # number's skip read those rows alone along their order index, and the count is the
        # kept one (QueueCount: two index reads, where probing each waiting item for its
        # status, an adjudication and their vote read 70,000 items of a million).
        theirs = stored.filter(waiting=True).exclude(voters__contains=[user.pk]).order_by("position", "item_id")
        ids = LazyIds(
            theirs.values_list("item_id", flat=True),
            lambda: queue_count_for_adjudicator(project, user),
            theirs.values_list("position", "item_id"),
            key="item_id",
        )
    elif reasons is None:
        waiting = candidates.filter(Exists(stored.filter(item_id=OuterRef("pk"))))
        # The same items as reasons' rows. A supervisor's: not adjudicated, probed by the
        # item's key in the adjudications (the item's row read only where one exists). An
        # adjudicator's who does not supervise, on SQLite (where the rows' state is not
        # kept): each row's item probed for its status, an adjudication and their vote (testing the open items and their votes as sets
        # instead reads the adjudicator's 100,000 votes of a million items: twice as slow).
        if names:
            item_round = Subquery(Item.objects.filter(pk=OuterRef(OuterRef("item_id"))).order_by().values("round")[:1])
            rows = stored.exclude(Exists(Adjudication.objects.filter(item_id=OuterRef("item_id"), round=item_round)))
        else:
            rows = stored.filter(Exists(candidates.filter(pk=OuterRef("item_id"))))

        # The page is read alone, in source order along the position index, each item
        # probed for a reason and an adjudication (1 ms for the first page of a million
        # items), and counted from the reasons' rows without reading the other items. A
        # page past the first skips along the reasons' own order index, each row probed
        # for its item (the 20,000 waiting before page 1,000, not the 285,000 items).
        def count() -> int:
            done = Adjudication.objects.filter(
                item__project=project, round=F("item__round"), item_id__in=stored.values("item_id")
            )
            if names:
                return stored.count() - done.count()
            # An adjudicator who does not supervise: the rows whose item they may decide (the
            # 70,000 rows of a million items probed, not the items: it grows with the queue).
            return rows.count()

        ids = LazyIds(
            waiting.order_by("position", "id").values_list("pk", flat=True),
            count,
            rows.order_by("position", "item_id").values_list("position", "item_id"),
        )
    else:
        ids = list(candidates.order_by("position", "id").values_list("pk", flat=True))
    hidden_gold = kind.reference_label_is_gold and not names

    def build(page_ids: list[int]) -> list[dict]:
        if not page_ids:
            return []
        if not names:
            # Recorded as the page is shown, before its votes are returned.
            QueueSighting.objects.bulk_create(
                [QueueSighting(item_id=item_id, user=user) for item_id in page_ids], ignore_conflicts=True
            )
        why = (
            reasons
            if reasons is not None
            else dict(
                AdjudicationReason.objects.filter(
                    column_in(AdjudicationReason, "item_id", page_ids), project=project
                ).values_list("item_id", "reasons")
            )
        )
        votes: dict[int, list[tuple[int, str | None]]] = defaultdict(list)
        for item_id, annotator_id, label in (
            Annotation.objects.filter(item_id__in=page_ids, round=F("item__round"))
            .annotate(label=KT("value__label"))
            .order_by("id")
            .values_list("item_id", "annotator_id", "label")
        ):
            votes[item_id].append((annotator_id, label))
        aggregates: dict[int, dict] = defaultdict(dict)
        for item_id, method, label, confidence in ItemAggregate.objects.filter(
            item_id__in=page_ids, round=F("item__round")
        ).values_list("item_id", "method", "label", "confidence"):
            aggregates[item_id][method] = {"label": label or None, "confidence": confidence}
        probes: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
        if any("incoherent_probe" in why[item_id] for item_id in page_ids):
            for original, annotator_id, label, reversed_label in kind.incoherent_probes(project):
                probes[original].append((annotator_id, label, reversed_label))
        competences = _competences(project)
        people = {a for cast in votes.values() for a, _ in cast} | {a for rows in probes.values() for a, *_ in rows}
        usernames = dict(get_user_model().objects.filter(pk__in=people).values_list("pk", "username")) if names else {}

        def who(annotator_id: int) -> str:
            return shown_name(project.pk, annotator_id, usernames.get(annotator_id, str(annotator_id)), names=names)

        out = []
        for item in Item.objects.filter(pk__in=page_ids).order_by("position", "id"):
            out.append(
                {
                    "id": item.pk,
                    "external_id": item.external_id,
                    "payload": kind.annotator_payload(item),
                    "status": item.status,
                    "round": item.round,
                    "reference_label": None if hidden_gold else (item.reference_label or None),
                    "gold": item.gold_label or None,
                    "reasons": why[item.pk],
                    "votes": [
                        {
                            "annotator": who(annotator_id),
                            "label": label,
                            "competence": dict(competences[annotator_id])
                            if annotator_id in competences
                            else dict.fromkeys(COMPETENCE_METHODS),
                        }
                        for annotator_id, label in votes.get(item.pk, ())
                    ],
                    "aggregates": aggregates.get(item.pk, {}),
                    "incoherent": [
                        {"annotator": who(a), "label": label, "reversed_label": rev}
                        for a, label, rev in probes.get(item.pk, ())
                    ],
                }
            )
        return out

    return QueuePage(ids, build)


def agreement_with_and_without_adjudicated(project) -> dict:
    """Agreement over the project's votes, with the adjudicated items and without them:
    nominal Krippendorff's alpha (annotation.metrics.agreement) and the share of votes equal
    to their item's consensus (the adjudicated label for adjudicated items). Computed per
    request on a small project, as the worker stored it on a large one (services.figures)."""
    from annotation.selectors.figures import ADJUDICATION_AGREEMENT, figures_are_live, stored_figures

    kind = get_kind(project.kind)
    if kind.labels and not figures_are_live(project):
        return stored_figures(project, ADJUDICATION_AGREEMENT) or {
            "adjudicated": 0,
            "with_adjudicated": None,
            "without_adjudicated": None,
        }
    return adjudication_agreement_compute(project, kind)


def adjudication_agreement_compute(project, kind) -> dict:
    """`agreement_with_and_without_adjudicated` from every current-round vote (the sums
    over every item, as the worker keeps them for a large project)."""
    if not kind.labels:
        return {"adjudicated": 0, "with_adjudicated": None, "without_adjudicated": None}
    return adjudication_agreement(project_figure_sums(project, kind), kind.labels)
