"""A release carries the dataset in the shape its seed published it, beside the JSONL and
Parquet files (docs/api.md "Releases"): PhrasIS's files for a phrase_pair project, LCHAIM's
JSON (and ConTRoL's JSONL for translation rating) for the LCHAIM kinds; the published
samples go in and come out byte for byte, every file is in SHA256SUMS, and the files the
Hub reads beside the JSONL are configs of the card that `datasets.load_dataset` opens. A
question-answering release has the project's computed splits, and its questions in
squad_v2's shape as a config of their own. The card's statistics are
FarsTail's Table 2 per split and label."""

import hashlib
import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
PHRASIS_FILES = (
    "PhrasIS.train.headlines.positives.txt",
    "PhrasIS.train.headlines.negatives.txt",
    "PhrasIS.train.images.positives.txt",
    "PhrasIS.train.images.negatives.txt",
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(settings, tmp_path):
    settings.MASHOV_RELEASE_ROOT = str(tmp_path / "releases")
    return tmp_path / "releases"


@pytest.fixture
def users(make_user):
    return make_user("f-admin", staff=True), make_user("f-sup")


def new_project(users, kind: str, slug: str, settings: dict | None = None, language: str = "he"):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin, sup = users
    project = project_create(actor=admin, slug=slug, name=slug, kind=kind, language=language, settings=settings or {})
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return project


def finish(project):
    """Every item in the kind's finished state, as a consensus would leave it."""
    from annotation.kinds.registry import get_kind
    from annotation.models import Item

    Item.objects.filter(project=project, probe_of__isnull=True).update(
        status=get_kind(project.kind).default_export_status
    )


def release(users, project, version: str = "1.0"):
    from annotation.models import Job, Release
    from annotation.release.publish import release_request
    from annotation.tasks import run_job

    made = release_request(user=users[1], slug=project.slug, body={"version": version})
    run_job(made.job_id)
    assert Job.objects.get(pk=made.job_id).status == "done", Job.objects.get(pk=made.job_id).error
    return Release.objects.get(pk=made.pk)


def relabel_item(item, label: str):
    """An adjudicator's decision through the ledger: the item's gold changes."""
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.decisions import ADJUDICATION, RANK_ADJUDICATION, decision_record

    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item.pk)
        decision_record(item=item, method=ADJUDICATION, rank=RANK_ADJUDICATION, value=label, status=item.status)


def folder(root: Path, made) -> Path:
    return root / made.project.slug / made.version


def assert_listed(root: Path, made, name: str) -> bytes:
    """The file's bytes, after checking the release and SHA256SUMS list it with its digest."""
    data = (folder(root, made) / name).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert {"name": name, "bytes": len(data), "sha256": digest} in made.files
    assert f"{digest}  {name}\n" in (folder(root, made) / "SHA256SUMS").read_text()
    return data


def load(path: Path, tmp_path: Path, monkeypatch, *args, **kwargs):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset

    return load_dataset(str(path), *args, cache_dir=str(tmp_path / "cache"), **kwargs)


# --- PhrasIS -------------------------------------------------------------------------------------


