"""One project of every kind, with a member of every role and work in every state, for the
security suite: the route × role matrix plants marker strings in it, the XSS test plants
payloads. Built through the services, as the product builds it.

`text(slug, field)` gives the free text stored in `field` of project `slug`; every stored
free-text field that a page or an endpoint shows goes through it. IDENTIFIER_FIELDS refuse
bidi controls, so `text` must not put them there."""

import json
from dataclasses import dataclass, field

PASSWORD = "browser-pass-123"  # tests/browser/helpers.PASSWORD, so that its login() works

# Callers, relative to the target projects (every project in KIND_SLUGS).
ROLES = (
    "anonymous",
    "outsider",  # signed in, member of nothing
    "trial",  # annotator on trial
    "annotator",  # active annotator
    "disqualified",  # annotator whose membership was set to disqualified
    "reviewer",
    "other_supervisor",  # supervisor of OTHER_SLUG only
    "supervisor",
    "admin",  # staff, member of nothing
    "dq_supervisor",  # supervisor whose membership was set to disqualified
    "dq_reviewer",  # reviewer whose membership was set to disqualified
)
USERNAMES = {
    "outsider": "sec-outsider",
    "trial": "sec-trial",
    "annotator": "sec-ann",
    "disqualified": "sec-dq",
    "reviewer": "sec-rev",
    "other_supervisor": "sec-othersup",
    "supervisor": "sec-sup",
    "admin": "sec-admin",
    "dq_supervisor": "sec-dqsup",
    "dq_reviewer": "sec-dqrev",
}
HELPER = "sec-helper"  # the annotator of OTHER_SLUG
ANNOTATING = ("trial", "annotator", "disqualified")

KIND_SLUGS = {
    "nli_relabel": "sec-nli",
    "label_test": "sec-label",
    "nli_authoring": "sec-author",
    "qa_authoring": "sec-qa",
    "translation_rating": "sec-mt",
    "phrase_pair": "sec-phrase",
    "summary_rating": "sec-sum",
}
OTHER_SLUG = "sec-other"  # an nli_relabel project that only other_supervisor (and its annotator) are in
ITEMS_PER_PROJECT = 6
IDENTIFIER_FIELDS = ("name", "title", "system")  # field names (without the item number) that are identifiers


@dataclass
class World:
    users: dict = field(default_factory=dict)  # role → user
    projects: dict = field(default_factory=dict)  # slug → project
    # slug → role → open assignment id (the claim that role holds now)
    claims: dict = field(default_factory=dict)
    # slug → role → an annotation id of that role
    annotations: dict = field(default_factory=dict)
    feedback: dict = field(default_factory=dict)  # role → feedback id addressed to that role
    jobs: dict = field(default_factory=dict)  # slug → job id started by its supervisor
    revisable: dict = field(default_factory=dict)  # role → item id (in sec-nli) waiting for that author's revision
    other_claim: int | None = None  # an open claim in OTHER_SLUG


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def _rows(kind: str, slug: str, text) -> list[dict]:
    rows = []
    for i in range(ITEMS_PER_PROJECT):
        t = lambda name: text(slug, f"{name}{i}")  # noqa: E731 — one text per field and item
        if kind in ("nli_relabel", "label_test"):
            row = {
                "premise": t("premise"),
                "hypothesis": t("hypothesis"),
                "label": "entailment",
                "extra": {"note": t("extra")},
            }
        elif kind == "nli_authoring":
            row = {"question": t("question"), "choices": [t("choice-a"), t("choice-b")], "answer_index": 0}
        elif kind == "qa_authoring":
            row = {"context": qa_context(t("context")), "title": t("title"), "split": "dev"}
        elif kind == "translation_rating":
            row = {
                "source": {"premise": t("source-premise"), "hypothesis": t("source-hypothesis"), "label": "e"},
                "candidates": [
                    {
                        "system": text(slug, f"system-{n}"),
                        "premise": t(f"premise-{n}"),
                        "hypothesis": t(f"hypothesis-{n}"),
                    }
                    for n in range(2)
                ],
                "split": "dev",
            }
        elif kind == "phrase_pair":
            row = {"left": t("left"), "right": t("right"), "label": "EQUIVALENT", "extra": {"note": t("extra")}}
        elif kind == "summary_rating":
            row = {
                # Mostly Hebrew, as the import's language filter (HeSum §3.1) wants of an article.
                "article": qa_context(t("article")),
                "summaries": [{"system": text(slug, f"system-{n}"), "text": t(f"summary-{n}")} for n in range(2)],
            }
        else:
            raise AssertionError(kind)
        rows.append({"id": f"{slug}-{i}", **row})
    return rows


