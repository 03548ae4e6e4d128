"""The dataset card of a release: `README.md` with the YAML header the Hugging Face Hub reads
(language, license, task_categories, size_categories, configs with data_files per split) and
a body written from the project: the protocol, counts per split and label, statistics per
split and label as the papers' Table 2 gives them,
agreement with and without adjudicated items, removals with their reasons, the split
parameters and leak check, and the decision methods used (docs/api.md "Releases").

The header is written as JSON values, which YAML reads as they are: no YAML library, and no
quoting mistakes with Hebrew or Persian text."""

from __future__ import annotations

import json
from collections import Counter

from annotation.kinds.registry import get_kind
from annotation.metrics.bias import tokens
from annotation.metrics.dataset_statistics import split_statistics
from annotation.models import Decision, Item, ItemRevision, Membership, Release
from annotation.release.curation_jobs import curation_run_latest
from annotation.selectors.annotator_quality import agreement_with_and_without_adjudicated
from annotation.selectors.reports import agreement_reports_for_project
from annotation.text_tools import OWN, text_tools

# The Hub's size categories, upper bounds exclusive.
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
)


def size_category(n: int) -> str:
    """The Hub's size category of a dataset of `n` rows.

    >>> size_category(999), size_category(1000), size_category(250_000)
    ('n<1K', '1K<n<10K', '100K<n<1M')"""
    for bound, name in SIZE_CATEGORIES:
        if n < bound:
            return name
    return "n>10M"


def _yaml_header(release: Release, kind, counts: dict, files: list[str], configs: dict) -> str:
    project = release.project
    total = sum(sum(per_label.values()) for per_label in counts.values())
    lines = [
        "---",
        f"language:\n- {json.dumps(project.language)}",
        f"license: {json.dumps(release.license)}",
        f"pretty_name: {json.dumps(project.name, ensure_ascii=False)}",
        f"task_categories:\n- {json.dumps(kind.hub_task_category)}",
        f"size_categories:\n- {json.dumps(size_category(total))}",
        "configs:",
        "- config_name: default",
        "  data_files:",
    ]
    for split in counts:
        path = f"data/{split}.jsonl"
        if path in files:
            lines.append(f"  - split: {json.dumps(split)}\n    path: {json.dumps(path)}")
    # The kind's own files the Hub reads with the JSONL reader (the first config's), as
    # further configs: `load_dataset(folder, "lchaim")`.
    for name, paths in sorted(configs.items()):
        lines += [f"- config_name: {json.dumps(name, ensure_ascii=False)}", "  data_files:"]
        for split, path in sorted(paths.items()):
            lines.append(f"  - split: {json.dumps(split)}\n    path: {json.dumps(path, ensure_ascii=False)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _table(header: list[str], rows: list[list]) -> list[str]:
    def cell(value) -> str:
        text = "" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
        return text.replace("|", "\\|").replace("\n", " ")

    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows),
        "",
    ]


def _statistics(release: Release, manifest: dict, kind) -> list[str]:
    """Per split, a table in the manner of FarsTail's Table 2: a row for all items and one
    per label, with the items, their share, the tokens per text of each text field (mean,
    min, max) and the vocabulary (annotation.metrics.dataset_statistics)."""
    rows = Item.objects.filter(project=release.project, external_id__in=list(manifest)).values_list(
        "external_id", "payload"
    )

    def read():
        for external_id, payload in rows.iterator(chunk_size=2000):
            entry = manifest[external_id]
            yield entry["split"], entry["label"], kind.release_texts(payload)

    tools = text_tools(release.project.language)
    table = split_statistics(read(), lambda text: tokens(text, tokenizer=tools.tokenizer))
    fields = list(dict.fromkeys(name for row in table for name in row["fields"]))
    cut = (
        "Tokens are words (joined across ZWNJ) and punctuation marks"
        if tools.name == OWN
        else f"Tokens are those of Hazm's word tokenizer ({tools.name}; verb parts joined)"
    )
    out = [
        "## Statistics",
        "",
        f"{cut}, case-folded; the vocabulary counts the distinct tokens of all the row's texts.",
        "",
    ]
    for split in dict.fromkeys(row["split"] for row in table):
        out += [f"### {split}", ""]
        out += _table(
            ["class", "items", "share", *(f"{name} tokens (mean / min / max)" for name in fields), "vocabulary"],
            [
                [
                    "all" if row["label"] is None else (row["label"] or "(no label)"),
                    row["items"],
                    f"{row['share']:.1%}",
                    *(_lengths_cell(row["fields"].get(name)) for name in fields),
                    row["vocabulary"],
                ]
                for row in table
                if row["split"] == split
            ],
        )
    return out


def _lengths_cell(figures: dict | None) -> str:
    if not figures or figures["tokens_mean"] is None:
        return ""
    return f"{figures['tokens_mean']:.2f} / {figures['tokens_min']} / {figures['tokens_max']}"


