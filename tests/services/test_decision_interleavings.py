"""Property test of the decision ledger: any interleaving of submits, edits, the consensus
step, aggregation runs, adjudications and reopens on one item keeps the item's gold and
status equal to its round's effective decision (highest rank, latest among equals), and
never changes or removes a decision once written."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.errors import Conflict, InvalidInput, NotFound, PermissionDenied

pytestmark = pytest.mark.django_db

LABELS = ("entailment", "neutral", "contradiction")
ANNOTATORS = ("a1", "a2", "a3")

operations = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), st.sampled_from(ANNOTATORS), st.sampled_from(LABELS)),
        st.tuples(st.just("edit"), st.sampled_from(ANNOTATORS), st.sampled_from(LABELS)),
        st.tuples(st.just("consensus")),
        st.tuples(st.just("aggregate")),
        st.tuples(st.just("adjudicate"), st.sampled_from(LABELS)),
        st.tuples(st.just("reopen")),
    ),
    min_size=1,
    max_size=25,
)

_counter = {"project": 0}


def _world(make_user):
    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    _counter["project"] += 1
    slug = f"leg-{_counter['project']}"
    boss = make_user(f"{slug}-sup")
    people = {"sup": boss}
    return slug, people, boss, Item, Membership, project_create


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(method=st.sampled_from(["k_of_n", "dawid_skene"]), steps=operations)
def test_gold_always_follows_the_effective_decision_and_history_only_grows(make_user, method, steps):
    from annotation.models import Annotation, Decision, Item, Membership
    from annotation.services.adjudication import item_adjudicate
    from annotation.services.aggregation import aggregation_compute_for_project
    from annotation.services.annotator_work import annotation_edit
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.services.consensus import consensus_compute_for_item
    from annotation.services.decisions import DECIDED_STATUSES, round_decided
    from annotation.services.projects import project_create

    _counter["project"] += 1
    slug = f"leg-{_counter['project']}"
    sup = make_user(f"{slug}-sup", staff=True)
    project = project_create(
        actor=sup, slug=slug, name=slug, kind="nli_relabel", language="he",
        settings={"consensus_k": 2, "consensus_n": 3, "aggregation": method, "confidence_target": 0.5},
    )  # fmt: skip
    people = {}
    for name in ANNOTATORS:
        people[name] = make_user(f"{slug}-{name}")
        Membership.objects.create(project=project, user=people[name], role="annotator", status="active")
    item = Item.objects.create(project=project, external_id="x", payload={"premise": "הנחה", "hypothesis": "השערה"})
    seen: dict[int, tuple] = {}

    for step in steps:
        try:
            if step[0] == "submit":
                claim = assignment_next_for_annotator(user=people[step[1]], slug=slug)
                if claim is not None:
                    annotation_submit(user=people[step[1]], assignment_id=claim.pk, value={"label": step[2]})
            elif step[0] == "edit":
                mine = Annotation.objects.filter(item=item, annotator=people[step[1]]).order_by("-id").first()
                if mine is not None:
                    item.refresh_from_db()
                    decided = round_decided(item) or mine.round != item.round
                    try:
                        annotation_edit(user=people[step[1]], annotation_id=mine.pk, value={"label": step[2]})
                        assert not decided, "an edit was taken on a decided round"
                    except Conflict:
                        assert decided, "an edit was refused on an undecided round"
            elif step[0] == "consensus":
                consensus_compute_for_item(item.pk)
            elif step[0] == "aggregate":
                project.refresh_from_db()
                aggregation_compute_for_project(project)
            elif step[0] == "adjudicate":
                item_adjudicate(
                    user=sup, item_id=item.pk, data={"label": step[1], "override": True, "comment": "בדיקה"}
                )
            elif step[0] == "reopen":
                from annotation.services.decisions import item_reopen_by_supervisor

                item_reopen_by_supervisor(user=sup, item=item, reason="בדיקה")
        except (Conflict, InvalidInput, PermissionDenied, NotFound):
            pass  # a refusal is fine; what it must not do is change anything (checked below)

        item.refresh_from_db()
        rows = list(Decision.objects.filter(item=item).order_by("id"))
        # Append-only: every decision seen before is still there, unchanged.
        now = {row.pk: (row.round, row.method, row.rank, row.value, row.status) for row in rows}
        for pk, fields in seen.items():
            assert now.get(pk) == fields, "a decision was changed or removed"
        seen = now
        # Within a round, no decision was recorded below one that stood before it.
        for earlier, later in zip(rows, rows[1:]):
            if earlier.round == later.round:
                assert later.rank >= earlier.rank or later.method == "reopen", (earlier, later)
        current = [row for row in rows if row.round == item.round]
        effective = max(current, key=lambda row: (row.rank, row.pk)) if current else None
        if effective is not None and effective.rank >= 1:
            assert item.gold_label == (effective.value if isinstance(effective.value, str) else "")
            assert item.status == effective.status
        else:
            # Undecided round: no gold, and not in a decided status (unless the pool method
            # is still to decide it).
            assert item.gold_label == ""
            assert item.status not in DECIDED_STATUSES or item.status == "deciding"
