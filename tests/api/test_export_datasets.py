"""The JSONL exports load with the Hugging Face `datasets` library as they are: for every
kind, the export of each split (`?split=`) is written to its own file, the files are loaded
with `load_dataset("json", data_files={split: file})`, and

- every split gets the same features, none of them an empty struct (`struct<>`, what an
  empty object such as `"extra": {}` would give) and none whose members depend on what the
  item holds (such as the summary votes' `0_system`, `1_system` ... keys);
- the rows are the export's records, a member the record leaves out read as null (that is
  how a typed reader fills a column a record has no value for).

Also the shapes that make this so: summary votes as a list of per-system objects, squad_v2
answers in the per-question QA export, empty objects left out, and the QA paragraph export's
computed split."""

import csv
import io
import json

import pytest

from annotation.services.exports import without_empty_objects

pytestmark = pytest.mark.django_db

SPLITS = ("train", "dev", "test")


@pytest.fixture
def admin(make_user):
    return make_user("root", staff=True)


def new_project(admin, kind: str, slug: str, settings: dict | None = None):
    from annotation.services.projects import project_create

    return project_create(actor=admin, slug=slug, name=slug, kind=kind, language="he", settings=settings or {})


def import_rows(project, rows: list[dict]) -> None:
    from annotation.services.imports import items_import

    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    assert items_import(project=project, data=data, fmt="jsonl", filename="rows.jsonl").created == len(rows)