def _removals(project) -> list[list]:
    """Removed items by reason: near-duplicate, back-translation filter, withdrawn by the
    author, or the method of the decision that removed them (a failed consensus)."""
    removed = Item.objects.filter(project=project, probe_of__isnull=True, status=Item.Status.REMOVED)
    withdrawn = set(
        ItemRevision.objects.filter(item__in=removed, action=ItemRevision.Action.WITHDRAWN).values_list(
            "item_id", flat=True
        )
    )
    reasons: Counter = Counter()
    unexplained = []
    for pk, computed in removed.values_list("pk", "computed"):
        computed = computed if isinstance(computed, dict) else {}
        if isinstance(computed.get("duplicate"), dict) and "removed" in computed["duplicate"]:
            reasons["near-duplicate"] += 1
        elif isinstance(computed.get("back_translation"), dict) and "removed" in computed["back_translation"]:
            reasons["back-translation filter"] += 1
        elif pk in withdrawn:
            reasons["withdrawn by its author"] += 1
        else:
            unexplained.append(pk)
    # The last removing decision of each item names the method.
    last_method: dict[int, str] = {}
    for item_id, method in (
        Decision.objects.filter(item_id__in=unexplained, status=Item.Status.REMOVED)
        .order_by("item_id", "id")
        .values_list("item_id", "method")
    ):
        last_method[item_id] = method
    for pk in unexplained:
        method = last_method.get(pk)
        reasons[f"consensus failure ({method})" if method else "removed"] += 1
    return [[reason, n] for reason, n in sorted(reasons.items())]


def release_card(release: Release, manifest: dict, counts: dict, files: list[str], configs: dict | None = None) -> str:
    """The card's text (Markdown with the YAML header)."""
    project = release.project
    kind = get_kind(project.kind)
    settings = kind.project_settings(project)
    labels = sorted({label for per_label in counts.values() for label in per_label})
    total = sum(sum(per_label.values()) for per_label in counts.values())
    annotators = Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
    lifecycle = Counter(annotators.values_list("status", flat=True))
    out = [_yaml_header(release, kind, counts, files, configs or {})]
    out += [f"# {project.name} — {release.version}", ""]
    if release.description:
        out += [release.description, ""]
    out += [
        f"Released from Mashov project `{project.slug}` ({kind.name}: {kind.title}) under `{release.license}`: "
        f"{total} items in {len(counts)} split(s). The files are frozen; `SHA256SUMS` lists their checksums.",
        "",
        "## Protocol",
        "",
        *_table(
            ["setting", "value"],
            [["kind", kind.name], ["language", project.language]]
            + [[key, json.dumps(value, ensure_ascii=False)] for key, value in sorted(settings.items())]
            + [["annotators", sum(lifecycle.values())]]
            + [[f"annotators {status}", n] for status, n in sorted(lifecycle.items())],
        ),
        "## Counts per split and label",
        "",
        *_table(
            ["split", *(label or "(no label)" for label in labels), "total"],
            [
                [split, *(per_label.get(label, 0) for label in labels), sum(per_label.values())]
                for split, per_label in counts.items()
            ],
        ),
        *_statistics(release, manifest, kind),
    ]
    out += _agreement(project)
    removals = _removals(project)
    out += ["## Removals", ""]
    out += _table(["reason", "items"], removals) if removals else ["No item was removed.", ""]
    out += _curation(project)
    methods = Counter((entry["decision"] or {}).get("method") or "(none)" for entry in manifest.values())
    out += [
        "## Decision methods",
        "",
        "The method of each released item's effective decision (the decision ledger).",
        "",
        *_table(["method", "items"], [[m, n] for m, n in sorted(methods.items())]),
        "## Files",
        "",
        "Per split: `data/<split>.jsonl` (the project's JSONL export), `data/<split>.parquet` (the same "
        "records as typed columns, one schema for every split), and the dataset's own formats where the "
        "kind has them, as its seed published them. Load with:",
        "",
        "```python",
        "from datasets import load_dataset",
        'dataset = load_dataset("path/to/this/folder")',
        # The seed's files the same reader reads, by config name.
        *(
            f"load_dataset({json.dumps('path/to/this/folder')}, {json.dumps(name, ensure_ascii=False)})"
            for name in sorted(configs or {})
        ),
        "```",
        "",
    ]
    return "\n".join(out)


def _agreement(project) -> list[str]:
    out = ["## Agreement", ""]
    reports = agreement_reports_for_project(project)
    if reports:
        out += _table(
            ["scope", "level", "alpha", "95% CI", "units", "coders"],
            [
                [
                    json.dumps(r["scope"], ensure_ascii=False, sort_keys=True),
                    r["level"],
                    r["alpha"],
                    f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else r.get("reason", ""),
                    r["units"],
                    r["coders"],
                ]
                for r in reports
            ],
        )
    else:
        out += ["No agreement report has been computed for this project.", ""]
    adjudicated = agreement_with_and_without_adjudicated(project)
    rows = [
        [name.replace("_", " "), figures.get("items"), figures.get("alpha"), figures.get("agreement_with_consensus")]
        for name in ("with_adjudicated", "without_adjudicated")
        if isinstance(figures := adjudicated.get(name), dict)
    ]
    if rows:
        out += [f"Adjudicated items: {adjudicated.get('adjudicated', 0)}.", ""]
        out += _table(["items", "count", "alpha (nominal)", "agreement with consensus"], rows)
    return out


def _curation(project) -> list[str]:
    out = []
    splits = curation_run_latest(project, "splits")
    if splits is not None:
        out += ["## Splits", "", f"Parameters: `{json.dumps(splits.params, ensure_ascii=False, sort_keys=True)}`.", ""]
    leaks = curation_run_latest(project, "leaks")
    if leaks is not None:
        result = json.dumps(leaks.result, ensure_ascii=False, sort_keys=True)
        out += [
            "## Leak check",
            "",
            f"Parameters: `{json.dumps(leaks.params, sort_keys=True)}`.",
            "",
            f"Result: `{result}`.",
            "",
        ]
    duplicates = curation_run_latest(project, "duplicates")
    if duplicates is not None:
        out += ["## Near-duplicate search", "", f"Parameters: `{json.dumps(duplicates.params, sort_keys=True)}`.", ""]
    return out
