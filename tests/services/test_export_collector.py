"""An export reads and writes each chunk with Python's cyclic collector paused
(selectors.exports.collector_paused), on a generated project: votes, outcomes of the
current and of an earlier round, aggregates (one without a label), adjudications with and
without an adjudicator, one decision, several (a removal and its restore), a restore alone,
removed items, authors by user and by pseudonym, Persian text with bidi controls and line
separators, NULLs."""

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from tests.release.test_publish_kinds import DEMO

pytestmark = pytest.mark.django_db

LABELS = ("entailment", "neutral", "contradiction", "EQUIVALENT", "")


def generated_project(kind: str, admin, annotators):
    """A project of `kind` (one whose items are premise and hypothesis, voted on by label)
    with the Persian demo items and generated facts (seeded: the same each run)."""
    from django.utils import timezone

    from annotation.models import (
        Adjudication,
        Annotation,
        Assignment,
        ConsensusOutcome,
        Decision,
        Item,
        ItemAggregate,
    )
    from annotation.selectors.names import AUTHOR_PSEUDONYM
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    rng = random.Random(kind)
    project = project_create(actor=admin, slug=f"x-{kind}".replace("_", "-"), name=kind, kind=kind, language="fa")
    rows = [json.loads(line) for line in (DEMO / "nli_fa.jsonl").read_text("utf-8").splitlines()]
    # Copies of the demo's rows under other ids, so that every kind has items of every status.
    rows = [{**row, "id": f"{row['id']}-{n // len(rows)}"} for n, row in enumerate(rows * (12 // len(rows) + 1))]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="rows.jsonl", user=admin)

    def value_of(item, k):
        return {"label": ("entailment", "neutral", "contradiction")[k % 3]}

    items = list(Item.objects.filter(project=project).order_by("position", "id"))
    assert len(items) >= 5
    now = timezone.now()
    for n, item in enumerate(items):
        # Some items in a second round: the first round's facts must not be written.
        item.round = 2 if n % 4 == 3 else 1
        item.status = ("accepted", "removed", "open", "complete", "deciding", "needs_revision")[n % 6]
        item.author_id = annotators[0].id if n % 5 == 1 else None
        item.computed = {**(item.computed or {}), AUTHOR_PSEUDONYM: f"ن{n}"} if n % 5 == 2 else item.computed
        item.save(update_fields=["round", "status", "author", "computed"])
        for round_ in range(1, item.round + 1):
            voters = rng.sample(annotators, rng.randint(0, len(annotators)))
            for k, user in enumerate(voters):
                assignment = Assignment.objects.create(
                    project=project, item=item, annotator=user, round=round_, status="submitted",
                    claimed_at=now, expires_at=now,
                )  # fmt: skip
                Annotation.objects.create(
                    assignment=assignment, item=item, annotator=user, round=round_, value=value_of(item, k + n)
                )
            if rng.random() < 0.7:
                votes = {label: rng.randint(1, 3) for label in rng.sample(LABELS[:4], rng.randint(0, 3))}
                ConsensusOutcome.objects.create(
                    item=item, round=round_, outcome=rng.choice(("accepted", "failed")), gold=rng.choice(LABELS),
                    votes=votes, n_votes=sum(votes.values()), agreement=rng.choice((0.1 + 0.2, 1.0, 0.0, 2 / 3)),
                    label_changed=rng.random() < 0.5,
                )  # fmt: skip
            if rng.random() < 0.3:
                adjudication = Adjudication.objects.create(
                    item=item, round=round_, label=rng.choice(LABELS[:4]),
                    comment=rng.choice(("", "כי \u202bכך\u202c", "چون\u2028 این", "=1+2")),
                    adjudicator=rng.choice((None, admin, annotators[1])),
                )  # fmt: skip
                at = datetime(2026, 1, 2, 3, 4, 5, rng.choice((0, 120000, 999999)), tzinfo=UTC) + timedelta(days=n)
                Adjudication.objects.filter(pk=adjudication.pk).update(created_at=at)
            history = rng.choice(
                ((), (("k_of_n", 10),), (("restore", 40),), (("k_of_n", 10), ("withdrawn", 40), ("restore", 40)),
                 (("majority", 10), ("adjudication", 30), ("import", 20)), (("k_of_n", 10), ("k_of_n", 10)))
            )  # fmt: skip
            for method, rank in history:
                Decision.objects.create(
                    item=item, round=round_, method=method, rank=rank, status=rng.choice(("accepted", "removed")),
                    value=rng.choice((None, "neutral", {"x": "ی"})), confidence=rng.choice((None, 0.25)),
                    decided_by=rng.choice((None, annotators[2])), comment=rng.choice(("", "הערה")),
                )  # fmt: skip
            for method in rng.sample(("k_of_n", "majority", "dawid_skene", "mace"), rng.randint(0, 4)):
                if round_ == item.round or rng.random() < 0.5:
                    ItemAggregate.objects.update_or_create(
                        item=item, method=method,
                        defaults={"round": round_, "label": rng.choice(LABELS), "confidence": rng.random(),
                                  "computed_at": now},
                    )  # fmt: skip
    return project


def test_the_collector_is_paused_while_a_chunk_is_made_and_only_then(make_user, monkeypatch):
    """Each chunk is read and written with the cyclic collector paused; between chunks, and
    once a client leaves the file half read, it runs again (and one that was off stays off)."""
    import gc

    from annotation.kinds.nli.kind import NliRelabelKind
    from annotation.selectors import exports as export_reads
    from annotation.services.exports import export_prepare, export_stream

    admin = make_user("x-admin", staff=True)
    project = generated_project("nli_relabel", admin, [make_user(f"x-a{k}") for k in range(3)])
    seen = []
    record = NliRelabelKind.export_record
    monkeypatch.setattr(NliRelabelKind, "export_record", lambda *a: seen.append(gc.isenabled()) or record(*a))
    monkeypatch.setattr(export_reads, "CHUNK_SIZE", 4)
    assert gc.isenabled()
    for fmt in ("jsonl", "csv"):
        stream = export_stream(export_prepare(project=project, fmt=fmt, status="all"))
        next(stream)
        assert gc.isenabled()
        next(stream)
        assert gc.isenabled()
        del stream  # a client that leaves
        assert gc.isenabled()
    assert seen and not any(seen)
    gc.disable()
    try:
        b"".join(export_stream(export_prepare(project=project, fmt="jsonl", status="all")))
        assert not gc.isenabled()
    finally:
        gc.enable()
