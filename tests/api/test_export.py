"""`GET /api/projects/{slug}/export/` and `manage.py export_items`: exact
output per format, outcomes from the real consensus step, CSV neutralising and BOM, the
FarsTail round trip, filters, permissions, streaming and a bounded number of queries."""

import hashlib
import hmac
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest

FARSTAIL_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "farstail"
BOM = "\ufeff"

# Our own sentences: RLM, LRM, ZWNJ, trailing spaces, an embedded tab, a newline, quotes,
# Persian digits, and cells a spreadsheet would take for formulas.
PREMISE_A = "הילד\u200f קרא ספר בספרייה.  "
HYPOTHESIS_A = "=SUM(A1:A2) הילד קרא"
PREMISE_B = "او می\u200cخواهد به خانه برود.\tسپس می\u200cخوابد."
HYPOTHESIS_B = '-او نمی\u200cخواهد "هرگز" برود'
PREMISE_C = "+۱۲ درصد از «دانشجویان» آمدند "
HYPOTHESIS_C = '@همه "آمدند", گفت'
PREMISE_D = 'המורה אמרה: "שלום"\u200e'
HYPOTHESIS_D = "שורה ראשונה\nשורה שנייה"
PREMISE_E = "ספר מונח על השולחן."
HYPOTHESIS_E = "יש ספר."

RECORDS = [
    {"id": "he-1", "premise": PREMISE_A, "hypothesis": HYPOTHESIS_A, "label": "entailment", "author": "sup", "group": "g1", "split": "dev"},
    {"id": "fa-2", "premise": PREMISE_B, "hypothesis": HYPOTHESIS_B, "label": "c", "group": "g2", "split": "test",
     "extra": {"hard(hypothesis)": "1", "hard(overlap)": "0"}},
    {"id": "@3", "premise": PREMISE_C, "hypothesis": HYPOTHESIS_C, "label": "neutral", "author": "sup", "group": "g2", "split": "test"},
    {"id": "-4", "premise": PREMISE_D, "hypothesis": HYPOTHESIS_D, "label": "e", "group": "g3", "split": "dev"},
    {"id": "he-5", "premise": PREMISE_E, "hypothesis": HYPOTHESIS_E, "label": "entailment", "group": "g3", "split": "dev"},
]  # fmt: skip
# Relabels cast by ann1 and ann2 (k=2 of n=3, the import's label counting as one vote).
VOTES = {
    "he-1": ("entailment", "neutral"),  # e,e,n → accepted entailment, 2/3
    "fa-2": ("neutral", "neutral"),  # c,n,n → accepted neutral, label changed
    "@3": ("entailment", "contradiction"),  # n,e,c → failed; has an author → needs revision
    "-4": ("neutral", "contradiction"),  # e,n,c → failed; no author → removed
    # he-5: no votes, stays open
}


def upload(name: str, data: str | bytes):
    handle = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    handle.name = name
    return handle


def export(client, slug: str, **params):
    response = client.get(f"/api/projects/{slug}/export/", params)
    body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    return response, body


def pid(project, user) -> str:
    """The pseudonym, recomputed here independently: Django's salted_hmac construction
    (key = SHA-256(salt + SECRET_KEY)), HMAC-SHA256 over "project:user", 16 hex digits."""
    from django.conf import settings

    key = hashlib.sha256(("mashov.export.annotator" + settings.SECRET_KEY).encode()).digest()
    return hmac.new(key, f"{project.pk}:{user.pk}".encode(), hashlib.sha256).hexdigest()[:16]


@pytest.fixture
def users(db, make_user):
    return {
        name: make_user(name, staff=(name == "root"))
        for name in ("root", "sup", "rev", "ann1", "ann2", "ann3", "stranger")
    }