def rate(project, value_of, usernames=("r1", "r2")) -> None:
    """An annotation by each of `usernames` on every item (`value_of(item, k)` for the k-th)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item

    now = timezone.now()
    for k, username in enumerate(usernames):
        user, _ = get_user_model().objects.get_or_create(username=f"{project.slug}-{username}")
        for item in Item.objects.filter(project=project).order_by("position", "id"):
            assignment = Assignment.objects.create(
                project=project, item=item, annotator=user, round=1, status="submitted", claimed_at=now, expires_at=now
            )
            Annotation.objects.create(
                assignment=assignment, item=item, annotator=user, round=1, value=value_of(item, k)
            )


def export_records(project, split: str | None = None, fmt: str = "jsonl") -> tuple[bytes, list[dict]]:
    from annotation.services.exports import export_prepare, export_stream

    data = b"".join(export_stream(export_prepare(project=project, fmt=fmt, status="all", split=split)))
    return data, [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def question_records(project, split: str | None = None) -> tuple[bytes, list[dict]]:
    from annotation.kinds.qa.formats import export_questions_stream

    data = b"".join(export_questions_stream(project, fmt="jsonl", split=split))
    return data, [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def filled(value, feature):
    """`value` as a typed reader gives it back under `feature`: an object's missing members
    are null, lists and objects filled inside."""
    from datasets import LargeList, List, Sequence

    if value is None:
        return None
    if isinstance(feature, dict):
        return {name: filled(value.get(name), inner) for name, inner in feature.items()}
    if isinstance(feature, (List, LargeList, Sequence)):
        return [filled(inner, feature.feature) for inner in value]
    return value


def empty_structs(feature, path="") -> list[str]:
    """The paths of the struct features without members (Arrow's `struct<>`)."""
    from datasets import LargeList, List, Sequence

    if isinstance(feature, dict):
        if not feature:
            return [path]
        return [p for name, inner in feature.items() for p in empty_structs(inner, f"{path}.{name}")]
    if isinstance(feature, (List, LargeList, Sequence)):
        return empty_structs(feature.feature, f"{path}[]")
    return []


def load_splits(tmp_path, files: dict[str, bytes], monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset

    tmp_path.mkdir(parents=True, exist_ok=True)
    data_files = {}
    for split, data in files.items():
        path = tmp_path / f"{split}.jsonl"
        path.write_bytes(data)
        data_files[split] = str(path)
    return load_dataset("json", data_files=data_files, cache_dir=str(tmp_path / "cache"))


def assert_loads_as_exported(tmp_path, monkeypatch, exports: dict[str, tuple[bytes, list[dict]]]):
    """Load each split's file; same features in every split, no empty struct, the rows as
    exported. Returns the features."""
    assert all(records for _data, records in exports.values()), "every split holds records"
    loaded = load_splits(tmp_path, {split: data for split, (data, _records) in exports.items()}, monkeypatch)
    assert set(loaded) == set(exports)
    features = [loaded[split].features for split in exports]
    assert all(feature == features[0] for feature in features), features
    assert empty_structs(dict(features[0])) == []
    for split, (_data, records) in exports.items():
        assert loaded[split].to_list() == [filled(record, features[0]) for record in records]
    return features[0]


# --- one project per kind, items in three splits -------------------------------------------------


def nli_rows(kind_label: str) -> list[dict]:
    rows = []
    for i in range(6):
        row = {"id": f"n{i}", "premise": f"הנחה {i}", "hypothesis": f"השערה\t{i}", "label": kind_label}
        row["split"] = SPLITS[i % 3]
        if i == 0:
            row["extra"] = {"hard(overlap)": "1"}  # one item with extra columns, the others none
        rows.append(row)
    return rows


@pytest.mark.parametrize("kind", ["nli_relabel", "label_test"])
def test_nli_exports_load_with_stable_features(admin, tmp_path, monkeypatch, kind):
    project = new_project(admin, kind, f"ds-{kind.replace('_', '-')}")
    import_rows(project, nli_rows("entailment"))
    rate(project, lambda item, k: {"label": ("entailment", "neutral")[k]})
    exports = {split: export_records(project, split) for split in SPLITS}
    # The items without extra columns or aggregates leave those members out.
    records = [record for _data, split_records in exports.values() for record in split_records]
    assert sum("extra" in record for record in records) == 1 and not any("aggregates" in r for r in records)
    features = assert_loads_as_exported(tmp_path, monkeypatch, exports)
    assert set(features["votes"]) == {"entailment", "neutral", "contradiction"}


def test_phrase_pair_exports_load_with_stable_features(admin, tmp_path, monkeypatch):
    project = new_project(admin, "phrase_pair", "ds-phrase")
    import_rows(
        project,
        [
            {"id": f"f{i}", "left": f"שמאל {i}", "right": "ימין", "label": "EQUI", "split": SPLITS[i % 3]}
            for i in range(6)
        ],
    )
    rate(project, lambda item, k: {"label": "EQUIVALENT"})
    exports = {split: export_records(project, split) for split in SPLITS}
    assert not any("phrasis" in r or "extra" in r for _d, records in exports.values() for r in records)
    assert_loads_as_exported(tmp_path, monkeypatch, exports)


def test_translation_exports_load_with_stable_features(admin, tmp_path, monkeypatch):
    project = new_project(admin, "translation_rating", "ds-mt")
    import_rows(
        project,
        [
            {
                "id": f"t{i}",
                "source": {"premise": "p", "hypothesis": "h", "label": "e"},
                "candidates": [
                    {
                        "system": "a",
                        "premise": "פ",
                        "hypothesis": "ה",
                        "back_translation": {"premise": "p", "hypothesis": "h"},
                    },
                    {"system": "b", "premise": "פּ", "hypothesis": "ה׳"},
                ],
                "split": SPLITS[i % 3],
            }
            for i in range(6)
        ],
    )
    scores = {"accuracy": 4, "fluency": 3, "cultural_fit": 5, "label_valid": True}
    rate(project, lambda item, k: {"ratings": {"0": scores, "1": scores}, "display_order": [0, 1]})
    exports = {split: export_records(project, split) for split in SPLITS}
    assert_loads_as_exported(tmp_path, monkeypatch, exports)


def summary_rows() -> list[dict]:
    rows = []
    for i in range(6):
        # Items with two and with three summaries, with and without automatic scores.
        summaries = [{"system": "a", "text": f"תקציר {i}"}, {"system": "b", "text": "אחר"}]
        if i % 2:
            summaries.append({"system": "c", "text": "שלישי", "scores": {"rouge1": 0.5}})
        rows.append({"id": f"s{i}", "article": f"מאמר {i}", "summaries": summaries, "split": SPLITS[i % 3]})
    return rows


def test_summary_votes_are_a_list_of_per_system_objects(admin):
    project = new_project(admin, "summary_rating", "votes-shape")
    import_rows(project, summary_rows()[:2])
    rating = {"coherence": 4, "completeness": 2, "errors": ["repetition"]}
    rate(project, lambda item, k: {"ratings": {str(d): rating for d in range(len(item.payload["summaries"]))}})
    _data, records = export_records(project)
    second = records[1]
    assert [vote["system"] for vote in second["votes"]] == ["a", "b", "c"]
    assert second["votes"][2] == {
        "system": "c",
        "coherence": [4, 4],
        "completeness": [2, 2],
        "coherence_mean": 4.0,
        "completeness_mean": 2.0,
        "errors": [{"tag": "repetition", "count": 2}],
    }
    assert second["summaries"][2]["error_counts"] == [{"tag": "repetition", "count": 2}]
    assert second["summaries"][2]["scores"] == {"rouge1": 0.5}
    assert "scores" not in records[0]["summaries"][0]  # no automatic scores: left out, not {}


def test_summary_exports_load_with_stable_features(admin, tmp_path, monkeypatch):
    project = new_project(admin, "summary_rating", "ds-sum")
    import_rows(project, summary_rows())

    def value(item, k):
        tags = [["repetition"], []][k]
        rating = {"coherence": 3 + k, "completeness": 2, "errors": tags}
        return {"ratings": {str(d): rating for d in range(len(item.payload["summaries"]))}}

    rate(project, value)
    exports = {split: export_records(project, split) for split in SPLITS}
    features = assert_loads_as_exported(tmp_path, monkeypatch, exports)
    assert set(features["votes"].feature) == {
        "system", "coherence", "completeness", "coherence_mean", "completeness_mean", "errors"
    }  # fmt: skip


def test_authoring_exports_load_with_stable_features(admin, tmp_path, monkeypatch):
    project = new_project(admin, "nli_authoring", "ds-author")
    import_rows(
        project,
        [
            {
                "id": f"q{i}",
                "question": f"שאלה {i}",
                "choices": ["א", "ב"],
                "answer_index": i % 2,
                "split": SPLITS[i % 3],
            }
            for i in range(6)
        ],
    )
    rate(project, lambda item, k: {"premise": "p", "entailment": "e", "contradiction": "c", "neutral": "n"}, ("r1",))
    exports = {split: export_records(project, split) for split in SPLITS}
    assert exports["train"][1][0]["choices"] == ["א", "ב"] and "payload" not in exports["train"][1][0]
    assert_loads_as_exported(tmp_path, monkeypatch, exports)


# --- question authoring: the computed split, squad_v2 answers ------------------------------------


def qa_rows(n: int) -> list[dict]:
    """Paragraphs, each its own article (title), with two imported questions."""
    rows = []
    for i in range(n):
        context = f"פסקה מספר {i} על נושא"
        rows.append(
            {
                "id": f"p{i}",
                "title": f"מאמר {i}",
                "context": context,
                "questions": [
                    {
                        "question": "מה?",
                        "id": f"q{i}a",
                        "answers": [{"text": "פסקה", "answer_start": 0}],
                        "is_impossible": False,
                    },
                    {"question": "למה?", "id": f"q{i}b", "answers": [], "is_impossible": True},
                ],
            }
        )
    return rows


@pytest.fixture
def qa_project(admin):
    # Shares that put some articles in dev and test among twelve.
    project = new_project(admin, "qa_authoring", "ds-qa", {"dev_share": 0.25, "test_share": 0.25, "split_seed": 7})
    import_rows(project, qa_rows(12))
    return project


def test_question_paragraph_export_carries_and_filters_by_the_computed_split(qa_project):
    from annotation.kinds.qa.questions import item_split, project_article_splits
    from annotation.kinds.registry import get_kind
    from annotation.models import Item
    from annotation.services.exports import export_prepare, export_stream

    settings = get_kind("qa_authoring").settings_for(qa_project.settings)
    splits = project_article_splits(qa_project, settings)
    expected = {item.external_id: item_split(item, splits) for item in Item.objects.filter(project=qa_project)}
    assert set(expected.values()) == set(SPLITS) and all(item.split == "" for item in Item.objects.all())
    _data, records = export_records(qa_project)
    assert {record["id"]: record["split"] for record in records} == expected
    _data, per_question = question_records(qa_project)
    assert {record["paragraph"]: record["split"] for record in per_question} == expected
    for split in SPLITS:
        _data, records = export_records(qa_project, split)
        assert [record["id"] for record in records] == [key for key, name in expected.items() if name == split]
        assert {record["split"] for record in records} == {split}
        # The CSV carries and filters the same way.
        text = b"".join(export_stream(export_prepare(project=qa_project, fmt="csv", status="all", split=split)))
        rows = list(csv.DictReader(io.StringIO(text.decode("utf-8").removeprefix("\ufeff"), newline="")))
        assert [(row["id"], row["split"]) for row in rows] == [
            (key, split) for key, name in expected.items() if name == split
        ]
    # A stored split (from the file) wins over the computed one, for the filter too.
    Item.objects.filter(external_id="p0").update(split="test")
    assert "p0" in [record["id"] for record in export_records(qa_project, "test")[1]]
    assert "p0" not in [record["id"] for record in export_records(qa_project, "train")[1]]


def test_per_question_export_gives_squad_v2_answers(qa_project):
    _data, records = question_records(qa_project)
    answerable, unanswerable = records[0], records[1]
    assert answerable["answers"] == {"text": ["פסקה"], "answer_start": [0]}
    assert unanswerable["answers"] == {"text": [], "answer_start": []}


def test_question_exports_load_with_stable_features(qa_project, tmp_path, monkeypatch):
    paragraphs = {split: export_records(qa_project, split) for split in SPLITS}
    assert_loads_as_exported(tmp_path / "paragraphs", monkeypatch, paragraphs)
    questions = {split: question_records(qa_project, split) for split in SPLITS}
    features = assert_loads_as_exported(tmp_path / "questions", monkeypatch, questions)
    # squad_v2's answers feature: a list of texts and a list of starts.
    assert set(features["answers"]) == {"text", "answer_start"}


def test_without_empty_objects_keeps_what_an_import_reads_the_same():
    record = {"extra": {}, "aggregates": {"mace": {"label": "a", "confidence": 1.0}}, "votes": [{"errors": []}]}
    assert without_empty_objects(record) == {"aggregates": record["aggregates"], "votes": [{"errors": []}]}


def test_the_questions_import_names_a_bad_line_and_stores_nothing(qa_project, admin):
    from annotation.errors import InvalidInput
    from annotation.models import Item
    from annotation.services.imports import items_import

    _data, records = question_records(qa_project)
    good = records[0]
    lines = [
        good,
        {**records[1], "answers": [{"text": "x", "answer_start": 0}]},  # SQuAD 1's list, not squad_v2's columns
        {**good, "id": "other", "context": "פסקה אחרת"},  # the same paragraph with another context
        {**good, "paragraph": None},
    ]
    copy = new_project(admin, "qa_authoring", "ds-qa-copy")
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    with pytest.raises(InvalidInput) as refused:
        items_import(project=copy, data=data, fmt="questions", filename="q.jsonl")
    assert sorted((error.row, error.field) for error in refused.value.errors) == [
        (2, "answers"),
        (3, "context"),
        (4, "paragraph"),
    ]
    assert not Item.objects.filter(project=copy).exists()
