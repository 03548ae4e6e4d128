"""Benchmark: the worker's figures run after a few changed paragraphs of a large
`qa_authoring` project, its quality report kept as per-item counts (`Kind.report_counts`,
annotation/kinds/qa/quality.py) or read whole (as before it was counted).

Builds --items paragraphs of articles of five paragraphs (a tenth with the split their file
fixed), the file's questions on half of them, three authored questions on the other half
(from 12 annotators, review required on a third), a grade on a third of the authored
questions and a validator's answer on a quarter of all. It stores the figures over every
item, then, per variant (counted; read whole), changes --changed paragraphs (a question
graded, one validated, an annotation's questions edited, in turn) and times
`project_figures_store(project, changed ids)`: this process's CPU seconds and the wall
seconds (PostgreSQL's share in the latter); and the report alone, computed whole and from
the kept counts. A script, not a test:

    python bench/qa_report_counts.py --items 10000 100000 [--changed 100] [--keep]

It creates the scratch database `mashov_bench_qa_report_counts` on --server per size and
drops it unless --keep. Each line prints the load average (the machine may be shared).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report_counts import report_bench, report_bench_args  # noqa: E402 (bench/ is on sys.path)

ANNOTATORS = 12
CONTEXT = (
    "בשנת 1948 הוקמה המדינה ובה נבנו ערים רבות. חברת Mobileye נוסדה בירושלים בשנת 1999 על ידי אמנון שעשוע "
    "וזיו אבירם, ומאז גדלה לאלפי עובדים בישראל ובעולם. "
)
SPANS = [(CONTEXT.index(text), text) for text in ("ירושלים", "1948", "אמנון שעשוע", "Mobileye")]
QUESTIONS = ("באיזו עיר נוסדה Mobileye?", "מתי קמה המדינה?", "מי ייסד את החברה?", "כמה עובדים יש בחברה?")


def authored(rng: random.Random) -> dict:
    questions = []
    for _ in range(3):
        start, text = rng.choice(SPANS)
        questions.append(
            {"question": rng.choice(QUESTIONS), "answerable": True, "answer": {"start": start, "text": text}}
        )
    return {"questions": questions}


def build(n_items: int):
    """The project, its paragraphs, questions, grades and validations (bulk inserts)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item, Membership, Project, QuestionValidation, Review

    rng = random.Random(7)
    User = get_user_model()
    supervisor = User.objects.create_user("bench-sup")
    people = [User.objects.create_user(f"author{i:02d}") for i in range(ANNOTATORS)]
    project = Project.objects.create(
        slug="qa-counts", name="qa-counts", kind="qa_authoring", language="he", created_by=supervisor, settings={}
    )
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )

    def imported(i: int) -> list[dict]:
        return [
            {"id": f"q{i}-{n}", "question": rng.choice(QUESTIONS), "is_impossible": False,
             "answers": [{"text": text, "answer_start": start} for start, text in [rng.choice(SPANS)]]}
            for n in range(rng.randint(1, 3))
        ]  # fmt: skip

    items = Item.objects.bulk_create(
        (Item(project=project, external_id=f"p{i}", group=f"article {i // 5}", position=i, status="complete",
              split="dev" if i % 10 == 3 else "",
              payload={"context": CONTEXT, "title": f"article {i // 5}", "questions": imported(i) if i % 2 else []})
         for i in range(n_items)),
        batch_size=5000,
    )  # fmt: skip
    now = timezone.now()
    claims = Assignment.objects.bulk_create(
        (Assignment(project=project, item=item, annotator=rng.choice(people), round=1, status="submitted",
                    claimed_at=now, expires_at=now, submitted_at=now)
         for item in items[::2]),
        batch_size=5000,
    )  # fmt: skip
    annotations = Annotation.objects.bulk_create(
        (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=1,
                    value=authored(rng), review_required=rng.random() < 0.33) for claim in claims),
        batch_size=5000,
    )  # fmt: skip
    Review.objects.bulk_create(
        (Review(annotation=annotation, question=q, grade=rng.choice(("rejected", "verified", "good", "gold")),
                reviewer=supervisor)
         for annotation in annotations for q in range(3) if rng.random() < 0.33),
        batch_size=5000,
    )  # fmt: skip
    validations = [
        QuestionValidation(annotation=annotation, question=q, validator=rng.choice(people), answer_start=start,
                           answer_text=text)
        for annotation in annotations for q in range(3) if rng.random() < 0.25
        for start, text in [rng.choice(SPANS)]
    ] + [
        QuestionValidation(item=item, question=0, question_key=item.payload["questions"][0]["id"],
                           validator=rng.choice(people), answer_start=start, answer_text=text)
        for item in items[1::2] if rng.random() < 0.25 for start, text in [rng.choice(SPANS)]
    ]  # fmt: skip
    QuestionValidation.objects.bulk_create(
        (v for v in validations if v.annotation is None or v.validator_id != v.annotation.annotator_id),
        batch_size=5000,
        ignore_conflicts=True,
    )
    return project, annotations, supervisor, people


def change(annotations, supervisor, people, n: int, offset: int) -> list[int]:
    """A question graded, validated or edited on each of `n` paragraphs; their ids."""
    from annotation.models import Annotation, QuestionValidation, Review

    rng = random.Random(offset)
    chosen = [annotations[(offset * 7 + i * 13) % len(annotations)] for i in range(n)]
    for index, annotation in enumerate(chosen):
        if index % 3 == 0:
            Review.objects.update_or_create(
                annotation=annotation, question=index % 3, defaults={"grade": "good", "reviewer": supervisor}
            )
        elif index % 3 == 1:
            validator = rng.choice([p for p in people if p.pk != annotation.annotator_id])
            start, text = rng.choice(SPANS)
            QuestionValidation.objects.get_or_create(
                annotation=annotation, question=1, validator=validator,
                defaults={"answer_start": start, "answer_text": text},
            )  # fmt: skip
        else:
            Annotation.objects.filter(pk=annotation.pk).update(value=authored(rng))
    return sorted({annotation.item_id for annotation in chosen})


def main() -> int:
    args = report_bench_args(__doc__, "mashov_bench_qa_report_counts")
    return report_bench(
        args,
        "qa_authoring",
        build,
        lambda built, n, offset: change(*built[1:], n, offset),
        unit="paragraphs",
        variants=(("counted", True), ("read whole", False)) * 2,
    )


if __name__ == "__main__":
    sys.exit(main())
