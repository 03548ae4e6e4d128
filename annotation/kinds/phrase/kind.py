"""`phrase_pair`: label a phrase pair with one of PhrasIS's seven fine-grained relations,
with reversed copies mixed in as coherence probes (fine-grained-nli-coherence §3, §5,
appendix A.1; DESIGN.md §2).

Import
- JSONL / CSV rows: `id, left, right, label?, source?, score?, group?, split?, phrasis?,
  extra?`. `label` is one of the seven (EQUIVALENT ...) or PhrasIS's code (EQUI, FORW,
  BACK, SIMI, REL, OPPO, UNR), compared after strip() (upstream label cells carry trailing
  spaces), stored canonical as the item's reference label. Text is stored byte-exact.
- `phrasis`: PhrasIS's own files, `PhrasIS.<split>.<source>.<polarity>.txt`, seven
  tab-separated columns, no header (../shared/data/phrasis/README.md): score, label,
  phrase 1, phrase 2, token positions 1, token positions 2, sentence-pair number. Every
  cell is kept raw in `payload.phrasis` (trailing spaces are data) together with the file
  name and polarity; source and split come from the file name; the group is
  `<source>-<split>-<pair number>` (all chunks of one sentence pair); the external id is
  `<file stem>-<line number>`, so re-importing a file skips every row.

Annotating: the annotator sees `{left, right}` only and submits `{"label": one of the
seven}`. Each item needs `labels_per_item` labels (default 3); the imported label is not
a vote.

Probes (`probe_for_annotator`): an annotator's items include reversed copies of pairs they
labeled themselves, at the share `probe_rate` (default 0.1). One probe item per original
and annotator (`<id>~rev~<user id>`, `probe_of` = the original), created lazily the first
time it is handed out, needing one label (only its annotator ever gets it). Per-annotator
copies keep the engine's slot counting untouched (a probe holds its own single slot) and
make "this annotator's two labels" a plain join. A probe is never handed out right after
its original (the original is never the annotator's latest item, and a different group
from the latest item's is preferred); its payload is the original's with left and right
swapped, so page and payload are those of an ordinary item. Probes are left out of gold,
agreement, label distributions and the PhrasIS export.

Gold: the majority label of the annotations of the item's current round; on a tie, the
imported label if it is one of the tied labels, else no gold (`tie: true` in exports);
when nobody labeled, the imported label (`gold_source: "imported"`).

Hard coherence needs a gold for the original pair: the imported (expert) label when the
item has one, else the majority gold of the original as above. Soft coherence needs none.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from annotation.errors import FieldError, InvalidInput
from annotation.kinds.base import SEED_RANGE, Kind, check_range
from annotation.metrics.coherence import LABELS, hard_coherence, reverse_label, soft_coherence
from annotation.rows import ItemRow, RowProblems, extra_in_order, require_text, store_extra

# PhrasIS's label codes (dataset README) ↔ the seven labels of appendix A.1.
CODES = {
    "EQUI": "EQUIVALENT",
    "FORW": "FORWARD",
    "BACK": "BACKWARD",
    "OPPO": "OPPOSITION",
    "SIMI": "SIMILAR",
    "REL": "RELATED",
    "UNR": "UNRELATED",
}
LABEL_TO_CODE = {label: code for code, label in CODES.items()}
PHRASIS_COLUMNS = ("score", "label", "left_positions", "right_positions", "pair")
PHRASIS_NAME = re.compile(r"^PhrasIS\.(?P<split>[^.]+)\.(?P<source>[^.]+)\.(?P<polarity>[^.]+)$")
# The scope of the overall agreement report; no source may be called this.
ALL_SOURCES = "all"
PROBE_MARK = "~rev~"
MAX_EXTERNAL_ID = 200
MAX_PHRASE_LENGTH = 5_000


def canonical_label(value: Any) -> str | None:
    """One of LABELS for a label or PhrasIS code (surrounding whitespace ignored), else None."""
    if not isinstance(value, str):
        return None
    key = value.strip()
    if key in LABELS:
        return key
    return CODES.get(key)


def majority_gold(labels: list[str], imported: str = "") -> tuple[str | None, str | None, bool]:
    """(gold, how it was decided, tie) from the labels cast on one item.

    The most frequent label; a tie for the top is broken by the imported label when it is
    one of the tied ones, and otherwise leaves no gold. Without any label the imported one
    stands. `how` is "majority", "majority_tiebreak_imported", "imported" or None.

    >>> majority_gold(["FORWARD", "FORWARD", "SIMILAR"])
    ('FORWARD', 'majority', False)
    >>> majority_gold(["FORWARD", "SIMILAR"], "SIMILAR")
    ('SIMILAR', 'majority_tiebreak_imported', True)
    >>> majority_gold(["FORWARD", "SIMILAR"])
    (None, None, True)
    >>> majority_gold([], "RELATED")
    ('RELATED', 'imported', False)
    """
    counts = Counter(label for label in labels if isinstance(label, str))
    if not counts:
        return (imported or None), ("imported" if imported else None), False
    top = max(counts.values())
    leaders = [label for label, n in counts.items() if n == top]
    if len(leaders) == 1:
        return leaders[0], "majority", False
    if imported in leaders:
        return imported, "majority_tiebreak_imported", True
    return None, None, True


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


def coherence_rows(pairs_by_annotator: dict[str, list[tuple[str, str, str | None]]]) -> list[dict]:
    """Per annotator soft and hard coherence from (label on original, label on reversed,
    gold of the original or None). Hard coherence counts only pairs with a gold."""
    rows = []
    for annotator in sorted(pairs_by_annotator):
        pairs = pairs_by_annotator[annotator]
        soft = soft_coherence([(a, b) for a, b, _gold in pairs])
        hard = hard_coherence([(a, b, gold) for a, b, gold in pairs if gold])
        rows.append(
            {
                "annotator": annotator,
                "probes": len(pairs),
                "soft": soft.score,
                "soft_coherent": soft.coherent,
                "hard": hard.score,
                "hard_coherent": hard.coherent,
                "hard_total": hard.total,
            }
        )
    return rows


class PhrasePairKind(Kind):
    name = "phrase_pair"
    title = "Fine-grained phrase pairs (PhrasIS)"
    template = "annotation/annotate_phrase.html"
    extra_formats = ("phrasis",)
    # probe_seed 0: probe draws keyed by the server's secret; any other value makes them
    # reproducible from the settings alone (tests, demos).
    default_settings = {"labels_per_item": 3, "probe_rate": 0.1, "probe_seed": 0}
    computes_agreement = True
    page_urls = ("annotation.urls_phrase",)
    api_urls = ("api.urls_phrase",)

    # --- settings ---------------------------------------------------------------------------

    def clean_settings(self, settings: Any) -> dict:
        # JSON has one number type: {"probe_rate": 0} is as good as 0.0.
        if isinstance(settings, dict) and type(settings.get("probe_rate")) is int:
            settings = {**settings, "probe_rate": float(settings["probe_rate"])}
        return super().clean_settings(settings)

    def check_settings(self, settings: dict) -> None:
        if not 1 <= settings["labels_per_item"] <= 100:
            raise InvalidInput("must be between 1 and 100", field="settings.labels_per_item")
        if not 0.0 <= settings["probe_rate"] <= 0.5:
            # Above one half, most of an annotator's work would be probes.
            raise InvalidInput("must be between 0 and 0.5", field="settings.probe_rate")
        check_range(settings, "probe_seed", *SEED_RANGE)

    # --- import -----------------------------------------------------------------------------

    def parse_record(self, record: dict, row: int) -> tuple[ItemRow | None, list[FieldError]]:
        problems = RowProblems(row)
        common = self.common_fields(record, problems)
        left = require_text(record, "left", problems)
        right = require_text(record, "right", problems)
        for name, text in (("left", left), ("right", right)):
            if len(text) > MAX_PHRASE_LENGTH:
                problems.add(name, f"is longer than {MAX_PHRASE_LENGTH} characters")
        if PROBE_MARK in common["external_id"]:
            problems.add("id", f"must not contain {PROBE_MARK!r} (it marks reversed probe copies)")
        label = ""
        if record.get("label") not in (None, ""):
            label = canonical_label(record["label"]) or ""
            if not label:
                problems.add("label", f"must be one of {', '.join(LABELS)} (or {', '.join(CODES)})")
        source = require_text(record, "source", problems, required=False, identifier=True)
        if source == ALL_SOURCES:
            problems.add("source", f"{ALL_SOURCES!r} names the overall agreement scope; choose another name")
        score = record.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float, str))):
            problems.add("score", "must be a number or a string")
        elif score not in (None, "") and not finite_score(score):
            problems.add("score", "must be a finite number")
        payload: dict[str, Any] = {"left": left, "right": right}
        for name in ("phrasis", "extra"):
            value = record.get(name)
            if value is None:
                continue
            if not isinstance(value, dict):
                problems.add(name, "must be an object")
            elif name == "phrasis" and not all(isinstance(v, str) for v in value.values()):
                problems.add(name, "must map column names to strings")
            elif name == "extra" and value:
                store_extra(payload, value)
            elif value:
                payload[name] = value
        if problems.errors:
            return None, problems.errors
        if source:
            payload["source"] = source
        if score not in (None, ""):
            payload["score"] = score
        return ItemRow(payload=payload, reference_label=label, position=row, **common), []

    def read_format(self, fmt: str, text: str, filename: str) -> Iterator[tuple[int, dict]]:
        if fmt != "phrasis":
            yield from super().read_format(fmt, text, filename)
            return
        yield from read_phrasis(text, filename)

    # --- annotating -------------------------------------------------------------------------

    def votes_needed(self, item, settings: dict) -> int:
        # A probe belongs to the one annotator it was made for.
        return 1 if item.probe_of_id else settings["labels_per_item"]

    def annotator_payload(self, item) -> dict:
        return {"left": item.payload["left"], "right": item.payload["right"]}

    def clean_value(self, value: Any, item) -> dict:
        if not isinstance(value, dict):
            raise InvalidInput('must be an object like {"label": "EQUIVALENT"}', field="value")
        unknown = set(value) - {"label"}
        if unknown:
            raise InvalidInput("unknown field(s); expected only label", field="value")
        label = value.get("label")
        if label not in LABELS:
            raise InvalidInput(f"must be one of {', '.join(LABELS)}", field="value.label")
        return {"label": label}

    def after_submit(self, annotation, item, settings: dict) -> None:
        """Once an ordinary item has all its labels, store its majority gold (the items
        list and exports show it). Runs inside the submit transaction, item locked."""
        if item.probe_of_id:
            return
        from annotation.models import Annotation

        labels = [
            value.get("label")
            for value in Annotation.objects.filter(item=item, round=item.round).values_list("value", flat=True)
            if isinstance(value, dict)
        ]
        if len(labels) < settings["labels_per_item"]:
            return
        gold, _how, _tie = majority_gold(labels, item.reference_label)
        item.gold_label = gold or ""
        item.save(update_fields=["gold_label"])

    def probe_for_annotator(self, project, user, settings: dict, *, last_group: str | None, now) -> int | None:
        """A reversed copy of a pair this annotator labeled, or None.

        The share of probes among the annotator's items is kept at `probe_rate`: with `o`
        ordinary items and `p` probes held (submitted or claimed), `owed = o·r/(1−r) − p`
        probes are due; a probe is handed out when owed ≥ 1, and with probability `owed`
        when 0 < owed < 1, so probes fall at random places but the share stays within one
        probe of the target. The original is drawn at random among the annotator's labeled
        pairs that have no live probe for them yet, never the annotator's latest item, and
        preferably from another group than the latest item's.

        Called by the assignment engine while it holds the caller's membership row lock,
        so one annotator's calls are serialised: `get_or_create` of the per-annotator probe
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

    # --- results ----------------------------------------------------------------------------

    def report_sections(self, project) -> dict:
        """Per annotator soft/hard coherence, probe counts and the label distribution per
        source (cast labels of ordinary items, and imported labels). Two queries."""
        from django.contrib.auth import get_user_model
        from django.db.models import Count, F
        from django.db.models.fields.json import KT, KeyTextTransform

        from annotation.models import Annotation, Item

        rows = list(
            Annotation.objects.filter(item__project=project, round=F("item__round"))
            .annotate(label=KT("value__label"), source=KeyTextTransform("source", "item__payload"))
            .values_list("item_id", "annotator_id", "label", "item__probe_of_id", "item__reference_label", "source")
        )
        imported = (
            Item.objects.filter(project=project, probe_of__isnull=True)
            .annotate(source=KT("payload__source"))
            .exclude(reference_label="")
            .order_by()
            .values_list("source", "reference_label")
            .annotate(n=Count("pk"))
        )
        by_item_annotator: dict[tuple[int, int], str] = {}
        cast_by_item: dict[int, list[str]] = defaultdict(list)
        reference: dict[int, str] = {}
        distribution: dict[str, Counter] = defaultdict(Counter)
        for item_id, annotator_id, label, probe_of, ref, source in rows:
            if probe_of or label not in LABELS:
                continue
            by_item_annotator[(item_id, annotator_id)] = label
            cast_by_item[item_id].append(label)
            reference[item_id] = ref
            distribution[source or ""][label] += 1
        pairs: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
        for _item_id, annotator_id, label, probe_of, _ref, _source in rows:
            if not probe_of or label not in LABELS:
                continue
            original_label = by_item_annotator.get((probe_of, annotator_id))
            if original_label is None:
                continue
            gold = reference.get(probe_of) or majority_gold(cast_by_item[probe_of])[0]
            pairs[annotator_id].append((original_label, label, gold))
        names = dict(get_user_model().objects.filter(pk__in=list(pairs)).values_list("pk", "username")) if pairs else {}
        imported_distribution: dict[str, Counter] = defaultdict(Counter)
        for source, label, n in imported:
            imported_distribution[source or ""][label] += n

        def table(counters: dict[str, Counter]) -> list[dict]:
            return [
                {"source": source, "total": sum(c.values()), "labels": {label: c.get(label, 0) for label in LABELS}}
                for source, c in sorted(counters.items())
            ]

        return {
            "coherence": {
                "per_annotator": coherence_rows({names.get(uid, str(uid)): p for uid, p in pairs.items()}),
                "hard_gold": "imported label of the original pair, else the majority label of its annotators",
                "probe_rate": self.settings_for(project.settings)["probe_rate"],
            },
            "label_distribution": table(distribution),
            "imported_label_distribution": table(imported_distribution),
        }

    def compute_agreement(self, project, job) -> dict:
        """Nominal alpha with a bootstrap CI over ordinary items (probes left out), overall
        (scope {"source": "all"}) and per source ({"source": <name>}; items without a
        source count only overall). Upserted on (project, scope, level); sources that no
        longer have labels lose their report."""
        import numpy as np
        from django.db.models import F
        from django.db.models.fields.json import KT, KeyTextTransform
        from django.utils import timezone

        from annotation.models import AgreementReport, Annotation
        from annotation.services.agreement import agreement_reports_replace, alpha_with_ci, bootstrap_details, scope_key
        from annotation.services.jobs import job_set_progress

        rows = list(
            Annotation.objects.filter(item__project=project, item__probe_of__isnull=True, round=F("item__round"))
            .annotate(label=KT("value__label"), source=KeyTextTransform("source", "item__payload"))
            .values_list("item_id", "annotator_id", "label", "source")
        )
        rows = [row for row in rows if row[2] in LABELS]
        job_set_progress(job.pk, 0.2)
        sources = sorted({row[3] for row in rows if row[3]})
        scopes = [(ALL_SOURCES, rows)] + [(source, [row for row in rows if row[3] == source]) for source in sources]
        now = timezone.now()
        reports = []
        for position, (name, scoped) in enumerate(scopes, start=1):
            units = sorted({row[0] for row in scoped})
            coders = sorted({row[1] for row in scoped})
            unit_index = {pk: i for i, pk in enumerate(units)}
            coder_index = {pk: i for i, pk in enumerate(coders)}
            matrix = np.full((len(coders), len(units)), np.nan)
            for item_id, annotator_id, label, _source in scoped:
                matrix[coder_index[annotator_id], unit_index[item_id]] = LABELS.index(label)
            point, boot, reason = alpha_with_ci(matrix, "nominal") if coders else (None, None, "no labels")
            scope = {"source": name}
            reports.append(
                AgreementReport(
                    project=project,
                    scope=scope,
                    scope_key=scope_key(scope),
                    level="nominal",
                    job=job,
                    computed_at=now,
                    alpha=point.alpha if point else None,
                    ci_low=boot.ci_low if boot else None,
                    ci_high=boot.ci_high if boot else None,
                    units=point.units if point else 0,
                    coders=point.coders if point else 0,
                    reason=reason,
                    details={"units_total": len(units), "labels": list(LABELS), "bootstrap": bootstrap_details(boot)},
                )
            )
            job_set_progress(job.pk, 0.2 + 0.7 * position / len(scopes))
        return agreement_reports_replace(
            reports, AgreementReport.objects.filter(project=project, level="nominal", scope__has_key="source")
        )

    # --- export -----------------------------------------------------------------------------

    def export_record(self, item, facts) -> dict:
        """left and right as stored; the imported label; the gold (see the module
        docstring) with how it was decided; votes per label of the current round."""
        cast = [value.get("label") for _annotator, value in facts.annotations if isinstance(value, dict)]
        gold, how, tie = majority_gold(cast, item.reference_label)
        counts = Counter(label for label in cast if isinstance(label, str))
        payload = item.payload
        return {
            "id": item.external_id,
            "left": payload.get("left", ""),
            "right": payload.get("right", ""),
            "source": payload.get("source", ""),
            "score": payload.get("score"),
            "label": item.reference_label or None,
            "gold_label": gold,
            "gold_source": how,
            "tie": tie,
            "votes": {label: counts.get(label, 0) for label in LABELS},
            "n": len(cast),
            "group": item.group,
            "split": item.split,
            "status": item.status,
            "annotators": [annotator for annotator, _value in facts.annotations],
            "annotator_labels": cast,
            "phrasis": payload.get("phrasis") or {},
            "extra": extra_in_order(payload),
        }

    def export_csv_columns(self) -> tuple[str, ...]:
        return (
            "id", "left", "right", "source", "score", "label", "gold_label", "gold_source", "tie",
            *(f"votes_{label}" for label in LABELS),
            "n", "group", "split", "status", "annotators", "annotator_labels", "phrasis", "extra",
        )  # fmt: skip

    def phrasis_row(self, item, cast: list[str]) -> list[str]:
        """One line of PhrasIS's layout: the imported cells as stored, the label cell
        replaced by the gold's code when the annotators decided a gold other than the
        imported label (the raw imported cell, spaces and all, otherwise)."""
        payload = item.payload
        cells = payload.get("phrasis") or {}
        gold, how, _tie = majority_gold(cast, item.reference_label)
        label_cell = cells.get("label", LABEL_TO_CODE.get(item.reference_label, ""))
        if gold and how != "imported" and gold != canonical_label(label_cell):
            label_cell = LABEL_TO_CODE[gold]
        score = cells.get("score")
        if score is None:
            score = "" if payload.get("score") is None else str(payload.get("score"))
        return [
            score,
            label_cell,
            payload.get("left", ""),
            payload.get("right", ""),
            cells.get("left_positions", ""),
            cells.get("right_positions", ""),
            cells.get("pair", ""),
        ]