@pytest.fixture
def small_project(users, client_for, settings, django_capture_on_commit_callbacks):
    """A Hebrew/Persian nli_relabel project (k=2 of n=3) whose five items were imported
    through the API and voted on through annotation_submit; the consensus ran for real."""
    from django.utils import timezone

    from annotation.models import Assignment, Item, Membership
    from annotation.services.assignments import annotation_submit
    from annotation.services.projects import project_create

    # The consensus job runs in-process on commit on both stacks (no worker in this module).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    project = project_create(
        actor=users["root"], slug="mixed-nli", name="Mixed NLI", kind="nli_relabel", language="fa",
        settings={"consensus_k": 2, "consensus_n": 3},
    )  # fmt: skip
    for name, role in (
        ("sup", "supervisor"),
        ("rev", "reviewer"),
        ("ann1", "annotator"),
        ("ann2", "annotator"),
        ("ann3", "annotator"),
    ):
        Membership.objects.create(project=project, user=users[name], role=role, status="active")
    jsonl = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in RECORDS)
    response = client_for(users["sup"]).post(
        f"/api/projects/{project.slug}/import/", {"file": upload("mixed.jsonl", jsonl), "format": "jsonl"}
    )
    assert response.status_code == 201, response.content
    now = timezone.now()
    for external_id, labels in VOTES.items():
        item = Item.objects.get(project=project, external_id=external_id)
        for annotator, label in zip(("ann1", "ann2"), labels):
            assignment = Assignment.objects.create(
                project=project, item=item, annotator=users[annotator], round=1, claimed_at=now,
                expires_at=now + timedelta(hours=1),
            )  # fmt: skip
            with django_capture_on_commit_callbacks(execute=True):
                annotation_submit(user=users[annotator], assignment_id=assignment.pk, value={"label": label})
    statuses = dict(Item.objects.filter(project=project).values_list("external_id", "status"))
    assert statuses == {"he-1": "accepted", "fa-2": "accepted", "@3": "needs_revision", "-4": "removed", "he-5": "open"}
    # The aggregation job on the final votes (requests right after a run are debounced).
    from annotation.services.aggregation import aggregation_compute_for_project

    aggregation_compute_for_project(project)
    return project


def stored_aggregates(external_id: str) -> str:
    """The record's `aggregates` as the aggregation job stored them (its figures are tested
    in tests/services/test_aggregation_job.py), written as the export writes JSON."""
    from annotation.models import ItemAggregate

    rows = ItemAggregate.objects.filter(item__external_id=external_id).order_by("method")
    return json.dumps({row.method: {"label": row.label or None, "confidence": row.confidence} for row in rows})


def expected_jsonl_accepted(project, users) -> str:
    sup, ann1, ann2 = (pid(project, users[name]) for name in ("sup", "ann1", "ann2"))
    # k-of-n (2 of 3) and majority agree with the consensus on both items, at 2 of 3 votes.
    for external_id, gold in (("he-1", "entailment"), ("fa-2", "neutral")):
        aggregates = json.loads(stored_aggregates(external_id))
        assert set(aggregates) == {"k_of_n", "majority", "dawid_skene", "mace"}
        assert aggregates["k_of_n"] == aggregates["majority"] == {"label": gold, "confidence": 2 / 3}
    return (
        '{"id": "he-1", "premise": "הילד\u200f קרא ספר בספרייה.  ", "hypothesis": "=SUM(A1:A2) הילד קרא", '
        '"gold_label": "entailment", "author_label": "entailment", '
        '"votes": {"entailment": 2, "neutral": 1, "contradiction": 0}, "n": 3, "round": 1, "group": "g1", '
        '"split": "dev", "status": "accepted", "label_changed": false, "agreement": 0.6666666666666666, '
        f'"author": "{sup}", "annotators": ["{ann1}", "{ann2}"], "annotator_labels": ["entailment", "neutral"], '
        # No extra columns: the member is left out rather than written as an empty object.
        '"aggregates": ' + stored_aggregates("he-1") + ', "decided_by": "k_of_n"}\n'
        '{"id": "fa-2", "premise": "او می\u200cخواهد به خانه برود.\\tسپس می\u200cخوابد.", '
        '"hypothesis": "-او نمی\u200cخواهد \\"هرگز\\" برود", "gold_label": "neutral", "author_label": "contradiction", '
        '"votes": {"entailment": 0, "neutral": 2, "contradiction": 1}, "n": 3, "round": 1, "group": "g2", '
        '"split": "test", "status": "accepted", "label_changed": true, "agreement": 0.6666666666666666, '
        f'"author": null, "annotators": ["{ann1}", "{ann2}"], "annotator_labels": ["neutral", "neutral"], '
        '"extra": {"hard(hypothesis)": "1", "hard(overlap)": "0"}, "aggregates": '
        + stored_aggregates("fa-2")
        + ', "decided_by": "k_of_n"}\n'
    )


