"""The submit that closes a round does the round's work after its commit or on the worker,
never in proportion to the project: an annotator's answer takes as many database statements
when the project has hundreds of decided pairs as when it has none, ordinary pairs and
reversed probes alike (a submit once took most of a second while a round closed, and the
label keys pressed meanwhile went nowhere). The statements are counted with the commit's
callbacks run, as in a request."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db(transaction=True)


def test_closing_rounds_costs_the_same_whatever_the_number_of_decided_pairs(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.imports import items_import
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="he-rounds", name="צמדים", kind="phrase_pair", language="he",
                             settings={"labels_per_item": 1, "probe_rate": 0.5, "probe_seed": 3})  # fmt: skip
    annotator = make_user("eli")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    rows = [{"id": f"p{i}", "left": f"בית ספר {i}", "right": f"בית הספר היסודי {i}"} for i in range(120)]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    assert items_import(project=project, data=data, fmt="jsonl").created == 120
    client = client_for(annotator)
    counts: list[int] = []  # statements of each submit, in order
    while True:
        got = client.get("/api/projects/he-rounds/next/")
        if got.status_code == 204:
            break
        body = got.json()
        with CaptureQueriesContext(connection) as queries:
            sent = client.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "EQUIVALENT"}}, format="json"
            )
        assert sent.status_code == 201, sent.content
        counts.append(len(queries))
    assert len(counts) > 120  # reversed probes were mixed in
    early, late = counts[:10], counts[-10:]
    assert max(late) <= max(early), (early, late)