def reversed_payload(payload: dict) -> dict:
    """The original's payload with left and right swapped (PhrasIS cells are not copied:
    a probe is never exported)."""
    reversed_ = {"left": payload.get("right", ""), "right": payload.get("left", "")}
    if payload.get("source"):
        reversed_["source"] = payload["source"]
    return reversed_


def phrasis_name(filename: str) -> dict[str, str] | None:
    """{"split", "source", "polarity"} from `PhrasIS.<split>.<source>.<polarity>.txt`."""
    name = PurePath(filename or "").name
    stem = name[:-4] if name.endswith(".txt") else name
    match = PHRASIS_NAME.match(stem)
    return match.groupdict() if match else None


def finite_score(score: int | float | str, *, text_must_be_number: bool = False) -> bool:
    """Whether a similarity score can be stored and read back as a number: "nan", "inf" and
    1e999 parse as floats but are no score (and jsonb refuses a NaN or infinite float).
    Other text is a score only where `text_must_be_number` (PhrasIS's numeric column).

    >>> [finite_score(s) for s in (4, "3.5", "n/a", "nan", float("inf"), "1e999")]
    [True, True, True, False, False, False]
    """
    try:
        return math.isfinite(float(score))
    except OverflowError:
        return False
    except ValueError:
        return not text_must_be_number


