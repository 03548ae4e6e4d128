"""The export's facts grouped per item by PostgreSQL (selectors.exports.chunks_with_facts,
one query a chunk) write the same bytes as the reading they replaced (five queries a chunk,
grouped in Python: tests/services/export_reference.py), for a generated project of every
kind and every format: votes, outcomes of the current and of an earlier round, aggregates
(one without a label), adjudications with and without an adjudicator, one decision, several
(a removal and its restore), a restore alone, removed items, authors by user and by
pseudonym, Hebrew and Persian text with bidi controls and line separators, NULLs."""

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.services import export_reference

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo"
AUTHORED = {
    "premise": "מזכ\u200cל האו״ם נבחר.\n",
    "entailment": "بان کی\u200cمون پیش از او بود.",
    "contradiction": "\u202bהוא לא נבחר\u202c\u00a0",
    "neutral": "اعضای سازمان ملل\u2028 رأی دادند. ",
}
QUESTIONS = [
    {"id": f"q{n}", "question": f"پایتخت ایران کدام شهر است؟ {n}\u200f", "choices": ["اصفهان", "تهران"],
     "answer_index": n % 2, "split": ("train", "dev", "test")[n % 3]}
    for n in range(7)
]  # fmt: skip
KINDS = {
    "nli_relabel": ("nli_fa.jsonl", lambda item, k: {"label": ("entailment", "neutral", "contradiction")[k % 3]}),
    "label_test": ("nli_he.jsonl", lambda item, k: {"label": ("entailment", "neutral")[k % 2]}),
    "qa_authoring": ("qa_he.jsonl", lambda item, k: {"questions": [] if k % 2 else [{"q": "מה?\u2029", "a": "כן"}]}),
    "translation_rating": ("translation_he.jsonl", None),
    "phrase_pair": ("phrase_he.jsonl", lambda item, k: {"label": ("EQUIVALENT", "FORWARD")[k % 2]}),
    "summary_rating": ("summaries_he.jsonl", None),
    "nli_authoring": (None, lambda item, k: AUTHORED if k % 2 else {**AUTHORED, "neutral": "\u0085x"}),
}
LABELS = ("entailment", "neutral", "contradiction", "EQUIVALENT", "")


def _summary_value(item, k):
    rating = {"coherence": 1 + k % 5, "completeness": 2, "errors": [["repetition"], []][k % 2]}
    return {"ratings": {str(d): rating for d in range(len(item.payload["summaries"]))}}


def _translation_value(item, k):
    scores = {"accuracy": 4, "fluency": 1 + k % 5, "cultural_fit": 5, "label_valid": bool(k % 2)}
    return {"ratings": {str(c): scores for c in range(len(item.payload["candidates"]))}}


VALUES = {"summary_rating": _summary_value, "translation_rating": _translation_value}


