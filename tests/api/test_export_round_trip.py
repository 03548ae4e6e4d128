"""Every export imports back to the same items, whatever the authored text holds: CR, LF,
TAB, quotes, formula-like cells (`=1+1`, `@SUM(1)`, after spaces, NBSP, RLM/LRM/ZWNJ or as
fullwidth `＝`) and bidi controls. For every kind and every format it exports —
`nli_relabel` and `label_test`: jsonl, csv, farstail; `phrase_pair`: jsonl, csv, phrasis;
`qa_authoring`: jsonl, csv (its questions as JSON), squad and the per-question JSONL (imported as `questions`);
`translation_rating`, `summary_rating`, `nli_authoring`:
jsonl, csv — the items go in through a JSONL import (authoring), are rated where the kind
rates (so that the export carries its figures), go out through the export and in again
through the import of that format, into a fresh project: the same items (texts, labels,
questions, candidates, summaries, groups), in the same order. The
dataset layouts (FarsTail's and PhrasIS's TSV) are also read with pandas, as their own
loaders read them (`read_csv(sep="\t")`), and give the same cells. CSV cells that a
spreadsheet could run begin with `'` in the file; Mashov's CSV import takes it off again."""

import csv
import io
import itertools
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.rows import csv_neutralise

pytestmark = pytest.mark.django_db

BOM = "\ufeff"
# What makes a delimited file or a spreadsheet misread a cell, and some letters around it.
HOSTILE = ["\r", "\n", "\r\n", "\t", '"', "'", "=", "+", "-", "@", "＝", "＋", " ", "\u00a0", "\u200f", "\u200e",
           "\u200c", "\u202e", "\u2066", "\u2028", "\x85", ",", ";", "=1+1", "@SUM(1)", "-2", "א", "ب", "x", "۱"]  # fmt: skip
hostile_text = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=8).map("".join)
texts = st.lists(st.tuples(hostile_text, hostile_text), min_size=1, max_size=4)
_projects = itertools.count()


@pytest.fixture
def admin(make_user):
    return make_user("root", staff=True)


def new_project(admin, kind: str):
    from annotation.services.projects import project_create

    n = next(_projects)
    # Hostile cells are no language's prose: a summary project's language filter would hold them out.
    settings = {"hold_out_other_language": False} if kind == "summary_rating" else None
    return project_create(
        actor=admin, slug=f"round-trip-{n}", name=f"Round trip {n}", kind=kind, language="fa", settings=settings
    )


def import_file(project, data: bytes, fmt: str, filename: str) -> None:
    from annotation.services.imports import items_import

    result = items_import(project=project, data=data, fmt=fmt, filename=filename)
    assert result.job is None and result.created > 0


def export_file(project, fmt: str) -> bytes:
    from annotation.kinds.phrase.formats import phrasis_export_prepare, phrasis_export_stream
    from annotation.services.exports import export_prepare, export_stream

    if fmt == "phrasis":
        return b"".join(phrasis_export_stream(phrasis_export_prepare(project)))
    if fmt == "questions":
        from annotation.kinds.qa.formats import export_questions_stream

        # The per-question JSONL (GET .../questions/export/?format=jsonl), imported as `questions`.
        return b"".join(export_questions_stream(project, fmt="jsonl"))
    return b"".join(export_stream(export_prepare(project=project, fmt=fmt, status="all")))


def texts_of(project, fields: tuple[str, str]) -> list[tuple[str, str]]:
    from annotation.models import Item

    return [
        tuple(payload[name] for name in fields)
        for payload in Item.objects.filter(project=project).order_by("position", "id").values_list("payload", flat=True)
    ]


def authored(admin, kind: str, pairs: list[tuple[str, str]], fields: tuple[str, str], label: str):
    """A project of `kind` whose items carry `pairs`, imported as JSONL."""
    project = new_project(admin, kind)
    rows = [{"id": f"r{i}", fields[0]: a, fields[1]: b, "label": label} for i, (a, b) in enumerate(pairs)]
    import_file(
        project, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode(), "jsonl", "a.jsonl"
    )
    assert texts_of(project, fields) == pairs
    return project


def pandas_cells(data: bytes, header: bool) -> list[list[str]]:
    frame = pd.read_csv(
        io.BytesIO(data), sep="\t", header=0 if header else None, dtype=str, keep_default_na=False, encoding="utf-8"
    )
    return frame.values.tolist()


