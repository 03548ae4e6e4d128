"""`phrase_pair` through the HTTP contract (docs/api.md; docs/kinds.md "The kinds"): the PhrasIS sample is
imported from its own files, three annotators label it through next/submit (reversed
probes mixed in), and the report, the agreement reports and the exports match a
computation made here from the labels cast. Bad input is a 400 naming the field or row,
and stores nothing."""

import csv
import io
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from tests.conftest import NOTHING_HELD_OUT

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[4] / "shared" / "data" / "phrasis"
FILES = (
    "PhrasIS.train.headlines.positives.txt",
    "PhrasIS.train.headlines.negatives.txt",
    "PhrasIS.train.images.positives.txt",
    "PhrasIS.train.images.negatives.txt",
)
POSITIVES = (FILES[0], FILES[2])
LABELS = ["EQUIVALENT", "FORWARD", "BACKWARD", "OPPOSITION", "SIMILAR", "RELATED", "UNRELATED"]
CODES = {
    "EQUI": "EQUIVALENT",
    "FORW": "FORWARD",
    "BACK": "BACKWARD",
    "OPPO": "OPPOSITION",
    "SIMI": "SIMILAR",
    "REL": "RELATED",
    "UNR": "UNRELATED",
}
CODE_OF = {label: code for code, label in CODES.items()}
REVERSE = {"FORWARD": "BACKWARD", "BACKWARD": "FORWARD"}
SLUG = "en-phrasis"


def upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def raw(name: str) -> bytes:
    return (DATA / name).read_bytes()


def lines(name: str) -> list[list[str]]:
    return [line.split("\t") for line in raw(name).decode("utf-8").split("\n") if line]


def import_file(client, name: str, data: bytes | None = None, fmt: str = "phrasis", slug: str = SLUG):
    return client.post(
        f"/api/projects/{slug}/import/",
        {"file": upload(name, raw(name) if data is None else data), "format": fmt},
        format="multipart",
    )