def generated_project(kind: str, admin, annotators):
    """A project of `kind` with the demo items and generated facts (seeded: the same each run)."""
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
    demo, value_of = KINDS[kind]
    language = "fa" if kind in ("nli_relabel", "nli_authoring") else "he"
    project = project_create(actor=admin, slug=f"x-{kind}".replace("_", "-"), name=kind, kind=kind, language=language)
    rows = [json.loads(line) for line in (DEMO / demo).read_text("utf-8").splitlines()] if demo else QUESTIONS
    # Copies of the demo's rows under other ids, so that every kind has items of every status.
    rows = [{**row, "id": f"{row['id']}-{n // len(rows)}"} for n, row in enumerate(rows * (12 // len(rows) + 1))]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="rows.jsonl", user=admin)
    value_of = value_of or VALUES[kind]
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


def exports_of(project) -> dict[str, bytes]:
    """Every export of the project the facts are read for: JSONL (with and without the
    decision history) and CSV of every status, the kind's own formats, and the translation
    kind's ratings export."""
    from annotation.kinds.registry import get_kind
    from annotation.services.exports import EXPORT_STATUSES, export_prepare, export_stream

    kind = get_kind(project.kind)
    files = {}
    for status in EXPORT_STATUSES:
        for fmt in kind.export_formats:
            for history in ("0", "1") if fmt == "jsonl" else ("0",):
                spec = export_prepare(project=project, fmt=fmt, status=status, history=history)
                files[f"{fmt} {status} {history}"] = b"".join(export_stream(spec))
    if project.kind == "translation_rating":
        from annotation.kinds.translation.formats import ratings_export_stream

        for fmt in ("jsonl", "csv"):
            spec = export_prepare(project=project, fmt=fmt, status="all")
            files[f"ratings {fmt}"] = b"".join(ratings_export_stream(spec, exclude_flagged=False))
    return files


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_export_is_byte_for_byte_the_reference_reading(kind, make_user, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.selectors import exports as export_reads
    from annotation.services import exports as export_writers

    admin = make_user("x-admin", staff=True)
    project = generated_project(kind, admin, [make_user(f"x-a{k}") for k in range(5)])
    monkeypatch.setattr(export_reads, "CHUNK_SIZE", 3)  # items of several chunks
    with CaptureQueriesContext(connection) as captured:
        grouped = exports_of(project)
    facts_queries = [query for query in captured if "unnest(" in query["sql"]]
    assert facts_queries and not [query for query in captured if "annotation_consensusoutcome" in query["sql"]
                                  and "unnest(" not in query["sql"]]  # fmt: skip
    # The writers' own name for it too (services.exports imports it by name).
    monkeypatch.setattr(export_reads, "chunks_with_facts", export_reference.chunks_with_facts)
    monkeypatch.setattr(export_writers, "chunks_with_facts", export_reference.chunks_with_facts)
    reference = exports_of(project)
    assert grouped.keys() == reference.keys()
    for name, data in reference.items():
        assert grouped[name] == data, name
    # The generated facts reach the files (the comparison is not between two empty files).
    assert len(reference["jsonl all 0"].splitlines()) == project.items.filter(probe_of__isnull=True).count()
    if kind in ("nli_relabel", "label_test", "phrase_pair"):
        records = [json.loads(line) for line in reference["jsonl all 1"].decode().splitlines()]
        assert {record["decided_by"] for record in records} >= {None, "k_of_n"}
        assert any(record.get("aggregates") for record in records)
        assert any(record.get("decisions") for record in records)
        assert any(record.get("adjudicated") or record.get("adjudication") for record in records) or any(
            "adjudicat" in json.dumps(record) for record in records
        )


def test_the_portable_reading_gives_the_rows_of_the_query(make_user):
    """The ORM reading used on databases without arrays (SQLite) gives the rows
    PostgreSQL's one query gives, for the same chunk."""
    from annotation.models import Item
    from annotation.selectors import exports as export_reads

    admin = make_user("x-admin", staff=True)
    project = generated_project("nli_relabel", admin, [make_user(f"x-a{k}") for k in range(5)])
    chunk = list(export_reads.export_items(Item.objects.filter(project=project).order_by("position", "id")))
    for aggregates in (False, True):
        query = sorted(export_reads._fact_rows(chunk, aggregates=aggregates))
        ids, rounds = [item.id for item in chunk], [item.round for item in chunk]
        portable = sorted(export_reads._fact_rows_portable(ids, rounds, aggregates=aggregates))
        assert portable == [tuple(row) for row in query]
        assert any(row[8] for row in query) and any(row[14] and len(row[14]) > 1 for row in query)


def test_an_export_reads_one_facts_query_a_chunk(make_user, monkeypatch):
    """One facts query per chunk (a second with `history`, the decisions): the count grows
    with the chunks, never with the items. The facts query runs in a transaction of its own
    (`SET LOCAL jit = off`): inside the test's transaction a savepoint, the SET and the
    savepoint's release, three more statements per chunk."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.selectors import exports as export_reads
    from annotation.services.exports import export_prepare, export_stream

    admin = make_user("x-admin", staff=True)
    project = generated_project("nli_relabel", admin, [make_user(f"x-a{k}") for k in range(5)])
    n_items = project.items.filter(probe_of__isnull=True).count()

    def queries(size: int, history: str) -> int:
        monkeypatch.setattr(export_reads, "CHUNK_SIZE", size)
        spec = export_prepare(project=project, fmt="jsonl", status="all", history=history)
        with CaptureQueriesContext(connection) as captured:
            assert b"".join(export_stream(spec)).count(b"\n") == n_items
        return len(captured)

    chunks = -(-n_items // 4)
    assert chunks >= 3
    for history, per_chunk in (("0", 4), ("1", 5)):
        assert queries(4, history) - queries(10_000, history) == (chunks - 1) * per_chunk


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
