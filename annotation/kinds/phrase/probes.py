"""Coherence probes: reversed copies of an annotator's own pairs (fine-grained-nli-coherence
§3, §5).

An annotator's items include reversed copies of pairs they labeled themselves with one of
`probe_labels` (default EQUIVALENT, FORWARD, BACKWARD: the relations §5 reverses), at the
share `probe_rate` (default 0.1). One probe item per original and annotator
(`<id>~rev~<user id>`, `probe_of` = the original), created lazily the first time it is
handed out, needing one label (only its annotator ever gets it). Per-annotator copies keep
the engine's slot counting untouched (a probe holds its own single slot) and make "this
annotator's two labels" a plain join. A probe is never handed out right after its original
(the original is never the annotator's latest item, and a different group from the latest
item's is preferred); its payload is the original's with left and right swapped, so page
and payload are those of an ordinary item. Probes are left out of gold, agreement, label
distributions and the PhrasIS export, and counted in the annotator's progress from the
start (`probes_remaining_for_annotator`), so the bar never reveals one."""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from datetime import datetime

from annotation.kinds.settings import keyed_draw
from annotation.metrics.coherence import reverse_label

PROBE_MARK = "~rev~"
MAX_EXTERNAL_ID = 200


def probe_external_id(original_external_id: str, user_id: int) -> str:
    """`<original id>~rev~<user id>`; an original id too long to carry the suffix is cut and
    followed by a digest of the whole id, so two long ids never share a probe id."""
    suffix = f"{PROBE_MARK}{user_id}"
    if len(original_external_id) + len(suffix) <= MAX_EXTERNAL_ID:
        return original_external_id + suffix
    digest = hashlib.sha256(original_external_id.encode("utf-8")).hexdigest()[:12]
    keep = MAX_EXTERNAL_ID - len(suffix) - len(digest) - 1
    return f"{original_external_id[:keep]}#{digest}{suffix}"


def reversed_payload(payload: dict) -> dict:
    """The original's payload with left and right swapped (PhrasIS cells are not copied:
    a probe is never exported)."""
    reversed_ = {"left": payload.get("right", ""), "right": payload.get("left", "")}
    if payload.get("source"):
        reversed_["source"] = payload["source"]
    return reversed_


@dataclass(frozen=True)
class HeldRow:
    """One of the annotator's assignments that still counts (submitted or claimed)."""

    item_id: int
    probe_of: int | None
    status: str  # an Assignment.Status value: "submitted" or "claimed"
    claimed_at: datetime
    assignment_id: int
    label: str | None  # the label submitted, or None
    current_round: bool  # the assignment is of the item's current round
    not_removed: bool
    group: str


def probes_at_most(n_ordinary: int, rate: float) -> int:
    """The most probes the owed rule hands out beside `n_ordinary` ordinary items: a probe is
    due while `held < n_ordinary·r/(1−r)`, so at most ⌈n_ordinary·r/(1−r)⌉ of them (same
    float arithmetic as the rule).

    >>> probes_at_most(9, 0.1), probes_at_most(10, 0.1), probes_at_most(35, 0.5), probes_at_most(5, 0.0)
    (1, 2, 35, 0)
    """
    if rate <= 0:
        return 0
    return math.ceil(n_ordinary * rate / (1.0 - rate))


def eligible_originals(rows: list[HeldRow], probe_labels, *, latest_item: int | None = None) -> list[HeldRow]:
    """The annotator's submitted ordinary pairs that may be reversed for them now: their own
    label (current round) is one of `probe_labels` (§5 reverses EQUIVALENT, FORWARD and
    BACKWARD pairs), the pair is not removed, they hold no probe of it yet, and it is not
    `latest_item`. In item id order."""
    probes_held = {row.probe_of for row in rows if row.probe_of}
    labels = set(probe_labels)
    found = {
        row.item_id: row
        for row in rows
        if not row.probe_of
        and row.status == "submitted"
        and row.current_round
        and row.label in labels
        and row.not_removed
        and row.item_id != latest_item
        and row.item_id not in probes_held
    }
    return [found[item_id] for item_id in sorted(found)]


def _held(project, user) -> list[HeldRow]:
    """The annotator's assignments in the project that are not expired, in one query."""
    from django.db.models.fields.json import KeyTextTransform

    from annotation.models import Assignment, Item

    rows = (
        Assignment.objects.filter(project=project, annotator=user)
        .exclude(status=Assignment.Status.EXPIRED)
        .annotate(label=KeyTextTransform("label", "annotation__value"))
        .values_list(
            "item_id", "item__probe_of_id", "status", "claimed_at", "id", "label", "round", "item__round",
            "item__status", "item__group",
        )
    )  # fmt: skip
    return [
        HeldRow(
            item_id,
            probe_of,
            status,
            claimed_at,
            pk,
            label,
            round_ == item_round,
            item_status != Item.Status.REMOVED,
            group,
        )
        for item_id, probe_of, status, claimed_at, pk, label, round_, item_round, item_status, group in rows
    ]


def _counts(rows: list[HeldRow]) -> tuple[int, int]:
    """(ordinary items held, originals with a probe held)."""
    return sum(1 for row in rows if not row.probe_of), len({row.probe_of for row in rows if row.probe_of})


