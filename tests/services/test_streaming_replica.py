"""The read replica for real: a PostgreSQL streaming replica made by the test with
`pg_basebackup` from the test server (tests/pg_replica.py), the `replica` alias pointed at
it through DATABASE_REPLICA_URL as the settings read it. Every export format and the
report's figures are read from the replica — the queries run on that connection, which is
a server in recovery on the replica's port — and equal the primary's byte for byte, once
the replica has replayed the primary's WAL; the annotator's next → submit and every write
run on the primary only.

The test's rows are committed (transactional_db), since a replica sees only what the
primary committed."""

import json

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from tests.pg_replica import start_replica

pytestmark = [pytest.mark.postgres]

SLUG = "replica-real"
FORMATS = ({"format": "jsonl"}, {"format": "jsonl", "history": "1"}, {"format": "csv"}, {"format": "farstail"})


@pytest.fixture
def streaming_replica(transactional_db, settings):
    """A running streaming replica of the test server, and the `replica` alias on it, made
    from DATABASE_REPLICA_URL as config/settings/base.py does; both gone after the test."""
    from config.settings.base import replica_database

    primary = connections["default"].settings_dict
    replica = start_replica(primary)
    databases = settings.DATABASES  # the dict the connection handler reads its aliases from
    try:
        url = replica.url(primary["NAME"])  # the test database, which the replica streams too
        # A real replica, not the test runner's mirror of the primary. Connected here and kept
        # open: the test case refuses to open a connection to an alias it was not set up with.
        databases["replica"] = {**primary, **replica_database(url), "CONN_MAX_AGE": None, "TEST": {}}
        connections["replica"].connect()
        yield replica
    finally:
        if "replica" in databases:
            connections["replica"].close()
            del connections["replica"]
            databases.pop("replica")
        replica.stop()


def make_project(make_user):
    """A Hebrew nli_relabel project (2 of 3) with decided, split and open items."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item, Membership
    from annotation.services.consensus import consensus_compute_for_item
    from annotation.services.projects import project_create

    sup = make_user("real-sup", staff=True)
    coders = [make_user(f"real-coder{i}") for i in range(3)]
    project = project_create(
        actor=sup, slug=SLUG, name="Replica", kind="nli_relabel", language="he",
        settings={"consensus_k": 2, "consensus_n": 3},
    )  # fmt: skip
    for coder in coders:
        Membership.objects.create(project=project, user=coder, role="annotator", status="active")
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"r{i}", position=i, reference_label="entailment",
             payload={"premise": f"שני אנשים יושבים ליד שולחן, \"{i}\" ומדברים.", "hypothesis": "=אנשים מדברים"})
        for i in range(12)
    )  # fmt: skip
    labels = ("entailment", "entailment", "neutral")
    now = timezone.now()
    for index, item in enumerate(items[:9]):
        votes = labels if index % 3 else ("neutral", "contradiction", "entailment")
        for coder, label in zip(coders[:2], votes):
            assignment = Assignment.objects.create(
                project=project, item=item, annotator=coder, round=1, status="submitted",
                claimed_at=now, expires_at=now, submitted_at=now,
            )  # fmt: skip
            Annotation.objects.create(
                assignment=assignment, item=item, annotator=coder, round=1, value={"label": label}
            )
        Item.objects.filter(pk=item.pk).update(status=Item.Status.COMPLETE)
        consensus_compute_for_item(item.pk)
    return project, sup, coders


def read(client, path: str, params: dict) -> bytes:
    response = client.get(path, params)
    assert response.status_code == 200, response.content[:300]
    return b"".join(response.streaming_content) if response.streaming else response.content


def tables_read(captured) -> set[str]:
    return {table for query in captured for table in ("annotation_item", "annotation_annotation",
            "annotation_consensusoutcome", "annotation_decision") if f'"{table}"' in query["sql"]}  # fmt: skip


def test_exports_and_reports_come_from_a_real_streaming_replica_and_equal_the_primary(
    streaming_replica, make_user, client_for, monkeypatch
):
    from annotation.models import Annotation

    project, sup, coders = make_project(make_user)
    client = client_for(sup)

    # The alias reaches the replica server: in recovery, on the replica's port.
    with connections["replica"].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery(), inet_server_port(), current_database()")
        assert cursor.fetchone() == (True, streaming_replica.port, connections["default"].settings_dict["NAME"])

    # The annotator's hot path and its writes: on the primary only.
    coder = client_for(coders[2])
    with (
        CaptureQueriesContext(connections["replica"]) as on_replica,
        CaptureQueriesContext(connections["default"]) as on_primary,
    ):
        claim = coder.get(f"/api/projects/{SLUG}/next/")
        assert claim.status_code == 200, claim.content
        sent = coder.post(
            f"/api/assignments/{claim.json()['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
        )
        assert sent.status_code == 201, sent.content
    assert on_replica.captured_queries == []
    assert len(on_primary.captured_queries) > 0
    assert Annotation.objects.filter(annotator=coders[2]).count() == 1

    streaming_replica.catch_up(connections["default"])
    from_replica: dict[str, bytes] = {}
    for params in FORMATS:
        key = json.dumps(params)
        with (
            CaptureQueriesContext(connections["replica"]) as on_replica,
            CaptureQueriesContext(connections["default"]) as on_primary,
        ):
            from_replica[key] = read(client, f"/api/projects/{SLUG}/export/", {**params, "status": "all"})
        # The stream's reads ran on the replica; the primary only answered who may export.
        assert "annotation_item" in tables_read(on_replica.captured_queries), key  # FarsTail's TSV reads no votes
        assert tables_read(on_primary.captured_queries) == set(), key
    with CaptureQueriesContext(connections["replica"]) as on_replica:
        report_from_replica = read(client, f"/api/projects/{SLUG}/report/", {})
    assert "annotation_item" in tables_read(on_replica.captured_queries)

    # What the replica served holds the primary's latest write, the vote just submitted.
    assert Annotation.objects.using("replica").filter(annotator=coders[2]).count() == 1
    assert len(from_replica[json.dumps(FORMATS[0])].decode().splitlines()) == 12

    # The primary's files and figures, read with the replica out of the way.
    monkeypatch.setattr("annotation.replica.replica_configured", lambda: False)
    for params in FORMATS:
        key = json.dumps(params)
        with CaptureQueriesContext(connections["replica"]) as on_replica:
            from_primary = read(client, f"/api/projects/{SLUG}/export/", {**params, "status": "all"})
        assert on_replica.captured_queries == []
        assert from_primary == from_replica[key], key
        assert from_primary.count(b"\n") >= 12
    with CaptureQueriesContext(connections["replica"]) as on_replica:
        assert read(client, f"/api/projects/{SLUG}/report/", {}) == report_from_replica
    assert on_replica.captured_queries == []
    counts = json.loads(report_from_replica)["status_counts"]
    assert counts["total"] == 12 and counts["accepted"] == 6 and counts["open"] == 3
