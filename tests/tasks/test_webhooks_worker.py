"""Webhook deliveries on a real Celery worker and PostgreSQL: an import's `import.done` is sent
by the worker to a receiver on 127.0.0.1, signed; an endpoint answering 500 gets the same
body again after the backoff (MASHOV_WEBHOOK_BACKOFF_SECONDS, 30 s by default), sent by the
worker from the message it scheduled for itself."""

import io
import json

import pytest

from tests.api.test_webhooks import Receiver, signature_ok
from tests.conftest import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.postgres]


@pytest.fixture
def project(transactional_db, make_user, client_for):
    from django.core.cache import cache

    from annotation.models import Membership
    from annotation.services.projects import project_create

    cache.clear()
    project = project_create(
        actor=make_user("wh-admin", staff=True), slug="hooks-w", name="Hooks", kind="nli_relabel", language="he"
    )
    sup = make_user("wh-sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return client_for(sup)


def test_the_worker_delivers_signed_events_and_retries_after_a_500(project, celery_worker):
    from annotation.models import WebhookDelivery

    good, flaky = Receiver((200,)), Receiver((500, 200))
    try:
        secrets = {}
        for receiver in (good, flaky):
            response = project.post(
                "/api/projects/hooks-w/webhooks/", {"url": receiver.url(), "events": ["import.done"]}, format="json"
            )
            assert response.status_code == 201, response.content
            secrets[receiver] = response.json()["secret"]
        handle = io.BytesIO(b'{"id": "h-1", "premise": "\xd7\x90", "hypothesis": "\xd7\x91"}\n')
        handle.name = "one.jsonl"
        assert project.post("/api/projects/hooks-w/import/", {"file": handle, "format": "jsonl"}).status_code == 201
        wait_until(lambda: len(good.received) == 1, timeout=60)
        body = json.loads(good.received[0]["body"])
        assert body["event"] == "import.done" and body["data"]["created"] == 1
        assert signature_ok(secrets[good], good.received[0])
        wait_until(lambda: len(flaky.received) == 2, timeout=90, interval=0.5)
        assert flaky.received[0]["body"] == flaky.received[1]["body"]
        assert all(signature_ok(secrets[flaky], got) for got in flaky.received)
        delivery = wait_until(
            lambda: WebhookDelivery.objects.filter(webhook__url=flaky.url(), status="delivered").first(), timeout=30
        )
        assert delivery.attempts == 2 and delivery.response_status == 200
    finally:
        good.close()
        flaky.close()