def test_a_phrase_pair_release_carries_the_phrasis_files_as_published(users, root):
    from annotation.models import Item
    from annotation.services.imports import items_import

    project = new_project(users, "phrase_pair", "f-phrasis")
    for name in PHRASIS_FILES:
        items_import(project=project, data=(SHARED / "phrasis" / name).read_bytes(), fmt="phrasis", filename=name)
    finish(project)
    first = release(users, project)
    for name in PHRASIS_FILES:
        assert assert_listed(root, first, f"phrasis/{name}") == (SHARED / "phrasis" / name).read_bytes(), name
    assert sorted(name for name in (f["name"] for f in first.files) if name.startswith("phrasis/")) == sorted(
        f"phrasis/{name}" for name in PHRASIS_FILES
    )
    # A headerless TSV is no config: the Hub reads every config with the JSONL's reader.
    header = first.card.split("---\n")[1]
    assert header.count("config_name") == 1 and "phrasis/" not in header

    # The decided gold is written as its PhrasIS code; the earlier release keeps the file's.
    item = Item.objects.get(project=project, external_id="PhrasIS.train.images.positives-1")
    relabel_item(item, "OPPOSITION")
    second = release(users, project, "1.1")
    [line, *_rest] = (folder(root, second) / "phrasis/PhrasIS.train.images.positives.txt").read_text().split("\n")
    [published, *_rest] = (SHARED / "phrasis" / "PhrasIS.train.images.positives.txt").read_text().split("\n")
    assert line.split("\t")[1] == "OPPO" and line.split("\t")[2:] == published.split("\t")[2:]
    assert (folder(root, first) / "phrasis/PhrasIS.train.images.positives.txt").read_bytes() == (
        SHARED / "phrasis" / "PhrasIS.train.images.positives.txt"
    ).read_bytes()


def test_pairs_imported_without_phrasis_cells_go_to_files_by_source_and_label(users, root):
    from annotation.services.imports import items_import

    project = new_project(users, "phrase_pair", "f-pairs")
    rows = [
        {"id": "a", "left": "ילד", "right": "ילד קטן", "label": "BACK", "score": 4, "source": "demo", "split": "dev"},
        {"id": "b", "left": "חתול", "right": "מכונית", "label": "UNR", "split": "dev"},
    ]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="pairs.jsonl")
    finish(project)
    made = release(users, project)
    positives = assert_listed(root, made, "phrasis/PhrasIS.dev.demo.positives.txt").decode()
    negatives = assert_listed(root, made, "phrasis/PhrasIS.dev.pairs.negatives.txt").decode()
    assert positives == "4\tBACK\tילד\tילד קטן\t\t\t\n"
    assert negatives == "\tUNR\tחתול\tמכונית\t\t\t\n"


# --- LCHAIM --------------------------------------------------------------------------------------


def test_a_translation_release_carries_control_and_each_systems_lchaim_json(users, root, tmp_path, monkeypatch):
    from annotation.kinds.translation.formats import translation_import_lchaim

    source = (SHARED / "lchaim" / "control_dev_sample.jsonl").read_bytes()
    aws = (SHARED / "lchaim" / "aws_heb_dev_sample.json").read_bytes()
    project = new_project(users, "translation_rating", "f-mt")
    translation_import_lchaim(
        project=project, split="dev", source=source, systems=["aws", "Other MT"], translations=[aws, aws],
        back_translations=[],
    )  # fmt: skip
    finish(project)
    made = release(users, project)
    assert assert_listed(root, made, "control/dev.jsonl") == source
    assert assert_listed(root, made, "lchaim/aws/dev.json") == aws
    assert assert_listed(root, made, "lchaim/Other_MT-599604/dev.json") == aws
    header = made.card.split("---\n")[1]
    assert '- config_name: "lchaim_aws"\n  data_files:\n  - split: "dev"\n    path: "lchaim/aws/dev.json"' in header
    assert '- config_name: "control"' in header
    assert 'load_dataset("path/to/this/folder", "lchaim_aws")' in made.card

    # The Hub's reader opens the default config (the JSONL) and each of the seed's files.
    path = folder(root, made)
    default = load(path, tmp_path, monkeypatch)
    assert list(default) == ["dev"] and default["dev"].num_rows == 64
    lchaim = load(path, tmp_path, monkeypatch, "lchaim_aws")
    assert lchaim["dev"].to_list() == json.loads(aws)
    control = load(path, tmp_path, monkeypatch, "control")
    assert control["dev"].to_list() == [json.loads(line) for line in source.decode().splitlines()]

    # The release's files are what the LCHAIM import reads: they make the same items again.
    copy = new_project(users, "translation_rating", "f-mt-copy")
    translation_import_lchaim(
        project=copy, split="dev", source=(path / "control/dev.jsonl").read_bytes(), systems=["aws"],
        translations=[(path / "lchaim/aws/dev.json").read_bytes()], back_translations=[],
    )  # fmt: skip
    from annotation.models import Item

    def items(p):
        return list(Item.objects.filter(project=p).order_by("position").values_list("external_id", "payload__source"))

    assert items(copy) == items(project)