@pytest.fixture
def setup(make_user, client_for):
    """An English phrase_pair project (3 labels per item, probe rate 0.2, seeded) with a
    supervisor and three annotators."""
    from annotation.models import Membership

    admin = make_user("root", staff=True)
    made = client_for(admin).post(
        "/api/projects/",
        {
            "slug": SLUG,
            "name": "PhrasIS",
            "kind": "phrase_pair",
            "language": "en",
            "settings": {"probe_rate": 0.2, "probe_seed": 17},
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["labels_per_item"] == 3
    from annotation.models import Project

    project = Project.objects.get(slug=SLUG)
    people = {"root": admin}
    for name, role in (("sup", "supervisor"), ("ann1", "annotator"), ("ann2", "annotator"), ("ann3", "annotator")):
        people[name] = make_user(name)
        Membership.objects.create(project=project, user=people[name], role=role, status="active")
    return project, people, {name: client_for(user) for name, user in people.items()}


# --- import ------------------------------------------------------------------------------------


def test_phrasis_files_import_with_every_cell_kept(setup):
    from annotation.models import Item

    project, _people, clients = setup
    for name in FILES:
        response = import_file(clients["sup"], name)
        assert response.status_code == 201, response.content
        assert response.json()["created"] == len(lines(name))
    assert Item.objects.filter(project=project).count() == 49 + 66 + 41 + 65
    # Re-importing a file is harmless: every row is already there.
    again = import_file(clients["sup"], FILES[0]).json()
    assert again == {"created": 0, "skipped": 49, "job": None, **NOTHING_HELD_OUT} or (
        again["created"],
        again["skipped"],
    ) == (0, 49)
    for name in FILES:
        split, source, polarity = name.split(".")[1:4]
        for number, cells in enumerate(lines(name), start=1):
            item = Item.objects.get(project=project, external_id=f"{name.removesuffix('.txt')}-{number}")
            score, label, left, right, left_positions, right_positions, pair = cells
            # Phrases byte-exact: the positives' right padding and the negatives' trailing space are data.
            assert item.payload["left"] == left and item.payload["right"] == right
            assert item.payload["source"] == source and item.split == split
            assert item.payload["score"] == score
            assert item.payload["phrasis"] == {
                "score": score, "label": label, "left_positions": left_positions, "right_positions": right_positions,
                "pair": pair, "file": name, "polarity": polarity,
            }  # fmt: skip
            assert item.reference_label == CODES[label.strip()]
            assert item.group == f"{source}-{split}-{pair}"
    padded = Item.objects.get(project=project, external_id="PhrasIS.train.headlines.positives-1")
    assert padded.payload["left"].endswith("   ") and padded.payload["left"].startswith("at 91")


def test_phrasis_bad_rows_are_listed_and_nothing_is_stored(setup):
    from annotation.models import Item

    project, _people, clients = setup
    good = raw(FILES[0]).decode("utf-8").split("\n")
    broken = list(good)
    broken[1] = broken[1].replace("\tEQUI\t", "\tSAME\t", 1)  # row 2: unknown label
    broken[3] = "5\tEQUI\tonly three columns"  # row 4: too few columns
    broken[5] = "x" + broken[5]  # row 6: score not a number
    response = import_file(clients["sup"], FILES[0], "\n".join(broken).encode("utf-8"))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {e["row"] for e in errors} == {2, 4, 6}
    assert any(e["field"] == "label" and e["row"] == 2 for e in errors)
    assert Item.objects.filter(project=project).count() == 0
    # A file not named like PhrasIS's: 400 on `file`.
    response = import_file(clients["sup"], "phrases.tsv", raw(FILES[0]))
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "file"
    assert Item.objects.filter(project=project).count() == 0


def test_jsonl_import_and_its_errors(setup):
    from annotation.models import Item

    project, _people, clients = setup
    rows = [
        {"id": "h1", "left": "שלושה כלבים ", "right": "כלבים", "label": "FORWARD", "source": "news", "score": 3},
        {"id": "h2", "left": "כלב\u200f", "right": "חתול", "label": "SIMI"},
        {"id": "h3", "left": "\u00a0בית", "right": "בית", "extra": {"note": "x"}},
    ]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    response = import_file(clients["sup"], "pairs.jsonl", data, fmt="jsonl")
    assert response.status_code == 201, response.content
    stored = {item.external_id: item for item in Item.objects.filter(project=project)}
    assert stored["h1"].payload == {"left": "שלושה כלבים ", "right": "כלבים", "source": "news", "score": 3}
    assert stored["h1"].reference_label == "FORWARD"
    assert stored["h2"].payload["left"] == "כלב\u200f" and stored["h2"].reference_label == "SIMILAR"
    assert stored["h3"].payload["left"] == "\u00a0בית" and stored["h3"].reference_label == ""
    assert stored["h3"].payload["extra"] == {"note": "x"}

    bad = [
        {"id": "b1", "left": "a", "right": "b", "label": "ENTAILMENT"},
        {"id": "b2", "left": "a"},
        {"id": "b3", "left": "a", "right": "b", "source": "all"},
        {"id": "b4~rev~9", "left": "a", "right": "b"},
        {"id": "b5", "left": "a", "right": "b", "source": "x\u202e"},
        {"id": "b6", "left": "a", "right": "b"},
    ]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in bad).encode("utf-8")
    response = import_file(clients["sup"], "bad.jsonl", data, fmt="jsonl")
    assert response.status_code == 400
    found = {(e["row"], e["field"]) for e in response.json()["errors"]}
    assert found == {(1, "label"), (2, "right"), (3, "source"), (4, "id"), (5, "source")}
    assert not Item.objects.filter(project=project, external_id="b6").exists()


def test_extra_columns_are_exported_in_the_imported_order(setup):
    """jsonb sorts an object's keys; the `extra` of a pair comes back in the file's order."""
    _project, _people, clients = setup
    row = {"id": "o1", "left": "ספר ישן", "right": "ספר", "extra": {"zz": "1", "a": "2", "mmm": "3"}}
    data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    assert import_file(clients["sup"], "o.jsonl", data, fmt="jsonl").status_code == 201
    exported = clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": "jsonl", "status": "all"})
    records = [json.loads(line) for line in b"".join(exported.streaming_content).decode("utf-8").splitlines()]
    assert [list(r["extra"]) for r in records if r["id"] == "o1"] == [["zz", "a", "mmm"]]


def test_settings_are_checked(make_user, client_for):
    client = client_for(make_user("root", staff=True))

    def create(slug, settings):
        return client.post(
            "/api/projects/",
            {"slug": slug, "name": slug, "kind": "phrase_pair", "language": "he", "settings": settings},
            format="json",
        )

    for settings, field in (
        ({"probe_rate": 0.9}, "settings.probe_rate"),
        ({"probe_rate": -0.1}, "settings.probe_rate"),
        ({"labels_per_item": 0}, "settings.labels_per_item"),
        ({"probe_rate": "0.1"}, "settings.probe_rate"),
        ({"consensus_k": 3}, "settings.consensus_k"),
    ):
        response = create("bad", settings)
        assert response.status_code == 400, settings
        assert response.json()["errors"][0]["field"] == field
    made = create("ok", {"probe_rate": 0})
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["probe_rate"] == 0.0


# --- annotating --------------------------------------------------------------------------------


def test_annotator_sees_only_the_two_phrases_and_bad_labels_are_refused(setup):
    from annotation.models import Annotation

    project, _people, clients = setup
    assert import_file(clients["sup"], FILES[0]).status_code == 201
    client = clients["ann1"]
    got = client.get(f"/api/projects/{SLUG}/next/")
    assert got.status_code == 200
    assert set(got.json()["item"]["payload"]) == {"left", "right"}
    assignment = got.json()["assignment"]
    for value, field in (
        ({"label": "EQUI"}, "value.label"),
        ({"label": "entailment"}, "value.label"),
        ({"label": "FORWARD", "score": 3}, "value"),
        ("FORWARD", "value"),
        ({}, "value.label"),
    ):
        response = client.post(f"/api/assignments/{assignment}/submit/", {"value": value}, format="json")
        assert response.status_code == 400, value
        assert response.json()["errors"][0]["field"] == field
    assert Annotation.objects.count() == 0
    ok = client.post(f"/api/assignments/{assignment}/submit/", {"value": {"label": "OPPOSITION"}}, format="json")
    assert ok.status_code == 201


def label_all(clients, names, choose) -> dict[str, list[tuple[int, dict, str]]]:
    """Each annotator in turn draws and labels through HTTP until 204. Returns, per
    annotator, (item id, payload shown, label) in the order served."""
    cast = {name: [] for name in names}
    active = list(names)
    turn = 0
    while active:
        name = active[turn % len(active)]
        got = clients[name].get(f"/api/projects/{SLUG}/next/")
        if got.status_code == 204:
            active.remove(name)
            continue
        assert got.status_code == 200, got.content
        body = got.json()
        label = choose(name, body["item"], cast[name])
        sent = clients[name].post(
            f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json",
            HTTP_IDEMPOTENCY_KEY=f"{name}-{body['assignment']}",
        )  # fmt: skip
        assert sent.status_code == 201, sent.content
        cast[name].append((body["item"]["id"], body["item"]["payload"], label))
        turn += 1
    return cast


def test_phrasis_sample_labeled_by_three_annotators_report_agreement_and_export(setup, settings):
    """The positives of both sources through import → labeling by three annotators (probes
    mixed in) → report, agreement and export, each checked against the labels cast."""
    from annotation.models import Item
    from annotation.tasks import run_job

    settings.CELERY_TASK_ALWAYS_EAGER = True
    project, people, clients = setup
    for name in POSITIVES:
        assert import_file(clients["sup"], name).status_code == 201
    imported = {item.pk: item for item in Item.objects.filter(project=project)}
    rng = random.Random(5)

    def choose(name, item, _mine):
        original = imported.get(item["id"])
        if name == "ann1":
            # Reads like the experts: the imported label, reversed on a reversed pair.
            if original is not None:
                return original.reference_label
            probe = Item.objects.get(pk=item["id"])
            return REVERSE.get(imported[probe.probe_of_id].reference_label, imported[probe.probe_of_id].reference_label)
        if name == "ann2":
            # Agrees with the experts most of the time, but ignores direction.
            if original is not None and rng.random() < 0.8:
                return original.reference_label
            return rng.choice(["FORWARD", "SIMILAR", "EQUIVALENT"])
        return rng.choice(LABELS)

    names = ["ann1", "ann2", "ann3"]
    cast = label_all(clients, names, choose)
    probe_of = dict(Item.objects.filter(project=project, probe_of__isnull=False).values_list("pk", "probe_of_id"))
    assert probe_of, "no probe was served"
    # The probe payload is indistinguishable in shape and is the original reversed.
    for name in names:
        for item_id, payload, _label in cast[name]:
            assert set(payload) == {"left", "right"}
            if item_id in probe_of:
                original = imported[probe_of[item_id]]
                assert (payload["left"], payload["right"]) == (original.payload["right"], original.payload["left"])
    ordinary = {
        name: {item_id: label for item_id, _p, label in cast[name] if item_id not in probe_of} for name in names
    }
    assert all(len(ordinary[name]) == len(imported) for name in names)
    share = sum(1 for name in names for item_id, _p, _l in cast[name] if item_id in probe_of) / sum(
        len(cast[n]) for n in names
    )
    assert share == pytest.approx(0.2, abs=0.03)

    # Report: per annotator soft and hard coherence, counted here from the labels cast.
    report = clients["sup"].get(f"/api/projects/{SLUG}/report/").json()
    rows = {row["annotator"]: row for row in report["coherence"]["per_annotator"]}
    for name in names:
        probes = [(probe_of[item_id], label) for item_id, _p, label in cast[name] if item_id in probe_of]
        soft = [ordinary[name][orig] == REVERSE.get(label, label) for orig, label in probes]
        hard = [s and ordinary[name][orig] == imported[orig].reference_label for s, (orig, _l) in zip(soft, probes)]
        assert rows[name]["probes"] == len(probes)
        assert rows[name]["soft"] == pytest.approx(sum(soft) / len(soft))
        assert rows[name]["hard"] == pytest.approx(sum(hard) / len(hard))
    assert rows["ann1"]["soft"] == 1.0 and rows["ann1"]["hard"] == 1.0
    # Label distribution per source: ordinary labels only (probes left out).
    expected = defaultdict(Counter)
    for name in names:
        for item_id, label in ordinary[name].items():
            expected[imported[item_id].payload["source"]][label] += 1
    assert {row["source"]: row["labels"] for row in report["label_distribution"]} == {
        source: {label: counts.get(label, 0) for label in LABELS} for source, counts in expected.items()
    }
    assert report["status_counts"]["complete"] >= len(imported)

    # Agreement: nominal alpha overall and per source, against the krippendorff package.
    response = clients["sup"].post(f"/api/projects/{SLUG}/agreement/")
    assert response.status_code == 202, response.content
    run_job(response.json()["job"])
    reports = {row["scope"]["source"]: row for row in clients["sup"].get(f"/api/projects/{SLUG}/agreement/").json()}
    assert set(reports) == {"all", "headlines", "images"}
    for source in ("all", "headlines", "images"):
        units = sorted(pk for pk in imported if source == "all" or imported[pk].payload["source"] == source)
        matrix = np.array([[LABELS.index(ordinary[name][pk]) for pk in units] for name in names], dtype=float)
        want = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        row = reports[source]
        assert row["level"] == "nominal"
        assert row["alpha"] == pytest.approx(want, abs=1e-9)
        assert row["units"] == len(units) and row["coders"] == 3
        assert row["ci_low"] <= row["alpha"] <= row["ci_high"]
    # Recomputing upserts the same rows.
    run_job(clients["sup"].post(f"/api/projects/{SLUG}/agreement/").json()["job"])
    assert len(clients["sup"].get(f"/api/projects/{SLUG}/agreement/").json()) == 3

    def gold_of(pk):
        votes = Counter(ordinary[name][pk] for name in names)
        top = max(votes.values())
        leaders = [label for label, n in votes.items() if n == top]
        if len(leaders) == 1:
            return leaders[0]
        return imported[pk].reference_label if imported[pk].reference_label in leaders else None

    # PhrasIS TSV of each file: every imported cell as it was, the label the annotators' gold.
    by_external = {item.external_id: item for item in imported.values()}
    for name in POSITIVES:
        exported = clients["sup"].get(f"/api/projects/{SLUG}/export/phrasis/", {"file": name})
        assert exported.status_code == 200
        assert exported["Content-Type"].startswith("text/tab-separated-values")
        text = b"".join(exported.streaming_content).decode("utf-8")
        assert text.endswith("\n") and "\r" not in text
        out = [line.split("\t") for line in text.split("\n")[:-1]]
        source_lines = lines(name)
        assert len(out) == len(source_lines)
        for number, (got, want) in enumerate(zip(out, source_lines), start=1):
            assert got[0] == want[0] and got[2:] == want[2:]
            item = by_external[f"{name.removesuffix('.txt')}-{number}"]
            gold = gold_of(item.pk)
            assert got[1] == (want[1] if gold in (None, CODES[want[1].strip()]) else CODE_OF[gold])

    # JSONL: one record per ordinary item, gold = majority, votes = labels cast.
    exported = clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": "jsonl", "status": "complete"})
    assert exported.status_code == 200
    records = [json.loads(line) for line in b"".join(exported.streaming_content).decode("utf-8").splitlines()]
    ordinary_records = [r for r in records if r["id"] in by_external]
    assert len(ordinary_records) == len(imported)
    for record in ordinary_records:
        item = by_external[record["id"]]
        assert record["left"] == item.payload["left"] and record["right"] == item.payload["right"]
        assert record["gold_label"] == gold_of(item.pk)
        assert record["votes"] == {label: sum(ordinary[n][item.pk] == label for n in names) for label in LABELS}
        assert record["n"] == 3 and len(record["annotators"]) == 3
        assert record["label"] == item.reference_label and record["source"] == item.payload["source"]
    # CSV: the same records, BOM first.
    exported = clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": "csv", "status": "complete"})
    body = b"".join(exported.streaming_content).decode("utf-8")
    assert body.startswith("\ufeff")
    csv_rows = [
        row for row in csv.DictReader(io.StringIO(body.removeprefix("\ufeff"), newline="")) if row["id"] in by_external
    ]
    assert len(csv_rows) == len(imported)
    assert all(row["gold_label"] == (gold_of(by_external[row["id"]].pk) or "") for row in csv_rows)
    # The stored gold of the items (items API) is the same majority.
    listed = clients["sup"].get(f"/api/projects/{SLUG}/items/", {"page_size": 1000}).json()["results"]
    assert all((row.get("gold") or None) == gold_of(row["id"]) for row in listed if row["id"] in imported)


def test_generic_export_leaves_probes_out(setup):
    """Reversed probes are never exported as data (nor as gold)."""
    from annotation.models import Item

    project, _people, clients = setup
    assert import_file(clients["sup"], FILES[2]).status_code == 201
    label_all(clients, ["ann1"], lambda name, item, mine: "EQUIVALENT")
    assert Item.objects.filter(project=project, probe_of__isnull=False).exists()
    for fmt in ("jsonl", "csv"):
        exported = clients["sup"].get(f"/api/projects/{SLUG}/export/", {"format": fmt, "status": "all"})
        text = b"".join(exported.streaming_content).decode("utf-8")
        assert "~rev~" not in text, f"a probe leaked into the {fmt} export"


def test_phrasis_export_round_trips_an_unlabeled_file_byte_for_byte(setup):
    _project, _people, clients = setup
    for name in FILES:
        assert import_file(clients["sup"], name).status_code == 201
    for name in FILES:
        exported = clients["sup"].get(f"/api/projects/{SLUG}/export/phrasis/", {"file": name})
        assert exported.status_code == 200
        assert b"".join(exported.streaming_content) == raw(name)
    # The whole project: the four files one after the other, in import order.
    everything = b"".join(clients["sup"].get(f"/api/projects/{SLUG}/export/phrasis/").streaming_content)
    assert everything == b"".join(raw(name) for name in FILES)


def test_phrasis_export_access_and_errors(setup, make_user, client_for):
    _project, _people, clients = setup
    url = f"/api/projects/{SLUG}/export/phrasis/"
    assert clients["ann1"].get(url).status_code == 403
    assert client_for(make_user("stranger")).get(url).status_code == 404
    bad = clients["sup"].get(url, {"status": "gold"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "status"


def test_report_query_count_does_not_grow_with_items(setup, django_assert_max_num_queries):
    _project, _people, clients = setup
    assert import_file(clients["sup"], FILES[0]).status_code == 201
    label_all(clients, ["ann1", "ann2"], lambda name, item, mine: "RELATED")
    with django_assert_max_num_queries(20):
        response = clients["sup"].get(f"/api/projects/{SLUG}/report/")
    assert response.status_code == 200
    assert {row["annotator"] for row in response.json()["coherence"]["per_annotator"]} <= {"ann1", "ann2"}
