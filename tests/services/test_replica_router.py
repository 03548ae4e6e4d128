"""The read-replica router: with DATABASE_REPLICA_URL set, the exports' and the reports' reads
go to the `replica` alias and everything else — writes, the annotate path, reads inside
the primary's transaction, migrations — to the primary. Here the replica is a second
connection to the test database (a streaming replica holds the same rows)."""

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext


@pytest.fixture
def replica(transactional_db, settings):
    """A `replica` alias: a second connection to the test database, as DATABASE_REPLICA_URL
    would add one (config/settings/base.py)."""
    databases = settings.DATABASES  # the dict the connection handler reads its aliases from
    databases["replica"] = {**databases["default"]}
    connection = connections["replica"]
    # The test case refuses to open aliases it was not told about; this one is the test's own.
    connection.connect()
    try:
        yield connection
    finally:
        connections["replica"].close()
        del connections["replica"]
        databases.pop("replica")


def test_without_a_replica_every_read_stays_on_the_primary(db):
    from annotation.models import Item
    from annotation.replica import ReplicaRouter, replica_reads

    router = ReplicaRouter()
    with replica_reads():
        assert router.db_for_read(Item) == "default"
    assert router.db_for_read(Item) == "default"


def test_the_router_sends_only_marked_reads_outside_a_transaction_to_the_replica(replica):
    from annotation.models import Item
    from annotation.replica import ReplicaRouter, replica_reads

    router = ReplicaRouter()
    assert router.db_for_read(Item) == "default"
    with replica_reads():
        assert router.db_for_read(Item) == "replica"
        assert router.db_for_write(Item) == "default"
        with transaction.atomic():
            # A read in the primary's transaction must see that transaction's writes.
            assert router.db_for_read(Item) == "default"
    assert router.db_for_read(Item) == "default"
    assert router.allow_migrate("default", "annotation") is True
    assert router.allow_migrate("replica", "annotation") is False


def test_exports_and_reports_read_from_the_replica_and_the_annotate_path_does_not(
    replica, make_user, client_for, monkeypatch
):
    from annotation.models import Item, Membership
    from annotation.services.assignments import annotation_submit, assignment_next_for_annotator
    from annotation.services.projects import project_create

    sup = make_user("rep-sup", staff=True)
    coder = make_user("rep-coder")
    project = project_create(
        actor=sup, slug="rep", name="rep", kind="nli_relabel", language="he",
        settings={"consensus_k": 2, "consensus_n": 3},
    )  # fmt: skip
    Membership.objects.create(project=project, user=coder, role="annotator", status="active")
    for index in range(3):
        Item.objects.create(project=project, external_id=f"r{index}", position=index,
                            payload={"premise": f"הנחה {index}", "hypothesis": "השערה"})  # fmt: skip
    with CaptureQueriesContext(replica) as on_replica:
        claim = assignment_next_for_annotator(user=coder, slug="rep")
        annotation_submit(user=coder, assignment_id=claim.pk, value={"label": "neutral"})
    assert len(on_replica) == 0

    client = client_for(sup)
    with CaptureQueriesContext(replica) as on_replica:
        response = client.get("/api/projects/rep/export/", {"format": "jsonl", "status": "all"})
        from_replica = b"".join(response.streaming_content)
    assert response.status_code == 200
    assert any("annotation_item" in query["sql"] for query in on_replica.captured_queries)
    with CaptureQueriesContext(replica) as on_replica:
        report = client.get("/api/projects/rep/report/")
    assert report.status_code == 200 and report.json()["status_counts"]
    assert len(on_replica) > 0

    # The same file as the primary gives.
    monkeypatch.setattr("annotation.replica.replica_configured", lambda: False)
    with CaptureQueriesContext(replica) as on_replica:
        response = client.get("/api/projects/rep/export/", {"format": "jsonl", "status": "all"})
        from_primary = b"".join(response.streaming_content)
    assert len(on_replica) == 0
    assert from_primary == from_replica and from_replica.count(b"\n") == 3