def test_a_label_test_release_carries_lchaim_json_with_the_gold(users, root, tmp_path, monkeypatch):
    from annotation.models import Item
    from annotation.services.imports import items_import

    aws = (SHARED / "lchaim" / "aws_heb_dev_sample.json").read_bytes()
    rows = [
        {"id": f"dev:{r['uid']}", "split": "dev", **{k: r[k] for k in ("premise", "hypothesis", "label")}}
        for r in json.loads(aws)
    ]
    project = new_project(users, "label_test", "f-test")
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="lchaim.jsonl")
    finish(project)
    made = release(users, project)
    assert assert_listed(root, made, "lchaim/dev.json") == aws
    assert '- config_name: "lchaim"' in made.card.split("---\n")[1]
    loaded = load(folder(root, made), tmp_path, monkeypatch, "lchaim")
    assert loaded["dev"].to_list() == json.loads(aws)

    # A decided gold other than the file's label is what the file carries.
    item = Item.objects.get(project=project, external_id="dev:id_122")
    relabel_item(item, "entailment")
    again = json.loads((folder(root, release(users, project, "1.1")) / "lchaim/dev.json").read_bytes())
    assert again[0] == {**json.loads(aws)[0], "label": "e"} and again[1:] == json.loads(aws)[1:]


# --- QA: the computed splits ---------------------------------------------------------------------


def test_a_qa_release_has_the_projects_computed_splits(users, root, tmp_path, monkeypatch):
    from datasets import List, Value

    from annotation.kinds.qa.formats import export_questions_stream
    from annotation.kinds.qa.questions import item_split, project_article_splits
    from annotation.kinds.registry import get_kind
    from annotation.models import Item
    from annotation.services.exports import export_prepare, export_stream
    from annotation.services.imports import items_import
    from tests.api.test_export_datasets import qa_rows

    project = new_project(users, "qa_authoring", "f-qa", {"dev_share": 0.25, "test_share": 0.25, "split_seed": 7})
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in qa_rows(12)).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="qa.jsonl")
    finish(project)
    splits = project_article_splits(project, get_kind("qa_authoring").settings_for(project.settings))
    expected = {item.external_id: item_split(item, splits) for item in Item.objects.filter(project=project)}
    assert set(expected.values()) == {"train", "dev", "test"}

    made = release(users, project)
    assert sorted(made.counts) == ["dev", "test", "train"]
    assert {key: entry["split"] for key, entry in made.manifest.items()} == expected
    names = {f["name"] for f in made.files}
    for split in ("train", "dev", "test"):
        assert {f"data/{split}.jsonl", f"data/{split}.parquet", f"squad/{split}.json"} <= names
        spec = export_prepare(project=project, fmt="jsonl", split=split)
        assert assert_listed(root, made, f"data/{split}.jsonl") == b"".join(export_stream(spec))
        squad = json.loads((folder(root, made) / f"squad/{split}.json").read_bytes())
        titles = {a["title"] for a in squad["data"]}
        assert titles == {f"מאמר {key[1:]}" for key, name in expected.items() if name == split}
        assert f'- split: "{split}"\n    path: "data/{split}.jsonl"' in made.card
    loaded = load(folder(root, made), tmp_path, monkeypatch)
    assert {split: loaded[split].num_rows for split in loaded} == {
        split: sum(1 for name in expected.values() if name == split) for split in ("train", "dev", "test")
    }
    # The questions as squad_v2 has them, one a line: a config of their own.
    questions = load(folder(root, made), tmp_path, monkeypatch, "questions")
    for split in ("train", "dev", "test"):
        lines = assert_listed(root, made, f"questions/{split}.jsonl").decode().splitlines()
        assert b"".join(export_questions_stream(project, fmt="jsonl", split=split)).decode().splitlines() == lines
        assert questions[split].num_rows == len(lines) == 2 * sum(1 for name in expected.values() if name == split)
        assert {record["split"] for record in questions[split]} == {split}
    assert questions["train"].features["answers"] == {
        "text": List(Value("string")),
        "answer_start": List(Value("int64")),
    }