CASES = {
    # kind, payload fields, a label of the kind, the formats, the file name each is imported as
    "nli_relabel": (("premise", "hypothesis"), "entailment", {"jsonl": "x.jsonl", "csv": "x.csv", "farstail": "x.tsv"}),
    "label_test": (("premise", "hypothesis"), "neutral", {"jsonl": "x.jsonl", "csv": "x.csv", "farstail": "x.tsv"}),
    "phrase_pair": (
        ("left", "right"),
        "EQUIVALENT",
        {"jsonl": "x.jsonl", "csv": "x.csv", "phrasis": "PhrasIS.train.images.positives.txt"},
    ),
}


@pytest.mark.parametrize(("kind", "fmt"), [(kind, fmt) for kind, (_f, _l, formats) in CASES.items() for fmt in formats])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(pairs=texts)
def test_every_export_imports_back_to_the_same_items(admin, kind, fmt, pairs):
    fields, label, formats = CASES[kind]
    source = authored(admin, kind, pairs, fields, label)
    data = export_file(source, fmt)
    copy = new_project(admin, kind)
    import_file(copy, data, fmt, formats[fmt])
    assert texts_of(copy, fields) == pairs
    assert labels_of(copy) == labels_of(source)
    if fmt == "farstail":
        assert [row[:2] for row in pandas_cells(data, header=True)] == [list(pair) for pair in pairs]
    elif fmt == "phrasis":
        assert [row[2:4] for row in pandas_cells(data, header=False)] == [list(pair) for pair in pairs]
    elif fmt == "csv":
        # What a spreadsheet reads: no cell it could run, every text there with at most a `'` in front.
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8").removeprefix(BOM), newline="")))
        assert [(row[fields[0]], row[fields[1]]) for row in rows] == [
            tuple(map(csv_neutralise, pair)) for pair in pairs
        ]


@pytest.mark.parametrize(
    "cell",
    [
        "=1+1",
        "@SUM(1)",
        "+1",
        "-1",
        " =1",
        "\u00a0=1",
        "\u200f=1",
        "\u200e@x",
        "\u200c+1",
        "  \u200f -1",
        "＝1+1",
        "＋1",
        "\t=1",
        "\r=1",
    ],
)
def test_the_csv_export_neutralises_formulas_behind_invisible_characters(admin, cell):
    project = authored(admin, "nli_relabel", [(cell, "x")], ("premise", "hypothesis"), "entailment")
    data = export_file(project, "csv").decode("utf-8").removeprefix(BOM)
    [row] = list(csv.DictReader(io.StringIO(data, newline="")))
    assert row["premise"] == "'" + cell


def test_a_cr_or_a_tab_in_the_farstail_and_phrasis_files_is_quoted_not_a_new_row(admin):
    nli = authored(
        admin, "nli_relabel", [("a\rb", "c\td"), ("=1+1", "@SUM(1)")], ("premise", "hypothesis"), "entailment"
    )
    assert export_file(nli, "farstail") == b'premise\thypothesis\tlabel\n"a\rb"\t"c\td"\te\n=1+1\t@SUM(1)\te\n'
    phrase = authored(admin, "phrase_pair", [("a\rb", 'say "hi"'), ('"q"', "c\td")], ("left", "right"), "EQUIVALENT")
    assert export_file(phrase, "phrasis") == (b'\tEQUI\t"a\rb"\tsay "hi"\t\t\t\n\tEQUI\t"""q"""\t"c\td"\t\t\t\n')


# Question paragraphs: the paragraph's text is what an author writes around; the title is an
# identifier (no bidi controls), so it stays plain. A paragraph is never blank: a letter follows.
paragraphs = st.lists(hostile_text.map(lambda text: text + "א"), min_size=1, max_size=4)


@pytest.mark.parametrize(("fmt", "filename"), [("jsonl", "q.jsonl"), ("csv", "q.csv")])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(contexts=paragraphs)
def test_question_paragraphs_export_and_import_back_to_the_same_texts(admin, fmt, filename, contexts):
    from annotation.models import Item

    source = new_project(admin, "qa_authoring")
    rows = [{"id": f"p{i}", "title": f"כותרת {i}", "context": context} for i, context in enumerate(contexts)]
    import_file(
        source, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode(), "jsonl", "a.jsonl"
    )
    copy = new_project(admin, "qa_authoring")
    import_file(copy, export_file(source, fmt), fmt, filename)
    stored = (
        Item.objects.filter(project=copy).order_by("position", "id").values_list("payload__title", "payload__context")
    )
    assert list(stored) == [(row["title"], row["context"]) for row in rows]


