"""PhrasIS's own files, read on import and written on export.

`PhrasIS.<split>.<source>.<polarity>.txt`: seven tab-separated columns, no header: score,
label, phrase 1, phrase 2, token positions 1, token positions 2, sentence-pair number.
Every cell is kept raw in `payload.phrasis` (trailing spaces are data) together with the
file name and polarity; source and split come
from the file name; the group is `<source>-<split>-<pair number>` (all chunks of one
sentence pair); the external id is `<file stem>-<line number>`, so re-importing a file
skips every row. Probes are left out of the PhrasIS export."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import PurePath

from django.utils.translation import gettext

from annotation.errors import InvalidInput
from annotation.rows import delimited_line, read_csv_lines
from annotation.upload_text import FileText
from annotation.wording import join_list

from .labels import LABEL_TO_CODE, canonical_label

PHRASIS_COLUMNS = ("score", "label", "left_positions", "right_positions", "pair")
PHRASIS_NAME = re.compile(r"^PhrasIS\.(?P<split>[^.]+)\.(?P<source>[^.]+)\.(?P<polarity>[^.]+)$")
EXPORT_CHUNK = 2000


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


def read_phrasis(text: FileText, filename: str) -> Iterator[tuple[int, dict]]:
    """PhrasIS's TSV: seven tab-separated columns, no header, read as pandas.read_csv(sep="\t")
    reads it (PhrasIS's own loader): a cell that begins with `"` is quoted (CSV-style, `""`
    for a quote, and it may hold TABs and line ends), any other `"` is an ordinary
    character. Blank lines are skipped; external ids count lines, the line a record starts
    on (the published files, which quote nothing, have one record a line)."""
    parts = phrasis_name(filename)
    if parts is None:
        raise InvalidInput(
            gettext("a PhrasIS file is named %(pattern)s (for example %(example)s)")
            % {"pattern": "PhrasIS.<split>.<source>.<polarity>.txt", "example": "PhrasIS.train.images.positives.txt"},
            field="file",
        )
    stem = PurePath(filename).name.removesuffix(".txt")
    for _row, number, cells in read_csv_lines(text, delimiter="\t", skip_blank=True):
        if len(cells) != 7:
            yield (
                number,
                {"_error": gettext("has %(n)s tab-separated columns; PhrasIS lines have 7") % {"n": len(cells)}},
            )
            continue
        score, label, left, right, left_positions, right_positions, pair = cells
        # An empty score is a pair without one (Mashov writes so for pairs imported without).
        if score != "" and not finite_score(score, text_must_be_number=True):
            yield (
                number,
                {
                    "_error": gettext("column 1 (similarity score) “%(score)s” is not a finite number")
                    % {"score": score}
                },
            )
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


def phrasis_row(item) -> list[str]:
    """One line of PhrasIS's layout: the imported cells as stored, the label cell
    replaced by the gold's code when the item's decided gold (`Item.gold_label`, from the
    decision ledger: the round's rule, the chosen method or an adjudicator) differs from
    the imported label; the raw imported cell, spaces and all, otherwise."""
    payload = item.payload
    cells = payload.get("phrasis") or {}
    label_cell = cells.get("label", LABEL_TO_CODE.get(item.reference_label, ""))
    gold = item.gold_label
    if gold and gold != canonical_label(label_cell):
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


def phrasis_export_prepare(project, *, file: str | None = None, status: str | None = None, split: str | None = None):
    """The ordinary (non-probe) items of a PhrasIS export, in source order; `file` keeps
    the items imported from one PhrasIS file, `status` defaults to `all` (a PhrasIS file
    lists every pair), `split` filters. Bad parameters → 400 naming them."""
    from annotation.models import Item
    from annotation.services.exports import EXPORT_STATUSES

    status = status or "all"
    if status not in EXPORT_STATUSES:
        raise InvalidInput(
            gettext("must be one of %(choices)s") % {"choices": join_list(EXPORT_STATUSES)}, field="status"
        )
    items = Item.objects.filter(project=project, probe_of__isnull=True)
    if status != "all":
        items = items.filter(status=status)
    if split:
        items = items.filter(split=split)
    if file:
        items = items.filter(payload__phrasis__file=file)
    return items.order_by("position", "id")


def phrasis_export_stream(items) -> Iterator[bytes]:
    """PhrasIS lines as UTF-8 chunks: no header, no BOM, LF endings, cells joined with tabs
    exactly as stored, except a cell holding a TAB, CR or LF or beginning with `"`, which is
    quoted as `read_phrasis` and pandas read it (csv.writer would also quote a `"` inside a
    cell, which PhrasIS's files never do). One query for each chunk of items."""
    from itertools import islice

    iterator = items.iterator(chunk_size=EXPORT_CHUNK)
    while chunk := list(islice(iterator, EXPORT_CHUNK)):
        yield "".join(delimited_line(phrasis_row(item), "\t", "\n", quote_any_quote=False) for item in chunk).encode(
            "utf-8"
        )


def phrasis_release_name(item, split: str) -> str:
    """The PhrasIS file an item goes to in a release: `PhrasIS.<split>.<source>.<polarity>.txt`,
    the source and polarity of the file it was imported from; for a pair imported otherwise,
    its `source` (else `pairs`) and the polarity its label gives (unrelated pairs are
    PhrasIS's negatives). Each part keeps letters, digits, `_` and `-` only, as the name is
    split on dots."""
    payload = item.payload if isinstance(item.payload, dict) else {}
    cells = payload.get("phrasis") if isinstance(payload.get("phrasis"), dict) else {}
    source = payload.get("source") or "pairs"
    polarity = cells.get("polarity")
    if not polarity:
        polarity = "negatives" if (item.gold_label or item.reference_label) == "UNRELATED" else "positives"
    return ".".join(("PhrasIS", *(re.sub(r"[^\w-]", "_", part) for part in (split, str(source), str(polarity))), "txt"))


def phrasis_release_files(items, split: str) -> Iterator[tuple[str, bytes]]:
    """(file name, PhrasIS lines) of a release's split: the items in source order, each in
    the file of its source and polarity (`phrasis_release_name`), as `phrasis_export_stream`
    writes them."""
    lines: dict[str, list[str]] = {}
    for item in items.iterator(chunk_size=EXPORT_CHUNK):
        line = delimited_line(phrasis_row(item), "\t", "\n", quote_any_quote=False)
        lines.setdefault(phrasis_release_name(item, split), []).append(line)
    for name, text in lines.items():
        yield name, "".join(text).encode("utf-8")