def _latest_item(rows: list[HeldRow]) -> int | None:
    latest = max(rows, key=lambda row: (row.claimed_at, row.assignment_id), default=None)
    return latest.item_id if latest is not None else None


def _originals_due(project, user, settings: dict, rows: list[HeldRow]) -> tuple[list[HeldRow], random.Random] | None:
    """The originals one of which is reversed for the annotator now, with the draw that
    picks it; None when no probe is due at this point of their work.

    The share of probes among the annotator's items is kept at `probe_rate`: with `o`
    ordinary items and `p` probes held (submitted or claimed), `owed = o·r/(1−r) − p`
    probes are due; a probe is handed out when owed ≥ 1, and with probability `owed`
    when 0 < owed < 1, so probes fall at random places but the share stays within one
    probe of the target."""
    rate = settings["probe_rate"]
    if rate <= 0:
        return None
    n_ordinary, n_probes = _counts(rows)
    owed = n_ordinary * rate / (1.0 - rate) - n_probes
    if owed <= 0:
        return None
    # One draw per (annotator, position): asking again at the same point gives the same
    # answer, so "nothing left" never turns into a probe on reload. The draws are keyed by
    # the project's secret (with the seed), so annotators cannot work them out.
    rng = random.Random(
        keyed_draw(project.draw_secret, settings.get("probe_seed", 0), f"{project.pk}:{user.pk}:{len(rows)}")
    )
    if owed < 1 and rng.random() >= owed:
        return None
    originals = eligible_originals(rows, settings["probe_labels"], latest_item=_latest_item(rows))
    if not originals:
        return None
    return originals, rng


def probe_next_for_annotator(project, user, settings: dict, *, last_group: str | None) -> int | None:
    """A reversed copy of a pair this annotator labeled, or None.

    Due at the rate `_originals_due` keeps; the original is drawn at random among
    `eligible_originals` (never the annotator's latest item), preferably from another group
    than the latest item's.

    Call while holding the caller's membership row lock (the assignment engine does), so
    one annotator's calls are serialised: `get_or_create` of the per-annotator probe
    cannot race with itself, and the probe row is locked here for the caller's claim."""
    from annotation.models import Item

    due = _originals_due(project, user, settings, _held(project, user))
    if due is None:
        return None
    originals, rng = due
    elsewhere = [row for row in originals if not last_group or row.group != last_group]
    original = Item.objects.get(pk=rng.choice(elsewhere or originals).item_id)
    probe, _created = Item.objects.get_or_create(
        project=project,
        external_id=probe_external_id(original.external_id, user.pk),
        defaults={
            "payload": reversed_payload(original.payload),
            "reference_label": reverse_label(original.reference_label) if original.reference_label else "",
            "group": original.group,
            "split": original.split,
            "probe_of": original,
            "in_sample": True,
            "position": original.position,
            "round": original.round,
        },
    )
    # Lock it for the caller's claim (the engine re-counts its slot under this lock).
    return (
        Item.objects.select_for_update()
        .filter(pk=probe.pk, status=Item.Status.OPEN)
        .values_list("pk", flat=True)
        .first()
    )


def probes_remaining_for_annotator(project, user, settings: dict, *, ordinary_remaining: int) -> int:
    """How many more probes the annotator can still be handed, counted in the `remaining`
    of their progress so that a probe never shows in the bar.

    The page draws `done / (done + remaining [+ 1 for the item on screen])`, and `done` grows
    by one at every submit, probes included (leaving probes out of `done` would stall the bar
    on a probe, which gives it away as surely as a growing total). So a probe must already
    be in `remaining` before it is handed out: its claim then moves one unit out of
    `remaining` onto the screen, exactly like an ordinary item, and the total stays put.
    The figure is an upper bound that never grows as the annotator works:

        min(⌈N·r/(1−r)⌉ − p,  E + c + ordinary_remaining)

    with N the ordinary items they hold plus `ordinary_remaining`, p the probes they hold,
    E their pairs that may be reversed now (`eligible_originals`, the latest included) and c
    their open ordinary claims (each may still become such a pair). A claim of an ordinary
    item moves one from `ordinary_remaining` to c, its submit one from c to E or nowhere,
    and a probe's claim takes one from both terms. Once nothing ordinary is left or open,
    the same rule `next` applies says exactly whether a probe is still due: if not, 0, so
    the bar ends full. Unused estimate leaves the total (it shrinks, never grows) when it
    proves too high: where the listed labels are rare, or at the end."""
    if settings["probe_rate"] <= 0:
        return 0
    rows = _held(project, user)
    n_ordinary, n_probes = _counts(rows)
    open_ordinary = sum(1 for row in rows if not row.probe_of and row.status == "claimed")
    bound = min(
        probes_at_most(n_ordinary + ordinary_remaining, settings["probe_rate"]) - n_probes,
        len(eligible_originals(rows, settings["probe_labels"])) + open_ordinary + ordinary_remaining,
    )
    nothing_open = not any(row.status == "claimed" for row in rows)
    if nothing_open and ordinary_remaining == 0 and _originals_due(project, user, settings, rows) is None:
        return 0
    return max(0, bound)