def labels_of(project) -> list[str]:
    """The items' imported (reference) labels, in order."""
    from annotation.models import Item

    return list(
        Item.objects.filter(project=project).order_by("position", "id").values_list("reference_label", flat=True)
    )


def jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def stored(project, *, without=()) -> list[tuple]:
    """(payload without the keys in `without`, reference label, group) of every item, in order."""
    from annotation.models import Item

    rows = Item.objects.filter(project=project).order_by("position", "id")
    return [
        ({key: value for key, value in item.payload.items() if key not in without}, item.reference_label, item.group)
        for item in rows
    ]


def rate(project, values: list[dict], username: str) -> None:
    """One annotation with `value` on each item in order, stored as a submit stores it."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item

    user = get_user_model().objects.create_user(username=username, password="pass-word-123")
    now = timezone.now()
    for item, value in zip(Item.objects.filter(project=project).order_by("position", "id"), values):
        assignment = Assignment.objects.create(
            project=project, item=item, annotator=user, round=1, status="submitted", claimed_at=now, expires_at=now
        )
        Annotation.objects.create(assignment=assignment, item=item, annotator=user, round=1, value=value)


def round_trip(admin, kind: str, rows: list[dict], fmt: str, *, values=None, without=()) -> tuple:
    source = new_project(admin, kind)
    import_file(source, jsonl_bytes(rows), "jsonl", "a.jsonl")
    if values is not None:
        rate(source, [values(i) for i in range(len(rows))], f"rater-{source.slug}")
    data = export_file(source, fmt)
    copy = new_project(admin, kind)
    import_file(copy, data, fmt, f"x.{'json' if fmt == 'squad' else fmt}")
    return stored(source, without=without), stored(copy, without=without), data


# Texts that are never blank (the kinds refuse an all-space summary, article or choice).
words = hostile_text.map(lambda text: text + "ب")
SETTINGS = dict(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@settings(**SETTINGS)
@given(texts=st.lists(st.tuples(words, words, words, words), min_size=1, max_size=3))
def test_translation_ratings_export_and_import_back_to_the_same_items(admin, fmt, texts):
    rows = [
        {
            "id": f"t{i}",
            "source": {"premise": a, "hypothesis": b, "label": "e"},
            "candidates": [
                {"system": "s1", "premise": c, "hypothesis": d, "back_translation": {"premise": b, "hypothesis": a}},
                {"system": "s2", "premise": d, "hypothesis": c},
            ],
            "group": f"g{i}",
        }
        for i, (a, b, c, d) in enumerate(texts)
    ]
    scores = {"accuracy": 4, "fluency": 2, "cultural_fit": 5, "label_valid": True}
    before, after, data = round_trip(
        admin,
        "translation_rating",
        rows,
        fmt,
        values=lambda i: {"ratings": {"0": scores, "1": scores}, "display_order": [1, 0]},
    )
    assert after == before
    assert b'"ratings"' in data or b"ratings" in data  # the export carried the figures the import passes over


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@settings(**SETTINGS)
@given(texts=st.lists(st.tuples(words, words, words), min_size=1, max_size=3))
def test_summary_ratings_export_and_import_back_to_the_same_items(admin, fmt, texts):
    rows = [
        {
            "id": f"s{i}",
            "article": article,
            "summaries": [{"system": "a", "text": one, "scores": {"rouge1": 0.25}}, {"system": "b", "text": two}],
        }
        for i, (article, one, two) in enumerate(texts)
    ]
    rating = {"coherence": 4, "completeness": 3, "errors": ["repetition"]}
    # `order` is the project's own draw (keyed by its id), not content.
    before, after, data = round_trip(
        admin, "summary_rating", rows, fmt, values=lambda i: {"ratings": {"0": rating, "1": rating}}, without=("order",)
    )
    assert after == before


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@settings(**SETTINGS)
@given(texts=st.lists(st.tuples(words, words, words), min_size=1, max_size=3))
def test_authoring_questions_export_and_import_back_to_the_same_items(admin, fmt, texts):
    rows = [
        {"id": f"q{i}", "question": question, "choices": [one, two, "ج"], "answer_index": i % 3}
        for i, (question, one, two) in enumerate(texts)
    ]
    value = {"premise": "p", "entailment": "e", "contradiction": "c", "neutral": "n"}
    before, after, _data = round_trip(admin, "nli_authoring", rows, fmt, values=lambda i: value)
    assert after == before


def question_paragraphs(contexts: list[tuple[str, str, str]], bare: tuple[bool, ...] = ()) -> list[dict]:
    """A paragraph per (before, answer, after) of hostile text, each its own article, with
    one answerable question whose span is `answer` and one unanswerable one — or, where
    `bare[i]` holds, with no questions at all (`"qas": []` in SQuAD)."""
    rows = []
    for i, (before, answer, after) in enumerate(contexts):
        context = before + answer + after
        rows.append(
            {
                "id": f"p{i}",
                "title": f"כותרת {i}",
                "article_index": i,
                "context": context,
                "questions": []
                if i < len(bare) and bare[i]
                else [
                    {
                        "question": after + "?",
                        "id": f"q{i}-a",
                        "answers": [{"text": answer, "answer_start": len(before)}],
                        "is_impossible": False,
                    },
                    {"question": before + "?", "id": f"q{i}-b", "answers": [], "is_impossible": True},
                ],
            }
        )
    return rows


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "squad", "questions"])
@settings(**SETTINGS)
@given(
    contexts=st.lists(st.tuples(words, st.sampled_from(["אבג", "x y", "۱۲"]), words), min_size=1, max_size=3),
    bare=st.lists(st.booleans(), max_size=3),
)
def test_question_paragraphs_with_questions_export_and_import_back_to_the_same_items(admin, fmt, contexts, bare):
    before, after, _data = round_trip(admin, "qa_authoring", question_paragraphs(contexts, tuple(bare)), fmt)
    assert after == before


@pytest.mark.parametrize("fmt", ["squad", "questions"])
def test_a_paragraph_without_questions_survives_the_question_exports(admin, fmt):
    rows = question_paragraphs([("a", "אבג", "b"), ("c", "x y", "d"), ("e", "۱۲", "f")], bare=(False, True, True))
    before, after, data = round_trip(admin, "qa_authoring", rows, fmt)
    assert after == before
    assert [payload.get("questions", []) for payload, _label, _group in after][1:] == [[], []]
    if fmt == "squad":
        assert [p["qas"] for a in json.loads(data)["data"] for p in a["paragraphs"]][1:] == [[], []]


# Authored NLI pairs (an nli_authoring project's output in its relabel project): each item
# has an author, and the export names the author by the export's pseudonym.
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@settings(**SETTINGS)
@given(pairs=texts, authored_by=st.lists(st.booleans(), min_size=4, max_size=4))
def test_authored_nli_pairs_export_and_import_back_with_their_authors(admin, fmt, pairs, authored_by):
    from django.contrib.auth import get_user_model

    from annotation.models import Item

    n = next(_projects)
    author = get_user_model().objects.create_user(username=f"author-{n}", password="pass-word-123")
    rows = [
        {"id": f"a{i}", "premise": a, "hypothesis": b, "label": "neutral",
         **({"author": author.username} if authored_by[i] else {})}
        for i, (a, b) in enumerate(pairs)
    ]  # fmt: skip
    before, after, data = round_trip(admin, "nli_relabel", rows, fmt)
    assert after == before
    source = Item.objects.filter(project__slug=f"round-trip-{n + 1}").order_by("position", "id")
    assert [item.author_id for item in source] == [author.pk if authored_by[i] else None for i in range(len(pairs))]
    # The copy names each author as the source's export did: its own export writes the same.
    copy = Item.objects.filter(project__slug=f"round-trip-{n + 2}").first().project
    exported = authors_of(data, fmt)
    assert [bool(name) for name in exported] == authored_by[: len(pairs)]
    assert authors_of(export_file(copy, fmt), fmt) == exported
    assert author.username.encode() not in data  # still a pseudonym: exports name nobody


def authors_of(data: bytes, fmt: str) -> list:
    if fmt == "jsonl":
        return [json.loads(line)["author"] for line in data.decode("utf-8").splitlines()]
    rows = csv.DictReader(io.StringIO(data.decode("utf-8").removeprefix(BOM), newline=""))
    return [row["author"] or None for row in rows]
