"""Webhooks on the real stack with a real HTTP receiver on 127.0.0.1 (docs/api.md "Webhooks"):
registration with the secret shown once; refused addresses (private, link-local, plain http
elsewhere than loopback) are 400s naming `url` with nothing stored; deliveries are signed
(`X-Mashov-Signature: t=…,v1=HMAC-SHA256(secret, "t.body")`); a 500 is retried; an endpoint
failing for the configured time is disabled with a note; nothing is sent for another
project's events; the log shows each delivery and a supervisor can send one again.

Tasks run in-process here (the embedded default) so that each attempt happens inside the
test; the worker's half is in tests/tasks/test_webhooks_worker.py."""

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SLUG = "fa-nli"


class Receiver:
    """An HTTP server on 127.0.0.1 answering each POST with the next scripted status (the
    last one repeats) and recording what it got."""

    def __init__(self, statuses=(200,)):
        self.statuses, self.received = list(statuses), []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(statuses=(200,)):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def embedded(settings):
    """Tasks in-process, as without a broker."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MASHOV_WEBHOOK_BACKOFF_SECONDS = 0.01
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def sup(nli_project, client_for, django_user_model):
    return client_for(django_user_model.objects.get(username="sup"))


def register(client, url, events=("item.decided",), slug=SLUG):
    response = client.post(f"/api/projects/{slug}/webhooks/", {"url": url, "events": list(events)}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def signature_ok(secret: str, delivery: dict) -> bool:
    header = delivery["headers"]["X-Mashov-Signature"]
    parts = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + delivery["body"], hashlib.sha256).hexdigest()
    return hmac.compare_digest(parts["v1"], expected) and abs(time.time() - int(parts["t"])) < 60


def decide(project, external_id: str, label: str = "neutral"):
    """An item of the project decided through the ledger, the commit's callbacks run."""
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.decisions import RANK_ROUND_RULE, decision_record

    with transaction.atomic():
        item, _ = Item.objects.get_or_create(
            project=project, external_id=external_id, defaults={"payload": {"premise": "م", "hypothesis": "ف"}}
        )
        item = Item.objects.select_for_update().get(pk=item.pk)
        return decision_record(item=item, method="k_of_n", rank=RANK_ROUND_RULE, value=label, status="accepted")


@pytest.mark.django_db
def test_a_decision_is_delivered_signed_and_the_secret_is_shown_once(
    sup, nli_project, embedded, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    created = register(sup, hook.url(), events=["item.decided", "release.made"])
    assert len(created["secret"]) == 64 and created["events"] == ["item.decided", "release.made"]
    listed = sup.get(f"/api/projects/{SLUG}/webhooks/").json()
    assert "secret" not in listed[0] and listed[0]["url"] == hook.url()

    with django_capture_on_commit_callbacks(execute=True):
        decision = decide(nli_project, "w-1")
    [got] = hook.received
    assert signature_ok(created["secret"], got)
    assert not signature_ok("another secret" * 4, got)
    assert got["headers"]["X-Mashov-Event"] == "item.decided"
    body = json.loads(got["body"])
    assert body["event"] == "item.decided" and body["project"] == SLUG
    assert body["data"]["items"] == [
        {"external_id": "w-1", "round": decision.round, "method": "k_of_n", "value": "neutral", "status": "accepted"}
    ]
    log = sup.get(f"/api/projects/{SLUG}/webhooks/{created['id']}/").json()
    assert [(d["event"], d["status"], d["attempts"], d["response_status"]) for d in log["deliveries"]] == [
        ("item.decided", "delivered", 1, 200)
    ]


@pytest.mark.django_db
def test_a_500_is_retried_and_the_second_attempt_delivers(
    sup, nli_project, embedded, receiver, django_capture_on_commit_callbacks
):
    from annotation.models import WebhookDelivery
    from annotation.services.webhooks import deliveries_sweep

    hook = receiver(statuses=(500, 200))
    created = register(sup, hook.url())
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-2")
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("pending", 1, 500)
    assert delivery.last_error == "HTTP 500" and delivery.next_attempt_at is not None
    time.sleep(0.05)
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_sweep() == 1  # the retry is due (backoff 0.01 s here)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 2, 200)
    assert len(hook.received) == 2 and hook.received[0]["body"] == hook.received[1]["body"]
    assert all(signature_ok(created["secret"], got) for got in hook.received)


@pytest.mark.django_db
def test_an_endpoint_failing_for_long_is_disabled_with_a_note_and_can_be_resent(
    sup, nli_project, embedded, settings, receiver, django_capture_on_commit_callbacks
):
    from annotation.models import Webhook, WebhookDelivery
    from annotation.services.webhooks import deliveries_sweep

    settings.MASHOV_WEBHOOK_DISABLE_AFTER_SECONDS = 0.2
    hook = receiver(statuses=(503,))
    created = register(sup, hook.url())
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-3")
    time.sleep(0.3)
    with django_capture_on_commit_callbacks(execute=True):
        deliveries_sweep()
    webhook = Webhook.objects.get()
    assert not webhook.active and "every attempt failed since" in webhook.disabled_reason
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 2)
    # Disabled: later events are not sent to it.
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-4")
    assert WebhookDelivery.objects.count() == 1 and len(hook.received) == 2
    listed = sup.get(f"/api/projects/{SLUG}/webhooks/").json()[0]
    assert listed["active"] is False and listed["disabled_reason"]
    # The supervisor fixed the endpoint and sends the delivery again: enabled, delivered.
    hook.statuses = [200]
    with django_capture_on_commit_callbacks(execute=True):
        response = sup.post(f"/api/projects/{SLUG}/webhooks/{created['id']}/deliveries/{delivery.pk}/resend/")
    assert response.status_code == 202, response.content
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    assert Webhook.objects.get().active