def qa_context(text: str) -> str:
    """A paragraph of the length qa_authoring accepts, beginning with `text`."""
    filler = " פסקה על נושא כלשהו שנכתבה לבדיקה בלבד."
    context = text
    while len(context) < 600:
        context += filler
    return context


def value_for(kind: str, payload: dict, slug: str, text, who: str) -> dict:
    """A valid annotation value for the item as the annotator sees it."""
    t = lambda name: text(slug, f"{who}-{name}")  # noqa: E731
    if kind in ("nli_relabel", "label_test"):
        return {"label": "neutral"}
    if kind == "phrase_pair":
        return {"label": "EQUIVALENT"}
    if kind == "nli_authoring":
        return {
            "premise": t("premise"),
            "entailment": t("entailment"),
            "contradiction": t("contradiction"),
            "neutral": t("neutral"),
        }
    if kind == "qa_authoring":
        context = payload["context"]
        answer = context[-10:]
        return {
            "questions": [
                {
                    "question": t(f"question{n}"),
                    "answerable": True,
                    "answer": {"start": len(context) - 10, "text": answer},
                }
                for n in range(3)
            ]
        }
    if kind == "translation_rating":
        n = len(payload["candidates"])
        return {
            "ratings": {str(d): {"accuracy": 3, "fluency": 4, "cultural_fit": 5, "label_valid": True} for d in range(n)}
        }
    if kind == "summary_rating":
        return {
            "ratings": {
                str(d): {"coherence": 3, "completeness": 4, "errors": []} for d in range(len(payload["summaries"]))
            }
        }
    raise AssertionError(kind)