# --- the card's statistics -----------------------------------------------------------------------


def test_the_card_gives_table_2_statistics_per_split_and_label(users, root):
    from annotation.metrics.bias import tokens
    from annotation.services.imports import items_import

    rows = [
        {"id": "a", "premise": "גשם יורד היום.", "hypothesis": "יורד גשם", "label": "e", "split": "test"},
        {"id": "b", "premise": "השמש זורחת", "hypothesis": "אין שמש היום בכלל", "label": "c", "split": "test"},
        {"id": "c", "premise": "ילד", "hypothesis": "ילד רץ", "label": "e", "split": "dev"},
    ]
    project = new_project(users, "nli_relabel", "f-stats")
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="nli.jsonl", options=labels_final())
    finish(project)
    card = release(users, project).card
    assert "## Statistics" in card and "### dev" in card and "### test" in card
    section = card.split("### test")[1].split("##")[0]
    header = "| class | items | share | premise tokens (mean / min / max) | hypothesis tokens (mean / min / max) | vocabulary |"
    assert header in section
    premises = [len(tokens(r["premise"])) for r in rows[:2]]  # 4 (the full stop is a token) and 2
    hypotheses = [len(tokens(r["hypothesis"])) for r in rows[:2]]
    vocabulary = {t for r in rows[:2] for text in (r["premise"], r["hypothesis"]) for t in tokens(text)}
    assert (
        f"| all | 2 | 100.0% | {sum(premises) / 2:.2f} / {min(premises)} / {max(premises)} "
        f"| {sum(hypotheses) / 2:.2f} / {min(hypotheses)} / {max(hypotheses)} | {len(vocabulary)} |"
    ) in section
    assert "| contradiction | 1 | 50.0% | 2.00 / 2 / 2 | 4.00 / 4 / 4 | 6 |" in section
    assert "| entailment | 1 | 50.0% | 4.00 / 4 / 4 | 2.00 / 2 / 2 | 4 |" in section


@pytest.mark.persian
def test_a_persian_cards_statistics_are_counted_with_hazm(users, root):
    """Hazm joins verb parts: "انجام شده باشد" is two tokens, not three (Mashov's own cut)."""
    from annotation.services.imports import items_import

    rows = [
        {"id": "a", "premise": "کار انجام شده باشد.", "hypothesis": "کار شده", "label": "e", "split": "test"},
        {"id": "b", "premise": "باران می‌بارد", "hypothesis": "هوا آفتابی است", "label": "c", "split": "test"},
    ]
    project = new_project(users, "nli_relabel", "f-hazm", language="fa")
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    items_import(project=project, data=data, fmt="jsonl", filename="nli.jsonl", options=labels_final())
    finish(project)
    card = release(users, project).card
    assert "Tokens are those of Hazm's word tokenizer (hazm 0.10.0; verb parts joined)" in card
    section = card.split("### test")[1].split("##")[0]
    # Premises: کار / انجام / شده_باشد / . and باران / می‌بارد; the hypotheses add شده, هوا,
    # آفتابی and است ("آفتابی است" is no verb: it stays two tokens).
    assert "| entailment | 1 | 50.0% | 4.00 / 4 / 4 | 2.00 / 2 / 2 | 5 |" in section
    assert "| all | 2 | 100.0% | 3.00 / 2 / 4 | 2.50 / 2 / 3 | 10 |" in section


def labels_final():
    from annotation.services.imports import import_options_clean

    return import_options_clean("", "true")