@pytest.mark.django_db
def test_nothing_is_sent_for_another_project(
    sup, nli_project, embedded, receiver, make_user, client_for, django_capture_on_commit_callbacks
):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    other = project_create(
        actor=make_user("root2", staff=True), slug="he-nli", name="Other", kind="nli_relabel", language="he"
    )
    other_sup = make_user("sup2")
    Membership.objects.create(project=other, user=other_sup, role="supervisor", status="active")
    mine, theirs = receiver(), receiver()
    register(sup, mine.url())
    register(client_for(other_sup), theirs.url(), slug="he-nli")
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-5")
    assert len(mine.received) == 1 and theirs.received == []
    with django_capture_on_commit_callbacks(execute=True):
        decide(other, "w-6")
    assert len(mine.received) == 1 and len(theirs.received) == 1
    assert json.loads(theirs.received[0]["body"])["project"] == "he-nli"


@pytest.mark.django_db
def test_redirects_are_not_followed(sup, nli_project, embedded, receiver, django_capture_on_commit_callbacks):
    from annotation.models import WebhookDelivery

    hook = receiver(statuses=(302,))
    register(sup, hook.url())
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-7")
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and "redirects are not followed" in delivery.last_error
    assert len(hook.received) == 1


@pytest.mark.django_db
def test_bad_urls_and_events_are_400s_naming_the_field_and_store_nothing(sup, settings):
    from annotation.models import AuditEntry, Webhook

    audit = AuditEntry.objects.count()
    for url in (
        "https://10.1.2.3/hook",  # private
        "https://192.168.0.10/hook",
        "https://169.254.169.254/latest/meta-data/",  # link-local (cloud metadata)
        "https://[fe80::1]/hook",
        "https://0.0.0.0/hook",
        "http://8.8.8.8/hook",  # plain http elsewhere than loopback
        "ftp://127.0.0.1/hook",
        "https://user:pw@127.0.0.1/hook",
        "not a url",
        "",
        5,
    ):
        response = sup.post(f"/api/projects/{SLUG}/webhooks/", {"url": url, "events": ["item.decided"]}, format="json")
        assert response.status_code == 400, (url, response.content)
        assert [e["field"] for e in response.json()["errors"]] == ["url"], (url, response.json())
    for events in ([], ["item.deleted"], "item.decided", [1]):
        response = sup.post(
            f"/api/projects/{SLUG}/webhooks/", {"url": "https://127.0.0.1/", "events": events}, format="json"
        )
        assert response.status_code == 400 and [e["field"] for e in response.json()["errors"]] == ["events"]
    assert not Webhook.objects.exists() and AuditEntry.objects.count() == audit
    # A network the operator allows is accepted.
    settings.MASHOV_WEBHOOK_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    register(sup, "https://10.1.2.3/hook")
    assert AuditEntry.objects.filter(action="webhook_create").count() == 1


@pytest.mark.django_db
def test_loopback_can_be_refused_by_the_operator(sup, settings):
    settings.MASHOV_WEBHOOK_ALLOW_LOOPBACK = False
    response = sup.post(
        f"/api/projects/{SLUG}/webhooks/", {"url": "http://127.0.0.1:8000/", "events": ["import.done"]}, format="json"
    )
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "url"


