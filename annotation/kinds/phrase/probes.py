"""Coherence probes: reversed copies of an annotator's own pairs (fine-grained-nli-coherence
§3, §5).

An annotator's items include reversed copies of pairs they labeled themselves, at the share
`probe_rate` (default 0.1). One probe item per original and annotator
(`<id>~rev~<user id>`, `probe_of` = the original), created lazily the first time it is
handed out, needing one label (only its annotator ever gets it). Per-annotator copies keep
the engine's slot counting untouched (a probe holds its own single slot) and make "this
annotator's two labels" a plain join. A probe is never handed out right after its original
(the original is never the annotator's latest item, and a different group from the latest
item's is preferred); its payload is the original's with left and right swapped, so page
and payload are those of an ordinary item. Probes are left out of gold, agreement, label
distributions and the PhrasIS export."""

from __future__ import annotations

import hashlib
import random

from annotation.metrics.coherence import reverse_label

PROBE_MARK = "~rev~"
MAX_EXTERNAL_ID = 200


def _secret_seed() -> str:
    from django.conf import settings as django_settings

    return hashlib.sha256(f"mashov.probes:{django_settings.SECRET_KEY}".encode()).hexdigest()


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


def probe_next_for_annotator(project, user, settings: dict, *, last_group: str | None) -> int | None:
    """A reversed copy of a pair this annotator labeled, or None.

    The share of probes among the annotator's items is kept at `probe_rate`: with `o`
    ordinary items and `p` probes held (submitted or claimed), `owed = o·r/(1−r) − p`
    probes are due; a probe is handed out when owed ≥ 1, and with probability `owed`
    when 0 < owed < 1, so probes fall at random places but the share stays within one
    probe of the target. The original is drawn at random among the annotator's labeled
    pairs that have no live probe for them yet, never the annotator's latest item, and
    preferably from another group than the latest item's.

    Call while holding the caller's membership row lock (the assignment engine does), so
    one annotator's calls are serialised: `get_or_create` of the per-annotator probe
    cannot race with itself, and the probe row is locked here for the caller's claim."""
    rate = settings["probe_rate"]
    if rate <= 0:
        return None
    from annotation.models import Assignment, Item

    held = (
        Assignment.objects.filter(project=project, annotator=user)
        .exclude(status=Assignment.Status.EXPIRED)
        .values_list("item_id", "item__probe_of_id", "status", "claimed_at", "id")
    )
    rows = list(held)
    probes_held = {probe_of for _item, probe_of, _s, _c, _id in rows if probe_of}
    n_probes = len(probes_held)
    n_ordinary = sum(1 for _item, probe_of, _s, _c, _id in rows if not probe_of)
    owed = n_ordinary * rate / (1.0 - rate) - n_probes
    if owed <= 0:
        return None
    # One draw per (annotator, position): asking again at the same point gives the same
    # answer, so "nothing left" never turns into a probe on reload. Without a seed the
    # draws are keyed by the server's secret, so annotators cannot work them out.
    seed = settings.get("probe_seed") or _secret_seed()
    rng = random.Random(f"{seed}:{project.pk}:{user.pk}:{len(rows)}")
    if owed < 1 and rng.random() >= owed:
        return None
    latest = max(rows, key=lambda r: (r[3], r[4]), default=None)
    latest_item = latest[0] if latest is not None else None
    labeled = {
        item_id
        for item_id, probe_of, status, _c, _id in rows
        if not probe_of and status == Assignment.Status.SUBMITTED and item_id != latest_item
    }
    candidates = sorted(labeled - probes_held)
    if not candidates:
        return None
    originals = list(
        Item.objects.filter(pk__in=candidates, probe_of__isnull=True)
        .exclude(status=Item.Status.REMOVED)
        .only("pk", "group")
        .order_by("pk")
    )
    if not originals:
        return None
    elsewhere = [item for item in originals if not last_group or item.group != last_group]
    original_pk = rng.choice(elsewhere or originals).pk
    original = Item.objects.get(pk=original_pk)
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
    return Item.objects.select_for_update().filter(pk=probe.pk, status=Item.Status.OPEN).values_list("pk", flat=True).first()