@pytest.mark.django_db
def test_jsonl_exact_output_with_consensus_figures(small_project, users, client_for):
    from django.http import StreamingHttpResponse

    response, body = export(client_for(users["sup"]), small_project.slug, format="jsonl")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="mixed-nli-accepted.jsonl"'
    assert body.decode("utf-8") == expected_jsonl_accepted(small_project, users)
    # Not neutralised in JSONL, and the text decodes back to the stored string exactly.
    first, second = (json.loads(line) for line in body.decode("utf-8").splitlines())
    assert first["hypothesis"] == HYPOTHESIS_A and first["premise"] == PREMISE_A
    assert second["premise"] == PREMISE_B and second["hypothesis"] == HYPOTHESIS_B


@pytest.mark.django_db
def test_exported_figures_agree_with_an_independent_count(small_project, users, client_for):
    """gold / votes / n / agreement / label_changed recomputed here from the votes cast."""
    from collections import Counter

    from annotation.models import Annotation, Item

    _, body = export(client_for(users["rev"]), small_project.slug, format="jsonl", status="all")
    records = {record["id"]: record for record in map(json.loads, body.decode("utf-8").splitlines())}
    assert list(records) == ["he-1", "fa-2", "@3", "-4", "he-5"]
    for item in Item.objects.filter(project=small_project):
        cast = list(
            Annotation.objects.filter(item=item, round=item.round)
            .order_by("id")
            .values_list("annotator__username", "value__label")
        )
        counts = Counter([label for _, label in cast] + [item.reference_label])
        record = records[item.external_id]
        assert record["votes"] == {label: counts.get(label, 0) for label in ("entailment", "neutral", "contradiction")}
        assert record["n"] == sum(counts.values())
        assert record["annotators"] == [pid(small_project, users[name]) for name, _ in cast]
        assert record["annotator_labels"] == [label for _, label in cast]
        top_label, top = counts.most_common(1)[0]
        if item.external_id == "he-5":
            assert record["agreement"] is None and record["label_changed"] is None and record["gold_label"] is None
        else:
            assert record["agreement"] == top / sum(counts.values())
        if record["status"] == "accepted":
            assert record["gold_label"] == top_label and top >= 2
            assert record["label_changed"] is (top_label != item.reference_label)
        else:
            assert record["gold_label"] is None