@pytest.mark.django_db
def test_only_supervisors_manage_webhooks(sup, client_for, django_user_model, make_user):
    for name in ("rev", "ann1"):
        client = client_for(django_user_model.objects.get(username=name))
        assert client.get(f"/api/projects/{SLUG}/webhooks/").status_code == 403
        body = {"url": "https://127.0.0.1/", "events": ["item.decided"]}
        assert client.post(f"/api/projects/{SLUG}/webhooks/", body, format="json").status_code == 403
    assert client_for(make_user("outsider")).get(f"/api/projects/{SLUG}/webhooks/").status_code == 404


@pytest.mark.django_db
def test_release_made_and_import_done_are_delivered(
    sup, nli_project, embedded, settings, tmp_path, receiver, django_capture_on_commit_callbacks
):
    from tests.release.test_publish import FARSTAIL, upload

    settings.MASHOV_RELEASE_ROOT = str(tmp_path)
    hook = receiver()
    created = register(sup, hook.url(), events=["release.made", "import.done"])
    with django_capture_on_commit_callbacks(execute=True):
        response = sup.post(
            f"/api/projects/{SLUG}/import/",
            {
                "file": upload("Test-word.csv", (FARSTAIL / "Test-word.csv").read_bytes()),
                "format": "farstail",
                "labels_final": "true",
            },
        )
    assert response.status_code == 201, response.content
    with django_capture_on_commit_callbacks(execute=True):
        response = sup.post(f"/api/projects/{SLUG}/releases/", {"version": "2.0"}, format="json")
    assert response.status_code == 202, response.content
    events = [json.loads(got["body"]) for got in hook.received]
    assert [e["event"] for e in events] == ["import.done", "release.made"]
    assert events[0]["data"]["created"] == 61
    made = events[1]["data"]
    assert made["version"] == "2.0" and made["status"] == "ready"
    assert "data/test.jsonl" in [f["name"] for f in made["files"]]
    assert all(signature_ok(created["secret"], got) for got in hook.received)


@pytest.mark.django_db
def test_a_round_closed_by_votes_and_its_consensus_are_delivered(
    make_user, client_for, embedded, receiver, django_capture_on_commit_callbacks
):
    """Three annotators label an item of a 2-of-3 project through HTTP: its round closes at
    the last vote (`round.closed`) and the consensus step decides it (`item.decided`)."""
    from tests.api.test_decision_ledger import import_rows, pairs
    from tests.api.test_quality import project_with_members

    project, _people, clients = project_with_members(
        make_user,
        client_for,
        slug="he-hooks",
        name="Hooks",
        kind="nli_relabel",
        settings={"consensus_k": 2, "consensus_n": 3},
    )
    hook = receiver()
    register(clients["sup"], hook.url(), events=["round.closed", "item.decided"], slug="he-hooks")
    import_rows(clients["sup"], "he-hooks", pairs(["r-1"]))
    for name in ("a1", "a2", "a3"):
        got = clients[name].get("/api/projects/he-hooks/next/").json()
        with django_capture_on_commit_callbacks(execute=True):
            sent = clients[name].post(
                f"/api/assignments/{got['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
            )
        assert sent.status_code == 201, sent.content
    events = [json.loads(got["body"]) for got in hook.received]
    assert [e["event"] for e in events] == ["round.closed", "item.decided"]
    assert events[0]["data"] == {"external_id": "r-1", "round": 1}
    assert events[1]["data"]["items"][0]["external_id"] == "r-1"
    assert events[1]["data"]["items"][0]["value"] == "neutral"


@pytest.mark.django_db
def test_a_curation_removal_and_its_restore_are_announced(
    sup, nli_project, embedded, receiver, django_capture_on_commit_callbacks
):
    """A near-duplicate removal and its restore reach subscribers as item.decided, like any
    other decision of the ledger."""
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.decisions import curation_removals_record, curation_restores_record

    hook = receiver()
    register(sup, hook.url())
    with django_capture_on_commit_callbacks(execute=True):
        decide(nli_project, "w-9", "entailment")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        item = Item.objects.select_for_update().get(project=nli_project, external_id="w-9")
        curation_removals_record([item], method="near_duplicate", reasons={item.pk: "copy of w-8"})
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        item = Item.objects.select_for_update().get(project=nli_project, external_id="w-9")
        curation_restores_record([item], method="near_duplicate", user=None)
    bodies = [json.loads(got["body"])["data"]["items"] for got in hook.received]
    assert [(b[0]["method"], b[0]["status"], b[0]["value"]) for b in bodies] == [
        ("k_of_n", "accepted", "entailment"),
        ("near_duplicate", "removed", "entailment"),
        ("restore", "accepted", "entailment"),
    ]
