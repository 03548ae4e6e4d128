"""Reads behind the supervisor console's item browser and the annotator preview.

Filters come from allow-lists (docs/security.md "Scoping"): statuses from Item.Status, splits, groups and
flags from the values the project holds, annotators from its members; anything else is a
400 naming the parameter."""

import json
from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, TextField
from django.db.models.functions import Cast
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import InvalidInput
from annotation.models import Annotation, ConsensusOutcome, Item, ItemRevision, Membership, Project, Review
from annotation.selectors.names import shown_name
from annotation.selectors.reports import item_counts_for_project

MAX_SEARCH = 200


def beyond(position: int, pk: int, *, after: bool, key: str = "id") -> Q:
    """The items after (or before) the item at (position, pk) in (position, id) order (`key`:
    the column holding the item's id, for rows that are not the items'). The
    bound on the position alone is what makes this an index range: PostgreSQL reads
    `position > p OR (position = p AND id > i)` by scanning the project's index from its
    start and filtering (0.6 s half way through a million items), the same condition
    beside `position >= p` from p on."""
    if after:
        return Q(position__gte=position) & (Q(position__gt=position) | Q(position=position, **{f"{key}__gt": pk}))
    return Q(position__lte=position) & (Q(position__lt=position) | Q(position=position, **{f"{key}__lt": pk}))


def item_preview_after(project: Project, after) -> Item | None:
    """The item an annotator-eyed preview shows after the item `after` (an id, or None for
    the first): the next of the project's items in file order, wrapping round; probes and
    items outside the sample are never previewed. Reads only."""
    items = Item.objects.filter(project=project, probe_of__isnull=True, in_sample=True).order_by("position", "id")
    if after in (None, ""):
        return items.first()
    try:
        after_id = int(after)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("must be an item id"), field="after") from None
    current = items.filter(pk=after_id).values_list("position", "id").first()
    if current is None:
        return items.first()
    position, pk = current
    following = items.filter(beyond(position, pk, after=True)).first()
    return following or items.first()


def annotator_label(project: Project, user, *, names: bool) -> str:
    """How a person appears on the console: the username to supervisors (`names`), else the
    pseudonym the project's exports give them."""
    if user is None:
        return ""
    return shown_name(project.pk, user.pk, user.username, names=names)


@dataclass(frozen=True)
class BrowserChoices:
    """The allow-lists of the browser's filters for one project. `stored`: the splits,
    groups, rounds and flags are as the worker last stored them (a large project), so a
    value the project took since is checked against its items instead."""

    statuses: list
    splits: list
    groups: list
    rounds: list
    flags: list
    annotators: dict  # label shown → user id
    stored: bool = False


# The groups the item browser's filter offers: the first, in code-point order.
GROUPS_OFFERED = 500


def item_values_compute(project: Project) -> dict:
    """The splits, groups (the first GROUPS_OFFERED), rounds and flags the project's items
    hold. Four scans of its items: per request on a small project; a large one reads what
    the worker keeps item by item (services.figures)."""
    items = Item.objects.filter(project=project).order_by()
    flags = sorted(
        {
            flag
            for flags in items.exclude(flags=[]).values_list("flags", flat=True)
            if isinstance(flags, list)
            for flag in flags
            if isinstance(flag, str)
        }
    )
    return {
        "splits": sorted(s for s in items.values_list("split", flat=True).distinct() if s),
        "groups": sorted(g for g in items.values_list("group", flat=True).distinct() if g)[:GROUPS_OFFERED],
        "rounds": sorted(items.values_list("round", flat=True).distinct()),
        "flags": flags,
    }


def browser_choices_for_project(project: Project, *, names: bool) -> BrowserChoices:
    from annotation.selectors.figures import ITEM_VALUES, figures_are_live, stored_figures

    live = figures_are_live(project)
    values = item_values_compute(project) if live else (stored_figures(project, ITEM_VALUES) or {})
    members = (
        Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
        .select_related("user")
        .order_by("user__username")
    )
    annotators = {annotator_label(project, m.user, names=names): m.user_id for m in members}
    return BrowserChoices(
        statuses=list(Item.Status.choices),
        splits=values.get("splits", []),
        groups=values.get("groups", []),
        rounds=values.get("rounds", []),
        flags=values.get("flags", []),
        annotators=dict(sorted(annotators.items())),
        stored=not live,
    )