@pytest.mark.django_db
def test_csv_exact_output_bom_and_neutralised_cells(small_project, users, client_for):
    sup, ann1, ann2 = (pid(small_project, users[name]) for name in ("sup", "ann1", "ann2"))
    response, body = export(client_for(users["sup"]), small_project.slug, format="csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="mixed-nli-accepted.csv"'
    assert body.startswith(b"\xef\xbb\xbf")
    assert body.decode("utf-8") == (
        BOM + "id,premise,hypothesis,gold_label,author_label,votes_entailment,votes_neutral,votes_contradiction,"
        "n,round,group,split,status,label_changed,agreement,author,annotators,annotator_labels,extra,decided_by\r\n"
        "he-1,הילד\u200f קרא ספר בספרייה.  ,'=SUM(A1:A2) הילד קרא,entailment,entailment,2,1,0,3,1,g1,dev,"
        f"accepted,false,0.6666666666666666,{sup},{ann1} {ann2},entailment neutral,,k_of_n\r\n"
        'fa-2,او می\u200cخواهد به خانه برود.\tسپس می\u200cخوابد.,"\'-او نمی\u200cخواهد ""هرگز"" برود",'
        f"neutral,contradiction,0,2,1,3,1,g2,test,accepted,true,0.6666666666666666,,{ann1} {ann2},neutral neutral,"
        '"{""hard(hypothesis)"": ""1"", ""hard(overlap)"": ""0""}",k_of_n\r\n'
    )


@pytest.mark.django_db
def test_csv_neutralises_every_formula_cell_and_only_those(small_project, users, client_for):
    import csv

    _, body = export(client_for(users["sup"]), small_project.slug, format="csv", status="all")
    rows = list(csv.reader(io.StringIO(body.decode("utf-8").removeprefix(BOM), newline="")))
    by_id = {row[0]: row for row in rows[1:]}
    assert set(by_id) == {"he-1", "fa-2", "'@3", "'-4", "he-5"}
    assert by_id["'@3"][1] == "'" + PREMISE_C and by_id["'@3"][2] == "'" + HYPOTHESIS_C
    assert by_id["'-4"][1] == PREMISE_D and by_id["'-4"][2] == HYPOTHESIS_D  # newline kept, quoted
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")), cell
    # The same items in JSONL carry their text untouched.
    _, jsonl = export(client_for(users["sup"]), small_project.slug, format="jsonl", status="all")
    records = {record["id"]: record for record in map(json.loads, jsonl.decode("utf-8").splitlines())}
    assert records["@3"]["premise"] == PREMISE_C and records["-4"]["hypothesis"] == HYPOTHESIS_D


@pytest.mark.django_db
def test_farstail_exact_output_uses_gold_when_accepted_else_the_reference_label(small_project, users, client_for):
    response, body = export(client_for(users["sup"]), small_project.slug, format="farstail", status="all")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/tab-separated-values; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="mixed-nli-all.tsv"'
    assert body.decode("utf-8") == (
        "premise\thypothesis\tlabel\thard(hypothesis)\thard(overlap)\n"
        "הילד\u200f קרא ספר בספרייה.  \t=SUM(A1:A2) הילד קרא\te\t\t\n"
        '"او می\u200cخواهد به خانه برود.\tسپس می\u200cخوابد."\t"-او نمی\u200cخواهد ""هرگز"" برود"\tn\t1\t0\n'
        '+۱۲ درصد از «دانشجویان» آمدند \t"@همه ""آمدند"", گفت"\tn\t\t\n'
        '"המורה אמרה: ""שלום""\u200e"\t"שורה ראשונה\nשורה שנייה"\te\t\t\n'
        "ספר מונח על השולחן.\tיש ספר.\te\t\t\n"
    )
    assert not body.startswith(b"\xef\xbb\xbf")


@pytest.mark.django_db
def test_farstail_round_trip_is_byte_identical(nli_project, client_for, django_user_model, tmp_path):
    from django.core.management import call_command

    original = (FARSTAIL_DIR / "Test-word.csv").read_bytes()
    sup = client_for(django_user_model.objects.get(username="sup"))
    imported = sup.post(
        f"/api/projects/{nli_project.slug}/import/", {"file": upload("Test-word.csv", original), "format": "farstail"}
    )
    assert imported.status_code == 201, imported.content
    assert imported.json()["created"] == 61
    response, body = export(sup, nli_project.slug, format="farstail", status="all")
    assert response.status_code == 200
    assert body == original
    # The command writes the same bytes, to a file or to stdout.
    target = tmp_path / "out.tsv"
    call_command(
        "export_items",
        nli_project.slug,
        "--format",
        "farstail",
        "--status",
        "all",
        "--output",
        str(target),
        stderr=io.StringIO(),
    )
    assert target.read_bytes() == original
    out = io.StringIO()
    call_command("export_items", nli_project.slug, "--format=farstail", "--status=all", stdout=out)
    assert out.getvalue().encode("utf-8") == original
    # Nothing is accepted yet: the default status exports the header only.
    _, accepted = export(sup, nli_project.slug, format="farstail")
    assert accepted == b"premise\thypothesis\tlabel\n"


@pytest.mark.django_db
def test_custom_extra_columns_come_back_in_the_imported_order(nli_project, client_for, django_user_model):
    """jsonb sorts an object's keys by length and bytes; the FarsTail file and the JSONL
    `extra` object keep the order they were imported in (docs/text.md "Storing text")."""
    sup = client_for(django_user_model.objects.get(username="sup"))
    header = "premise\thypothesis\tlabel\tzeta_note\thard(overlap)\tb\thard(hypothesis)\n"
    rows = [
        f"{PREMISE_E}\t{HYPOTHESIS_E}\te\tיד שנייה\t1\t\t0\n",
        f"{PREMISE_E}\tאין ספר.\tc\t\t0\tx\t1\n",
    ]
    original = (header + "".join(rows)).encode("utf-8")
    imported = sup.post(
        f"/api/projects/{nli_project.slug}/import/", {"file": upload("own.tsv", original), "format": "farstail"}
    )
    assert imported.status_code == 201, imported.content
    _, body = export(sup, nli_project.slug, format="farstail", status="all")
    assert body == original
    record = {
        "id": "ordered",
        "premise": PREMISE_A,
        "hypothesis": HYPOTHESIS_A,
        "extra": {"zz": "1", "a": "2", "mmm": "3"},
    }
    data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    assert (
        sup.post(
            f"/api/projects/{nli_project.slug}/import/", {"file": upload("o.jsonl", data), "format": "jsonl"}
        ).status_code
        == 201
    )
    _, jsonl = export(sup, nli_project.slug, format="jsonl", status="all")
    exported = [json.loads(line) for line in jsonl.decode("utf-8").splitlines()]
    by_id = {row["id"]: row for row in exported}
    assert list(by_id["ordered"]["extra"]) == ["zz", "a", "mmm"]
    assert list(by_id["own-1"]["extra"]) == ["zeta_note", "hard(overlap)", "b", "hard(hypothesis)"]
    # Re-importing the same file changes nothing.
    again = sup.post(
        f"/api/projects/{nli_project.slug}/import/", {"file": upload("own.tsv", original), "format": "farstail"}
    )
    assert again.status_code in (200, 201) and again.json()["created"] == 0, again.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params, ids",
    [
        ({}, ["he-1", "fa-2"]),
        ({"status": "accepted"}, ["he-1", "fa-2"]),
        ({"status": "removed"}, ["-4"]),
        ({"status": "needs_revision"}, ["@3"]),
        ({"status": "open"}, ["he-5"]),
        ({"status": "complete"}, []),
        ({"status": "all"}, ["he-1", "fa-2", "@3", "-4", "he-5"]),
        ({"status": "all", "split": "test"}, ["fa-2", "@3"]),
        ({"status": "all", "split": "dev"}, ["he-1", "-4", "he-5"]),
        ({"split": "dev"}, ["he-1"]),
        ({"status": "all", "split": ""}, ["he-1", "fa-2", "@3", "-4", "he-5"]),
        ({"status": "all", "split": "nope"}, []),
    ],
)
def test_status_and_split_filters(small_project, users, client_for, params, ids):
    response, body = export(client_for(users["sup"]), small_project.slug, format="jsonl", **params)
    assert response.status_code == 200
    assert [json.loads(line)["id"] for line in body.decode("utf-8").splitlines()] == ids


