"""Benchmark: the worker's figures run after a few changed items on a large
translation_rating project, its back-translation figures kept as per-item counts
(`Kind.report_counts`, annotation/kinds/translation/counts.py) or read whole
(`Kind.report_sections`, as before they were counted).

Builds --items items in groups of four sharing a premise (as ConTRoL's hypotheses share
their passage), four systems' candidates each with a back-translation (a system's
back-translation of a shared premise the same text in most groups), each item rated by
two of 12 raters, and runs the back-translation filter over them with a stand-in encoder
(a random vector per text), which stores the scores and the shared instances' holders.
It stores the figures over every item, then, per variant (counted; read whole), edits a
rater's ratings on --changed items and times `project_figures_store(project, changed
ids)`: this process's CPU seconds and the wall seconds; and the report sections alone,
computed whole and from the kept counts. A script, not a test:

    python bench/report_counts_translation.py --items 10000 100000 [--changed 100] [--keep]

It creates the scratch database `mashov_bench_report_counts_translation` on --server per
size and drops it unless --keep. Each line prints the load average (the machine may be
shared).
"""

from __future__ import annotations

import random
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report_counts import report_bench, report_bench_args  # noqa: E402 (bench/ is on sys.path)

SYSTEMS = ("amazon", "google", "dicta", "nllb")
RATERS = 12
SHARING = 4  # items per premise


def encoder(texts):
    """A stand-in for MiniLM: a random vector per text, seeded by the text."""
    import numpy as np

    return np.stack([np.random.default_rng(zlib.crc32(text.encode())).standard_normal(16) for text in texts])


def ratings(rng: random.Random) -> dict:
    return {
        "ratings": {
            str(index): {"accuracy": rng.randint(1, 5), "fluency": rng.randint(1, 5),
                         "cultural_fit": rng.randint(1, 5), "label_valid": rng.random() < 0.9}
            for index in range(len(SYSTEMS))
        },
        "display_order": list(range(len(SYSTEMS))),
    }  # fmt: skip


def build(n_items: int):
    """The project, its items, claims and ratings (bulk inserts through the ORM), and the
    back-translation filter run over them."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.kinds.translation.back_translation import back_translation_compute
    from annotation.models import Annotation, Assignment, Item, Membership, Project

    rng = random.Random(7)
    User = get_user_model()
    supervisor = User.objects.create_user("bench-sup")
    people = [User.objects.create_user(f"rater{i:02d}") for i in range(RATERS)]
    project = Project.objects.create(
        slug="counts", name="counts", kind="translation_rating", language="he", created_by=supervisor,
        settings={"released_system": "amazon"},
    )  # fmt: skip
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role="annotator", status="active") for user in people
    )

    def candidate(system: str, group: int, i: int) -> dict:
        # Most groups' premise back-translates to the same text for a system; some do not.
        premise_back = f"back {system} premise {group}" + (f" {i}" if group % 5 == 0 else "")
        return {"system": system, "premise": f"{system} premise {group}", "hypothesis": f"{system} hypothesis {i}",
                "back_translation": {"premise": premise_back, "hypothesis": f"back {system} hypothesis {i}"}}  # fmt: skip

    items = Item.objects.bulk_create(
        (Item(project=project, external_id=f"x{i}", position=i, status="complete", reference_label="entailment",
              payload={"source": {"premise": f"premise {i // SHARING} " * 20, "hypothesis": f"hypothesis {i}",
                                  "label": "e"},
                       "candidates": [candidate(system, i // SHARING, i) for system in SYSTEMS]})
         for i in range(n_items)),
        batch_size=2000,
    )  # fmt: skip
    now = timezone.now()
    claims = Assignment.objects.bulk_create(
        (Assignment(project=project, item=item, annotator=person, round=1, status="submitted",
                    claimed_at=now, expires_at=now, submitted_at=now)
         for item in items for person in rng.sample(people, 2)),
        batch_size=5000,
    )  # fmt: skip
    Annotation.objects.bulk_create(
        (Annotation(assignment=claim, item_id=claim.item_id, annotator_id=claim.annotator_id, round=1,
                    value=ratings(rng)) for claim in claims),
        batch_size=5000,
    )  # fmt: skip
    back_translation_compute(project, encoder=encoder)
    return project, items


def change(items, n: int, offset: int) -> list[int]:
    """A rater's ratings edited on each of `n` items; their ids."""
    from annotation.models import Annotation

    rng = random.Random(offset)
    chosen = [items[(offset * 7 + i * 13) % len(items)] for i in range(n)]
    for item in chosen:
        first = Annotation.objects.filter(item=item).order_by("pk").first()
        assert first is not None
        first.value = ratings(rng)
        first.save(update_fields=["value"])
    return sorted({item.pk for item in chosen})


def main() -> int:
    args = report_bench_args(__doc__, "mashov_bench_report_counts_translation")
    return report_bench(
        args,
        "translation_rating",
        build,
        lambda built, n, offset: change(built[1], n, offset),
        unit="items",
        variants=(("counted", True), ("read whole", False), ("counted", True)),
    )


if __name__ == "__main__":
    sys.exit(main())