def items_for_browser(project: Project, params, choices: BrowserChoices):
    """The project's items matching the query `params` (status, split, round, group, flag,
    annotator, q), in file order. Each filter value must be one of `choices`."""
    items = Item.objects.filter(project=project).order_by("position", "id")

    def chosen(name: str, allowed, held=None) -> str | None:
        value = params.get(name) or None
        if value is not None and value not in allowed and not (choices.stored and held is not None and held(value)):
            raise InvalidInput(gettext("is not one of this project's values"), field=name)
        return value

    def held(**lookup):
        return lambda value: Item.objects.filter(
            project=project, **{key: cast(value) for key, cast in lookup.items()}
        ).exists()

    def round_held(value: str) -> bool:
        return value.isdigit() and int(value) < 2**15 and held(round=int)(value)

    if status := chosen("status", {value for value, _label in choices.statuses}):
        items = items.filter(status=status)
    if split := chosen("split", set(choices.splits), held(split=str)):
        items = items.filter(split=split)
    if group := chosen("group", set(choices.groups), held(group=str)):
        items = items.filter(group=group)
    if round_ := chosen("round", {str(r) for r in choices.rounds}, round_held):
        items = items.filter(round=int(round_))
    if flag := chosen("flag", set(choices.flags), held(flags__contains=lambda flag: [flag])):
        # JSON text of the list holds the flag in quotes on PostgreSQL and on SQLite alike.
        items = items.annotate(flags_text=Cast("flags", TextField())).filter(flags_text__contains=json.dumps(flag))
    if annotator := chosen("annotator", set(choices.annotators)):
        done = Annotation.objects.filter(item=OuterRef("pk"), annotator_id=choices.annotators[annotator])
        items = items.filter(Exists(done))
    query = params.get("q") or ""
    if query:
        if len(query) > MAX_SEARCH:
            raise InvalidInput(gettext("is longer than %(n)s characters") % {"n": MAX_SEARCH}, field="q")
        if "\x00" in query:
            raise InvalidInput(gettext("contains a NUL character"), field="q")
        # The payload's JSON text holds the text as stored, or \u-escaped where the database
        # keeps the encoder's ASCII form (SQLite): search for both spellings.
        spellings = {query, json.dumps(query)[1:-1], json.dumps(query, ensure_ascii=False)[1:-1]}
        text = Q(external_id__icontains=query)
        for spelling in spellings:
            text |= Q(payload_text__icontains=spelling)
        items = items.annotate(payload_text=Cast("payload", TextField())).filter(text)
    return items


PAGE_PARAMETERS = ("page", "after", "before")