@pytest.mark.django_db
def test_failed_and_open_items_records(small_project, users, client_for):
    _, body = export(client_for(users["sup"]), small_project.slug, format="jsonl", status="all")
    records = {record["id"]: record for record in map(json.loads, body.decode("utf-8").splitlines())}
    removed = records["-4"]
    assert (removed["status"], removed["gold_label"], removed["author_label"]) == ("removed", None, "entailment")
    assert removed["votes"] == {"entailment": 1, "neutral": 1, "contradiction": 1}
    assert (removed["n"], removed["agreement"], removed["label_changed"]) == (3, 1 / 3, False)
    assert records["@3"]["author"] == pid(small_project, users["sup"])
    opened = records["he-5"]
    assert opened["votes"] == {"entailment": 1, "neutral": 0, "contradiction": 0}  # the original label's vote
    assert (opened["n"], opened["annotators"], opened["agreement"], opened["label_changed"]) == (1, [], None, None)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params, field",
    [
        ({"format": "squad"}, "format"),  # a format the kind lacks
        ({"format": "xml"}, "format"),
        ({}, "format"),
        ({"format": "jsonl", "status": "gold"}, "status"),
        ({"format": "jsonl", "status": "ACCEPTED"}, "status"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(small_project, users, client_for, params, field):
    response, body = export(client_for(users["sup"]), small_project.slug, **params)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert [error["field"] for error in json.loads(body)["errors"]] == [field]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "username, code", [("sup", 200), ("rev", 200), ("root", 200), ("ann1", 403), ("stranger", 404)]
)
def test_permissions(small_project, users, client_for, username, code):
    response, body = export(client_for(users[username]), small_project.slug, format="csv")
    assert response.status_code == code
    if code != 200:
        assert "errors" in json.loads(body)


@pytest.mark.django_db
def test_unauthenticated_and_unknown_project(small_project, users, client_for, api_client):
    assert api_client.get(f"/api/projects/{small_project.slug}/export/", {"format": "jsonl"}).status_code == 401
    response, _ = export(client_for(users["sup"]), "no-such-project", format="jsonl")
    assert response.status_code == 404


def _bulk_items(project, count: int, start: int = 0):
    from annotation.models import Item

    Item.objects.bulk_create(
        Item(project=project, external_id=f"bulk-{number}", payload={"premise": f"پیش‌فرض {number}", "hypothesis": "فرضیه"},
             reference_label="neutral", position=1000 + number)
        for number in range(start, start + count)
    )  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "farstail"])