def read_phrasis(text: str, filename: str) -> Iterator[tuple[int, dict]]:
    """PhrasIS's TSV: seven tab-separated columns, no header, no quoting (a `"` is an
    ordinary character). Lines are split on LF only; blank lines are skipped."""
    parts = phrasis_name(filename)
    if parts is None:
        raise InvalidInput(
            "a PhrasIS file is named PhrasIS.<split>.<source>.<polarity>.txt (e.g. PhrasIS.train.images.positives.txt)",
            field="file",
        )
    stem = PurePath(filename).name.removesuffix(".txt")
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "":
            continue
        cells = line.split("\t")
        if len(cells) != 7:
            yield number, {"_error": f"has {len(cells)} tab-separated columns; PhrasIS lines have 7"}
            continue
        score, label, left, right, left_positions, right_positions, pair = cells
        if not finite_score(score, text_must_be_number=True):
            yield number, {"_error": f"column 1 (similarity score) {score!r} is not a finite number"}
            continue
        record = {
            "id": f"{stem}-{number}",
            "left": left,
            "right": right,
            "label": label,
            "source": parts["source"],
            "score": score,
            "split": parts["split"],
            "group": f"{parts['source']}-{parts['split']}-{pair.strip()}",
            "phrasis": {
                "score": score,
                "label": label,
                "left_positions": left_positions,
                "right_positions": right_positions,
                "pair": pair,
                "file": PurePath(filename).name,
                "polarity": parts["polarity"],
            },
        }
        yield number, record