@dataclass
class BrowserPage:
    """One page of the item browser: its items, its number, how many items match, and the
    queries of the links to the pages before and after it ("" where there is none)."""

    items: list
    number: int
    count: int
    size: int
    previous_query: str = ""
    next_query: str = ""

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def num_pages(self) -> int:
        return max(1, -(-self.count // self.size))


def _cursor(query, name: str) -> tuple[int, int] | None:
    """`after` / `before`: "<position>.<id>" of the item the page follows or precedes."""
    value = query.get(name) or ""
    if not value:
        return None
    position, dot, pk = value.partition(".")
    if not (dot and position.isdigit() and pk.isdigit()):
        raise InvalidInput(gettext("must be <position>.<id> of an item"), field=name)
    return int(position), int(pk)


def browser_count(project: Project, params) -> int | None:
    """How many items the browser's query `params` matches, when the project's kept counts
    hold it (no filter, or the status alone; probes are items of the browser): one query
    over a few rows instead of a count over the project's items (0.15–0.3 s of every page
    of a million items). None: the filters need the items counted."""
    if any(params.get(name) for name in params if name != "status"):
        return None
    status = params.get("status") or None
    return sum(n for (held, _probe), n in item_counts_for_project(project).items() if status in (None, held))


def _numbered_page(items, number: int, size: int) -> list:
    """Page `number` of `items` (ordered by position, id) when typed without a cursor. The
    skip reads only the (position, id) of the items before the page, which the source order
    index holds (project, position, id): unfiltered, an index-only range instead of the
    skipped items' rows (0.91 s for page 10,000 of a million items); the page itself is then
    read by keyset from the last item skipped. The same items as an OFFSET of the rows.
    Positions cannot be counted instead: they repeat across files and leave gaps."""
    if number == 1:
        return list(items[:size])
    edge = list(items.values_list("position", "id")[(number - 1) * size - 1 : (number - 1) * size])
    if not edge:
        return []
    position, pk = edge[0]
    return list(items.filter(beyond(position, pk, after=True))[:size])


def browser_page(items, query, size: int, count: int | None = None) -> BrowserPage:
    """The page of `items` (ordered by position, id) that `query` asks for: the page after
    the item named by `after`, or before the one named by `before` — keyset pagination,
    an index range read whatever the depth — else page number `page` (counted from the
    start: links the browser gives carry a cursor; a typed number skips along the index,
    `_numbered_page`). `page` beside a cursor is the number shown. Two queries: the count
    (unless `count` is given) and the page (a typed number past the first: three)."""
    number_text = query.get("page") or "1"
    if not str(number_text).isdigit():
        raise InvalidInput(gettext("must be a page number"), field="page")
    number = max(1, int(number_text))
    after, before = _cursor(query, "after"), _cursor(query, "before")
    if count is None:
        count = items.count()
    if after is not None:
        position, pk = after
        rows = list(items.filter(beyond(position, pk, after=True))[: size + 1])
        more_after, more_before = len(rows) > size, True
        rows = rows[:size]
    elif before is not None:
        position, pk = before
        rows = list(items.filter(beyond(position, pk, after=False)).order_by("-position", "-id")[: size + 1])
        more_before, more_after = len(rows) > size, True
        rows = rows[:size][::-1]
        if not more_before:
            number = 1
    else:
        number = min(number, max(1, -(-count // size)))
        rows = _numbered_page(items, number, size)
        more_before, more_after = number > 1, number * size < count
    page = BrowserPage(items=rows, number=number, count=count, size=size)
    if rows and more_before and number > 1:
        page.previous_query = f"page={number - 1}&before={rows[0].position}.{rows[0].pk}"
    if rows and more_after:
        page.next_query = f"page={number + 1}&after={rows[-1].position}.{rows[-1].pk}"
    return page


def value_leaves(value, prefix: str = "") -> list[tuple[str, str]]:
    """A stored JSON value as (dotted path, text) rows, strings exactly as stored (a JSON
    dump would escape their quotes and backslashes), other scalars as JSON.

    >>> value_leaves({"questions": [{"question": 'a "q"', "answerable": True}]})
    [('questions.0.question', 'a "q"'), ('questions.0.answerable', 'true')]
    """
    if isinstance(value, dict):
        if not value:
            return [(prefix, "{}")]
        return [
            leaf
            for key, item in value.items()
            for leaf in value_leaves(item, f"{prefix}.{key}" if prefix else str(key))
        ]
    if isinstance(value, list):
        if not value:
            return [(prefix, "[]")]
        return [
            leaf
            for index, item in enumerate(value)
            for leaf in value_leaves(item, f"{prefix}.{index}" if prefix else str(index))
        ]
    return [(prefix, value if isinstance(value, str) else json.dumps(value))]


@dataclass
class ItemHistory:
    """Everything the item page shows beside the item."""

    rounds: list = field(default_factory=list)  # per round: {"round", "annotations", "votes", "outcome"}
    revisions: list = field(default_factory=list)
    agreement: float | None = None
    agreement_source: str = ""
    current_votes: dict = field(default_factory=dict)
    annotator_count: int = 0
    label_count: int = 0  # annotations of the current round that carry a label


def item_history(item: Item, *, names: bool) -> ItemHistory:
    """Annotations of every round with their reviews, labels cast per round, consensus
    outcomes and revisions of `item`; people as `annotator_label` shows them. A bounded
    number of queries whatever the number of annotations."""
    project = item.project
    annotations = list(
        Annotation.objects.filter(item=item).select_related("annotator").order_by("round", "created_at", "id")
    )
    reviews: dict[int, list] = {}
    for review in Review.objects.filter(annotation__item=item).select_related("reviewer").order_by("created_at", "id"):
        reviews.setdefault(review.annotation_id, []).append(
            {"grade": review.grade, "question": review.question, "comment": review.comment,
             "reviewer": annotator_label(project, review.reviewer, names=names) if review.reviewer else "", "at": review.created_at}
        )  # fmt: skip
    outcomes = {o.round: o for o in ConsensusOutcome.objects.filter(item=item)}
    history = ItemHistory()
    for round_ in sorted({a.round for a in annotations} | set(outcomes) | {item.round}):
        in_round = [a for a in annotations if a.round == round_]
        votes = Counter(
            a.value["label"] for a in in_round if isinstance(a.value, dict) and isinstance(a.value.get("label"), str)
        )
        history.rounds.append({
            "round": round_,
            "annotations": [
                {"id": a.pk, "annotator": annotator_label(project, a.annotator, names=names), "value": value_leaves(a.value),
                 "at": a.created_at, "reviews": reviews.get(a.pk, [])}
                for a in in_round
            ],
            "votes": dict(votes.most_common()),
            "outcome": outcomes.get(round_),
        })  # fmt: skip
    current = next(r for r in history.rounds if r["round"] == item.round)
    history.current_votes = current["votes"]
    history.annotator_count = len(current["annotations"])
    history.label_count = sum(history.current_votes.values())
    if current["outcome"] is not None:
        history.agreement, history.agreement_source = current["outcome"].agreement, "consensus"
    elif history.label_count >= 2:
        # Share of the round's labels that agree with its most frequent label.
        history.agreement, history.agreement_source = (
            max(history.current_votes.values()) / sum(history.current_votes.values()),
            "majority",
        )
    history.revisions = [
        {"round": r.failed_round, "action": REVISION_ACTIONS.get(r.action, r.action),
         "by": annotator_label(project, r.created_by, names=names) if r.created_by else "",
         **_revision_change(r), "reason": r.reason, "at": r.created_at}
        for r in ItemRevision.objects.filter(item=item).select_related("created_by").order_by("id")
    ]  # fmt: skip
    return history


# What each kind of revision is called on the item page (ItemRevision.Action).
REVISION_ACTIONS = {
    "revised": _("revised by its author"),
    "withdrawn": _("withdrawn by its author"),
    "edited": _("text edited by a supervisor"),
    "answer_corrected": _("answer span corrected"),
}


def _revision_change(revision) -> dict:
    """What stood before and what came after, as leaves: the fields an edit changed, the
    spans a correction swapped, or (an author's revision) the whole payload before."""
    details = revision.details or {}
    if revision.action == "answer_corrected":
        old, new = details.get("old") or {}, details.get("new") or {}
        return {
            "previous": value_leaves({"answer": old.get("text")}),
            "after": value_leaves({"answer": new.get("text")}),
        }
    if revision.action == "edited":
        return {
            "previous": value_leaves(details.get("before") or {}),
            "after": value_leaves(details.get("after") or {}),
        }
    return {"previous": value_leaves(revision.previous_payload), "after": []}


# How the item page names a decision's method; a kind's own rule shows its code.
METHOD_LABELS = {
    "k_of_n": _("k-of-n rule"),
    "majority": _("majority"),
    "majority_tiebreak_imported": _("majority, the imported label breaking a tie"),
    "imported": _("imported label"),
    "reference": _("the round closed (the gold is the hidden reference)"),
    "dawid_skene": _("Dawid-Skene"),
    "mace": _("MACE"),
    "adjudication": _("adjudication"),
    "import": _("import of final labels"),
    "reopen": _("reopened"),
    "revision": _("revised by its author"),
    "near_duplicate": _("removed as a near-duplicate"),
    "back_translation_filter": _("removed by the back-translation filter"),
    "withdrawn": _("withdrawn by its author"),
    "restore": _("restored"),
}


def item_decisions(item: Item, *, names: bool) -> list[dict]:
    """The item's decision ledger for its page, oldest first, the one in effect marked;
    people by username where `names`, else by the export's pseudonym."""
    from annotation.services.decisions import decision_history, effective_decision

    effective = effective_decision(item)
    statuses = dict(Item.Status.choices)
    return [
        {
            "round": decision.round,
            "method_label": METHOD_LABELS.get(decision.method, decision.method),
            "override": decision.override,
            "effective": effective is not None and decision.pk == effective.pk,
            "value": decision.value if isinstance(decision.value, str) else "",
            "status_label": statuses.get(decision.status, decision.status),
            "confidence": decision.confidence,
            "by": shown_name(item.project_id, decision.decided_by.pk, decision.decided_by.username, names=names)
            if decision.decided_by is not None
            else "",
            "at": decision.created_at,
            "comment": decision.comment,
        }
        for decision in decision_history(item)
    ]