def build_world(text) -> World:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.kinds.registry import get_kind
    from annotation.models import AccountInvitation, ConsensusOutcome, Item, Job, Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    User = get_user_model()
    world = World()
    for role, username in USERNAMES.items():
        world.users[role] = User.objects.create_user(username=username, password=PASSWORD, is_staff=role == "admin")
        Token.objects.get_or_create(user=world.users[role])
    helper = User.objects.create_user(username=HELPER, password=PASSWORD)
    # The supervisor created the annotator's account, which has never been used to log in:
    # still the supervisor's invitation, whose password they may set.
    AccountInvitation.objects.create(user=world.users["annotator"], invited_by=world.users["supervisor"])
    admin = world.users["admin"]

    def create(slug, kind, settings=None):
        project = project_create(
            actor=admin,
            slug=slug,
            name=text(slug, "name"),
            kind=kind,
            language="he",
            # The world's claims stand for the whole run, which no page's heartbeat renews:
            # idle release no sooner than the claim's own limit.
            settings={"idle_release_seconds": 30 * 60, **(settings or {})},
            guidelines=text(slug, "guidelines"),
        )
        Membership.objects.filter(project=project, user=admin).delete()  # admin sees it as staff, not as a member
        # The project's own wording of the first label (or scale point) its kind's guide explains.
        guide = get_kind(kind).label_guide(None, project.settings)
        if guide:
            project.label_guide = {guide[0].key: {guide[0].entries[0].value: text(slug, "label-guide")}}
            project.save(update_fields=["label_guide"])
        world.projects[slug] = project
        return project

    # The other project first: nli_authoring's relabel project must exist when it is linked.
    other = create(OTHER_SLUG, "nli_relabel")
    Membership.objects.create(project=other, user=world.users["other_supervisor"], role="supervisor", status="active")
    Membership.objects.create(project=other, user=helper, role="annotator", status="active")
    _import(other, "nli_relabel", text)
    world.other_claim = _claim(helper, OTHER_SLUG).pk
    world.jobs[OTHER_SLUG] = Job.objects.create(
        kind="import", project=other, created_by=world.users["other_supervisor"], params={}
    ).pk

    settings = {
        "qa_authoring": {"validate_splits": ["train", "dev", "test"], "min_questions": 3},
        "nli_authoring": {"relabel_project": KIND_SLUGS["nli_relabel"]},
    }
    for kind, slug in KIND_SLUGS.items():
        project = create(slug, kind, settings.get(kind))
        for role, member_role, status in (
            ("supervisor", "supervisor", "active"),
            ("reviewer", "reviewer", "active"),
            ("annotator", "annotator", "active"),
            ("trial", "annotator", "trial"),
            ("disqualified", "annotator", "active"),
            ("dq_supervisor", "supervisor", "disqualified"),
            ("dq_reviewer", "reviewer", "disqualified"),
        ):
            Membership.objects.create(project=project, user=world.users[role], role=member_role, status=status)
        _import(project, kind, text)
        world.claims[slug], world.annotations[slug] = {}, {}
        for role in ANNOTATING:
            user = world.users[role]
            if role != "disqualified":  # one finished annotation each, then an open claim
                world.annotations[slug][role] = _submit(user, slug, kind, text, role).pk
            world.claims[slug][role] = _claim(user, slug).pk
        Membership.objects.filter(project=project, user=world.users["disqualified"]).update(status="disqualified")
        world.jobs[slug] = Job.objects.create(
            kind="import", project=project, created_by=world.users["supervisor"], params={}
        ).pk

    _review(world, text)
    # Items that failed consensus, waiting for their authors' revision (imported last, so
    # that no claim above holds them).
    nli = world.projects[KIND_SLUGS["nli_relabel"]]
    for role in ("annotator", "disqualified"):
        row = {
            "id": f"{nli.slug}-by-{role}",
            "premise": text(nli.slug, f"revisable-premise-{role}"),
            "hypothesis": text(nli.slug, f"revisable-hypothesis-{role}"),
            "label": "neutral",
            "author": USERNAMES[role],
        }
        items_import(project=nli, data=_jsonl([row]), fmt="jsonl", filename="r.jsonl")
        item = Item.objects.get(project=nli, external_id=row["id"])
        Item.objects.filter(pk=item.pk).update(status=Item.Status.NEEDS_REVISION)
        # A failed round, as the consensus step records one: the item is in the adjudication queue.
        ConsensusOutcome.objects.create(
            item=item, round=1, outcome="failed", votes={"neutral": 1}, n_votes=1, agreement=1.0
        )
        world.revisable[role] = item.pk
    return world


def _import(project, kind, text):
    from annotation.services.imports import items_import

    result = items_import(
        project=project, data=_jsonl(_rows(kind, project.slug, text)), fmt="jsonl", filename="w.jsonl"
    )
    assert result.created == ITEMS_PER_PROJECT, result


def _claim(user, slug):
    from annotation.services.assignments import assignment_next_for_annotator

    assignment = assignment_next_for_annotator(user=user, slug=slug)
    assert assignment is not None, (user.username, slug)
    return assignment


def _submit(user, slug, kind, text, who):
    from annotation.kinds.registry import get_kind
    from annotation.services.assignments import annotation_submit

    assignment = _claim(user, slug)
    payload = get_kind(kind).annotator_payload(assignment.item)
    return annotation_submit(user=user, assignment_id=assignment.pk, value=value_for(kind, payload, slug, text, who))


def _review(world, text):
    """The reviewer grades the active annotator's work in every project (a question of it in
    qa_authoring) with a comment: feedback in the annotator's inbox. The trial annotator's
    qa_authoring annotation stays pending."""
    from annotation.services.reviews import feedback_list_for_user, review_create

    for kind, slug in KIND_SLUGS.items():
        review_create(
            user=world.users["reviewer"],
            annotation_id=world.annotations[slug]["annotator"],
            grade="good",
            comment=text(slug, "review-comment"),
            question=0 if kind == "qa_authoring" else None,
        )
    world.feedback["annotator"] = feedback_list_for_user(world.users["annotator"]).first().pk