EXPORT_CHUNK = 2000


def phrasis_export_prepare(project, *, file: str | None = None, status: str | None = None, split: str | None = None):
    """The ordinary (non-probe) items of a PhrasIS export, in source order; `file` keeps
    the items imported from one PhrasIS file, `status` defaults to `all` (a PhrasIS file
    lists every pair), `split` filters. Bad parameters → 400 naming them."""
    from annotation.models import Item
    from annotation.services.exports import EXPORT_STATUSES

    status = status or "all"
    if status not in EXPORT_STATUSES:
        raise InvalidInput(f"must be one of {', '.join(EXPORT_STATUSES)}", field="status")
    items = Item.objects.filter(project=project, probe_of__isnull=True)
    if status != "all":
        items = items.filter(status=status)
    if split:
        items = items.filter(split=split)
    if file:
        items = items.filter(payload__phrasis__file=file)
    return items.order_by("position", "id")


def phrasis_export_stream(kind: PhrasePairKind, items) -> Iterator[bytes]:
    """PhrasIS lines as UTF-8 chunks: no header, no BOM, LF endings, cells joined with tabs
    exactly as stored (csv.writer would quote a cell holding `"`, which PhrasIS never
    does). One query for the items and one for each chunk's annotations."""
    from itertools import islice

    from django.db.models import F

    from annotation.models import Annotation

    iterator = items.iterator(chunk_size=EXPORT_CHUNK)
    while chunk := list(islice(iterator, EXPORT_CHUNK)):
        cast: dict[int, list[str]] = defaultdict(list)
        for item_id, value in (
            Annotation.objects.filter(item_id__in=[item.pk for item in chunk], round=F("item__round"))
            .order_by("id")
            .values_list("item_id", "value")
        ):
            if isinstance(value, dict) and isinstance(value.get("label"), str):
                cast[item_id].append(value["label"])
        yield "".join("\t".join(kind.phrasis_row(item, cast[item.pk])) + "\n" for item in chunk).encode("utf-8")
