"""Stratified random sampling of the items to rate (LCHAIM §2.2: 200 of 8,325 samples,
"maintaining the proportional representation of the original train, test, and
development splits").

`items_sample` draws `n` of a project's items (omitted: the project's `sample_size`
setting, LCHAIM's 200, or every item when the project has fewer) so that each stratum (the value of a stratum
field, `split` by default) gets n × its share of the items, rounded by the largest-remainder
method (Hamilton): every stratum first gets the floor of its quota, and the seats left go to
the largest fractional parts, ties broken by stratum name. Within a stratum the items are
drawn uniformly without replacement. The draw depends only on the seed and the project's
items (sorted by id), so the same seed gives the same sample. Sampled items get
`in_sample=True`, all others `False`; the assignment engine hands out only sampled items.

Sampling is refused once any item has an annotation: moving items out of the sample under
raters' hands would leave half-rated items behind.
"""

from __future__ import annotations

import math
import random
import secrets
from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext

from annotation.errors import Conflict, InvalidInput
from annotation.kinds.registry import get_kind
from annotation.kinds.settings import between
from annotation.models import Annotation, Item, Job, Project
from annotation.services.audit import audit_record
from annotation.wording import join_list

# Item fields a stratum may be (an allow-list: never a field name taken from a request).
STRATUM_FIELDS = {"split": "split", "group": "group", "label": "reference_label"}
DEFAULT_STRATUM = "split"
JOB_KIND = "sample"


@dataclass(frozen=True)
class SampleResult:
    n: int
    population: int
    stratum: str
    seed: int
    strata: dict[str, dict[str, int]]
    job: int

    def as_dict(self) -> dict:
        return {
            "n": self.n,
            "population": self.population,
            "stratum": self.stratum,
            "seed": self.seed,
            "strata": self.strata,
            "job": self.job,
        }


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Largest-remainder allocation of `n` over strata of the given sizes.

    >>> allocate({"train": 6692, "dev": 837, "test": 836}, 200)
    {'dev': 20, 'test': 20, 'train': 160}
    """
    total = sum(sizes.values())
    quotas = {name: n * size / total for name, size in sizes.items()}
    seats = {name: math.floor(q) for name, q in quotas.items()}
    left = n - sum(seats.values())
    by_remainder = sorted(sizes, key=lambda name: (-(quotas[name] - seats[name]), name))
    for name in by_remainder[:left]:
        seats[name] += 1
    return dict(sorted(seats.items()))


def _clean_int(value, field: str, *, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(gettext("must be an integer"), field=field)
    if value < low or (high is not None and value > high):
        raise InvalidInput(
            between(low, high) if high is not None else gettext("must be at least %(low)s") % {"low": low},
            field=field,
        )
    return value


def items_sample(*, project: Project, user=None, n=None, stratum=None, seed=None) -> SampleResult:
    """Draw the sample (see the module docstring) and mark it, in one transaction.
    `n` defaults to the project's `sample_size` (capped by the items there are); `seed`
    defaults to a fresh random one, returned so that the draw can be repeated."""
    stratum = DEFAULT_STRATUM if stratum in (None, "") else stratum
    if not isinstance(stratum, str) or stratum not in STRATUM_FIELDS:
        raise InvalidInput(
            gettext("must be one of %(choices)s") % {"choices": join_list(STRATUM_FIELDS)}, field="stratum"
        )
    seed = secrets.randbelow(2**31) if seed is None else _clean_int(seed, "seed", low=0, high=2**63 - 1)
    with transaction.atomic():
        # One sampling or import at a time per project.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        items = Item.objects.filter(project=project, probe_of__isnull=True).exclude(status=Item.Status.REMOVED)
        rows = list(items.order_by("pk").values_list("pk", STRATUM_FIELDS[stratum]))
        if n is None:
            default = get_kind(project.kind).settings_for(project.settings).get("sample_size")
            if default is None:
                raise InvalidInput(gettext("is required"), field="n")
            n = max(1, min(default, len(rows)))
        n = _clean_int(n, "n", low=1, high=max(1, len(rows)))
        if not rows:
            raise InvalidInput(gettext("the project has no items to sample"), field="n")
        if Annotation.objects.filter(item__project=project).exists():
            raise Conflict(gettext("items already have annotations; the sample can no longer change"), field="n")
        by_stratum: dict[str, list[int]] = defaultdict(list)
        for pk, value in rows:
            by_stratum[value or ""].append(pk)
        seats = allocate({name: len(pks) for name, pks in by_stratum.items()}, n)
        rng = random.Random(seed)
        chosen: list[int] = []
        for name in sorted(by_stratum):
            chosen.extend(rng.sample(by_stratum[name], seats[name]))
        Item.objects.filter(project=project).exclude(pk__in=chosen).update(in_sample=False)
        Item.objects.filter(pk__in=chosen).update(in_sample=True)
        strata = {name: {"population": len(by_stratum[name]), "sampled": seats[name]} for name in sorted(by_stratum)}
        # The draw is recorded as a finished job: who sampled, when, with which seed.
        job = Job.objects.create(
            kind=JOB_KIND,
            project=project,
            created_by=user if user is not None and user.is_authenticated else None,
            status=Job.Status.DONE,
            progress=1.0,
            params={"n": n, "stratum": stratum, "seed": seed},
            result={"n": n, "population": len(rows), "strata": strata},
        )
        audit_record(actor=user, action="sample", project=project, target=f"job:{job.pk}",
                     after={"n": n, "stratum": stratum, "seed": seed, "population": len(rows)})  # fmt: skip
    return SampleResult(n=n, population=len(rows), stratum=stratum, seed=seed, strata=strata, job=job.pk)


def items_sampled_ids(project: Project) -> list[int]:
    return list(Item.objects.filter(project=project, in_sample=True).order_by("pk").values_list("pk", flat=True))