def test_query_count_does_not_grow_with_items(small_project, users, client_for, fmt, django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(users["rev"])

    def count_queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            response, body = export(client, small_project.slug, format=fmt, status="all")
        assert response.status_code == 200
        return len(captured), body.count(b"\n")

    small, small_lines = count_queries()
    _bulk_items(small_project, 60)
    large, large_lines = count_queries()
    assert large_lines >= small_lines + 60
    assert large == small
    # auth, project, membership, items, and per chunk: outcomes, annotations, adjudications,
    # effective decisions, aggregates
    with django_assert_max_num_queries(9):
        export(client, small_project.slug, format=fmt, status="all")


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "farstail"])
def test_chunk_boundaries_change_nothing(small_project, users, client_for, fmt, monkeypatch):
    """With two items a chunk, the output is the same and outcomes/annotations are read
    once per chunk, not once per item."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.selectors import exports

    client = client_for(users["sup"])
    _, whole = export(client, small_project.slug, format=fmt, status="all")
    monkeypatch.setattr(exports, "CHUNK_SIZE", 2)
    with CaptureQueriesContext(connection) as captured:
        _, chunked = export(client, small_project.slug, format=fmt, status="all")
    assert chunked == whole
    per_item = [query["sql"] for query in captured if "annotation_annotation" in query["sql"]]
    if fmt == "farstail":
        assert per_item == []  # the dataset's layout needs no votes
    else:
        assert len(per_item) == 3  # 5 items in chunks of 2


@pytest.mark.django_db
def test_pseudonyms_are_stable_per_project_and_unlinkable(small_project, users, client_for):
    from annotation.selectors.names import annotator_pseudonym

    ann1 = users["ann1"]
    value = annotator_pseudonym(small_project.pk, ann1.pk)
    assert value == pid(small_project, ann1) == annotator_pseudonym(small_project.pk, ann1.pk)
    assert len(value) == 16 and int(value, 16) >= 0
    assert annotator_pseudonym(small_project.pk + 1, ann1.pk) != value
    _, body = export(client_for(users["sup"]), small_project.slug, format="csv", status="all")
    text = body.decode("utf-8")
    for name in ("ann1", "ann2", "sup"):
        assert name not in text


@pytest.mark.django_db
def test_command_matches_the_api_and_refuses_bad_input(small_project, users, client_for, tmp_path):
    from django.core.management import CommandError, call_command

    for fmt in ("jsonl", "csv"):
        _, api_body = export(client_for(users["sup"]), small_project.slug, format=fmt, status="all", split="dev")
        out = io.StringIO()
        call_command("export_items", small_project.slug, f"--format={fmt}", "--status=all", "--split=dev", stdout=out)
        assert out.getvalue().encode("utf-8") == api_body
    with pytest.raises(CommandError):
        call_command("export_items", small_project.slug, "--format=squad", stderr=io.StringIO())
    with pytest.raises(CommandError):
        call_command("export_items", small_project.slug, "--format=jsonl", "--status=bogus", stderr=io.StringIO())
    with pytest.raises(CommandError):
        call_command("export_items", "no-such-project", "--format=jsonl")
    assert not list(tmp_path.iterdir())


@pytest.mark.django_db
def test_jsonl_keeps_one_record_per_line_with_unicode_line_separators(small_project, users, client_for):
    from annotation.models import Item

    text = "א\u2028ב\u2029ג\x85ד"
    Item.objects.filter(project=small_project, external_id="he-5").update(payload={"premise": text, "hypothesis": "ה"})
    _, body = export(client_for(users["sup"]), small_project.slug, format="jsonl", status="open")
    lines = body.decode("utf-8").splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["premise"] == text


@pytest.mark.django_db
def test_schema_describes_the_export(users, client_for):
    response = client_for(users["sup"]).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    operation = json.loads(response.content)["paths"]["/api/projects/{slug}/export/"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"format", "status", "split"} <= names
