"""Webhooks: signed JSON deliveries of a project's events to endpoints its supervisors
registered (docs/api.md "Webhooks"; docs/operations.md "Webhooks").

- **Events**: `item.decided` (the decision ledger decided items), `round.closed` (an item's
  round has its votes), `import.done` (an import stored its items), `release.made` (a release
  is ready). Each is announced after the commit of the write that caused it, so a rolled
  back write sends nothing.
- **Signature**: header `X-Mashov-Signature: t=<unix seconds>,v1=<hex>` where the hex is
  HMAC-SHA256(secret, "<t>.<body>") — the scheme Stripe made familiar. A receiver checks the
  HMAC and that `t` is recent, which defeats replays.
- **SSRF**: an endpoint is HTTPS, or plain HTTP to a loopback address (local use, tests). Its
  host must resolve only to public addresses, unless a network is allowed in
  MASHOV_WEBHOOK_ALLOWED_NETWORKS (loopback: MASHOV_WEBHOOK_ALLOW_LOOPBACK). The check runs
  when the endpoint is registered and again at every attempt, and the connection goes to the
  address that was checked (no second lookup a DNS rebinding could change). Redirects are
  not followed: a 3xx is a failed attempt.
- **Retries**: a failed attempt is tried again after MASHOV_WEBHOOK_BACKOFF_SECONDS, doubling
  up to an hour; an endpoint whose attempts have failed for MASHOV_WEBHOOK_DISABLE_AFTER_SECONDS
  (a day) is disabled with a note, and its pending deliveries fail."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import secrets
import socket
import ssl
import time
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotation.errors import InvalidInput, NotFound
from annotation.models import Decision, Project, Webhook, WebhookDelivery
from annotation.services.audit import audit_record
from annotation.services.tasks_queue import enqueue_rollback_unsafe
from annotation.wording import join_list

EVENTS = ("item.decided", "round.closed", "import.done", "release.made")
SIGNATURE_HEADER = "X-Mashov-Signature"
MAX_URL_LENGTH = 500
MAX_WEBHOOKS_PER_PROJECT = 20
# Items per `item.decided` delivery: a pool method deciding a large project sends a few
# deliveries, not one per item.
ITEMS_PER_DELIVERY = 500
MAX_BACKOFF_SECONDS = 3600
# What the log keeps of a failure's text.
ERROR_LENGTH = 500
_CACHE_SECONDS = 60
DELIVER_TASK = "annotation.tasks.deliver_webhook"


# --- signatures ----------------------------------------------------------------------------------


def webhook_signature(secret: str, body: bytes, timestamp: int) -> str:
    """The `X-Mashov-Signature` value for `body` sent at `timestamp` (unix seconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def webhook_signature_valid(secret: str, body: bytes, header: str, *, tolerance: float = 300) -> bool:
    """What a receiver does: the HMAC matches and the timestamp is within `tolerance` seconds."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    expected = webhook_signature(secret, body, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", "")) and abs(time.time() - timestamp) <= tolerance


# --- addresses -----------------------------------------------------------------------------------


def _allowed_networks() -> list:
    return [ipaddress.ip_network(net, strict=False) for net in settings.MASHOV_WEBHOOK_ALLOWED_NETWORKS]


def _address_refusal(address) -> str | None:
    """Why a resolved address may not be called, in the interface's language, or None."""
    if any(address in network for network in _allowed_networks()):
        return None
    if address.is_loopback:
        return None if settings.MASHOV_WEBHOOK_ALLOW_LOOPBACK else gettext("resolves to a loopback address")
    if address.is_link_local:
        return gettext("resolves to a link-local address")
    if address.is_private or address.is_reserved or address.is_multicast or address.is_unspecified:
        return gettext("resolves to a private or reserved address")
    if not address.is_global:
        return gettext("resolves to an address that is not public")
    return None
    if address.is_loopback:
        return None if settings.MASHOV_WEBHOOK_ALLOW_LOOPBACK else "resolves to a loopback address"
    if address.is_link_local:
        return "resolves to a link-local address"
    if address.is_private or address.is_reserved or address.is_multicast or address.is_unspecified:
        return "resolves to a private or reserved address"
    if not address.is_global:
        return "resolves to an address that is not public"
    return None


def webhook_target(url: object) -> tuple[str, str, int, str, str]:
    """Check `url` and resolve its host: (scheme, host, port, path with query, checked
    address). Raises InvalidInput naming `url` with the reason."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise InvalidInput(
            gettext("must be an https URL of at most %(n)s characters") % {"n": MAX_URL_LENGTH}, field="url"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput(gettext("is not a valid URL"), field="url") from None
    host = parts.hostname
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidInput(gettext("must be an https URL"), field="url")
    if parts.username or parts.password:
        raise InvalidInput(gettext("must not carry a user name or password"), field="url")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise InvalidInput(gettext("names a host that does not resolve"), field="url") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    for address in addresses:
        reason = _address_refusal(address)
        if reason:
            # The address and the setting's name stay as they are: the operator types them.
            raise InvalidInput(
                gettext("%(reason)s (%(address)s); the operator can allow it in MASHOV_WEBHOOK_ALLOWED_NETWORKS")
                % {"reason": reason, "address": address},
                field="url",
            )
    if parts.scheme == "http" and not all(address.is_loopback for address in addresses):
        raise InvalidInput(gettext("must be https (plain http only to a loopback address)"), field="url")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, host, port, path, str(addresses[0])


# --- registration --------------------------------------------------------------------------------


def _clean_events(events) -> list[str]:
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise InvalidInput(
            gettext("must be a non-empty list of: %(choices)s") % {"choices": join_list(EVENTS)}, field="events"
        )
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise InvalidInput(
            gettext("unknown event(s) %(unknown)s; known: %(known)s")
            % {"unknown": join_list(unknown), "known": join_list(EVENTS)},
            field="events",
        )
    return [e for e in EVENTS if e in events]


def webhook_create(*, user, project: Project, body: dict) -> tuple[Webhook, str]:
    """Register an endpoint; returns it with its signing secret (shown to the caller once)."""
    unknown = set(body) - {"url", "events"}
    if unknown:
        raise InvalidInput(
            gettext("unknown field(s): %(unknown)s; known: %(known)s")
            % {"unknown": join_list(sorted(unknown)), "known": "events, url"},
            field="body",
        )
    errors = []
    url = body.get("url")
    try:
        webhook_target(url)
    except InvalidInput as exc:
        errors.extend(exc.errors)
    try:
        events = _clean_events(body.get("events"))
    except InvalidInput as exc:
        errors.extend(exc.errors)
    if errors or not isinstance(url, str):  # a URL that is not text is among the errors
        raise InvalidInput(gettext("invalid webhook"), errors=errors)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        if Webhook.objects.filter(project=project).count() >= MAX_WEBHOOKS_PER_PROJECT:
            raise InvalidInput(
                gettext("a project has at most %(n)s webhooks") % {"n": MAX_WEBHOOKS_PER_PROJECT}, field="url"
            )
        secret = secrets.token_hex(32)
        webhook = Webhook.objects.create(project=project, url=url, events=events, secret=secret, created_by=user)
        audit_record(
            actor=user, action="webhook_create", project=project, target=f"webhook:{webhook.pk}",
            after={"url": url, "events": events},
        )  # fmt: skip
        transaction.on_commit(lambda: _forget_subscriptions(project.pk))
    return webhook, secret


def webhook_delete(*, user, project: Project, webhook_id: int) -> None:
    with transaction.atomic():
        webhook = Webhook.objects.filter(project=project, pk=webhook_id).first()
        if webhook is None:
            raise NotFound()
        audit_record(
            actor=user, action="webhook_delete", project=project, target=f"webhook:{webhook.pk}",
            before={"url": webhook.url, "events": webhook.events},
        )  # fmt: skip
        webhook.delete()
        transaction.on_commit(lambda: _forget_subscriptions(project.pk))


def webhook_for_project(project: Project, webhook_id: int) -> Webhook:
    webhook = Webhook.objects.filter(project=project, pk=webhook_id).first()
    if webhook is None:
        raise NotFound()
    return webhook


def delivery_resend(*, user, project: Project, webhook_id: int, delivery_id: int) -> WebhookDelivery:
    """Send a delivery again (a supervisor's): the same body, a fresh signature. A disabled
    endpoint is enabled again by this, as the supervisor says it works now."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update()
            .select_related("webhook")
            .filter(pk=delivery_id, webhook_id=webhook_id, webhook__project=project)
            .first()
        )
        if delivery is None:
            raise NotFound()
        webhook = delivery.webhook
        if not webhook.active:
            webhook.active, webhook.disabled_reason, webhook.failing_since = True, "", None
            webhook.save(update_fields=["active", "disabled_reason", "failing_since"])
            transaction.on_commit(lambda: _forget_subscriptions(project.pk))
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.PENDING, timezone.now()
        delivery.save(update_fields=["status", "next_attempt_at"])
        audit_record(
            actor=user, action="webhook_resend", project=project, target=f"webhook:{webhook.pk}",
            after={"delivery": delivery.pk, "event": delivery.event},
        )  # fmt: skip
        transaction.on_commit(lambda: enqueue_rollback_unsafe(DELIVER_TASK, delivery.pk))
    return delivery


# --- announcing events ---------------------------------------------------------------------------


def _subscriptions_key(project_id: int) -> str:
    return f"mashov:webhooks:{project_id}"


def _forget_subscriptions(project_id: int) -> None:
    cache.delete(_subscriptions_key(project_id))


def _subscribed(project_id: int, event: str) -> bool:
    """Whether an active webhook of the project takes `event`. Cached for a minute (and
    forgotten when webhooks change), as the ledger asks this at every decision."""
    key = _subscriptions_key(project_id)
    events = cache.get(key)
    if events is None:
        events = sorted(
            {
                e
                for row in Webhook.objects.filter(project_id=project_id, active=True).values_list("events", flat=True)
                for e in row
            }
        )
        cache.set(key, events, _CACHE_SECONDS)
    return event in events


def webhook_event_on_commit(project_id: int, event: str, data) -> None:
    """Announce `event` of the project once the surrounding transaction commits. `data` is
    the event's JSON data, or a function returning it (called only when someone listens)."""
    transaction.on_commit(lambda: webhook_event_send(project_id, event, data))


def webhook_event_send(project_id: int, event: str, data) -> list[int]:
    """Store one delivery of `event` for each active webhook of the project that takes it,
    and hand each to the worker. Returns the deliveries' ids."""
    if not _subscribed(project_id, event):
        return []
    hooks = [w for w in Webhook.objects.filter(project_id=project_id, active=True) if event in w.events]
    if not hooks:
        return []
    project = Project.objects.only("slug").get(pk=project_id)
    data = data() if callable(data) else data
    body = json.dumps(
        {"event": event, "project": project.slug, "sent_at": timezone.now().isoformat(), "data": data},
        ensure_ascii=False,
        sort_keys=True,
    )
    now = timezone.now()
    created = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event=event, body=body, next_attempt_at=now) for hook in hooks]
    )
    for delivery in created:
        enqueue_rollback_unsafe(DELIVER_TASK, delivery.pk)
    return [delivery.pk for delivery in created]


def decisions_announce_on_commit(project_id, decision_ids: list[int]) -> None:
    """`item.decided` for the ledger's new decisions of one project, after commit: the
    decided items with their external id, round, method, value and status. `project_id`
    may be a function returning it (read after the commit, only then)."""
    if not decision_ids:
        return

    def send():
        nonlocal project_id
        if callable(project_id):
            project_id = project_id()
        if project_id is None or not _subscribed(project_id, "item.decided"):
            return
        for start in range(0, len(decision_ids), ITEMS_PER_DELIVERY):
            chunk = decision_ids[start : start + ITEMS_PER_DELIVERY]
            webhook_event_send(project_id, "item.decided", lambda chunk=chunk: _decided_items(chunk))

    transaction.on_commit(send)


def _decided_items(decision_ids: list[int]) -> dict:
    rows = (
        Decision.objects.filter(pk__in=decision_ids)
        .order_by("id")
        .values_list("item__external_id", "round", "method", "value", "status")
    )
    return {
        "items": [
            {"external_id": external_id, "round": round_, "method": method, "value": value, "status": status}
            for external_id, round_, method, value, status in rows
        ]
    }


# --- delivering ----------------------------------------------------------------------------------


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to an address checked beforehand, with the certificate checked for the host."""

    def __init__(self, host, port, address, **kwargs):
        self._tls = ssl.create_default_context()  # kept here: the parent's copy is private
        super().__init__(host, port, context=self._tls, **kwargs)
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host, port, address, **kwargs):
        super().__init__(host, port, **kwargs)
        self._address = address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


def _post(url: str, body: bytes, headers: dict) -> int:
    """POST once, no redirects followed; the response status."""
    scheme, host, port, path, address = webhook_target(url)
    connection_class = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    connection = connection_class(host, port, address, timeout=settings.MASHOV_WEBHOOK_TIMEOUT_SECONDS)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)
        return response.status
    finally:
        connection.close()


def backoff_seconds(attempts: int) -> float:
    """The wait before the next attempt after `attempts` failed ones: doubling, capped."""
    return min(settings.MASHOV_WEBHOOK_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS)


def delivery_attempt(delivery_id: int) -> str | None:
    """Make one attempt of a pending delivery that is due, and record it. Returns the
    delivery's status afterwards, or None when there was nothing to do (not pending, not
    due, or its endpoint is disabled): a task delivered twice sends once."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .select_related("webhook")
            .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
            .first()
        )
        if delivery is None or (delivery.next_attempt_at and delivery.next_attempt_at > now):
            return None
        webhook = delivery.webhook
        if not webhook.active:
            delivery.status, delivery.last_error = WebhookDelivery.Status.FAILED, "the endpoint is disabled"
            delivery.save(update_fields=["status", "last_error"])
            return delivery.status
        body = delivery.body.encode("utf-8")
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Mashov-Webhooks",
            SIGNATURE_HEADER: webhook_signature(webhook.secret, body, int(time.time())),
            "X-Mashov-Event": delivery.event,
            "X-Mashov-Delivery": str(delivery.pk),
        }
        error, code = "", None
        try:
            code = _post(webhook.url, body, headers)
            if not 200 <= code < 300:
                error = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
        except InvalidInput as exc:
            error = f"refused: {exc.errors[0].message}"
        except (OSError, http.client.HTTPException) as exc:
            error = f"{exc.__class__.__name__}: {exc}"
        delivery.attempts += 1
        delivery.response_status = code
        delivery.last_error = error[:ERROR_LENGTH]
        if not error:
            delivery.status, delivery.delivered_at, delivery.next_attempt_at = (
                WebhookDelivery.Status.DELIVERED,
                timezone.now(),
                None,
            )
            if webhook.failing_since is not None:
                webhook.failing_since = None
                webhook.save(update_fields=["failing_since"])
        else:
            _record_failure(webhook, delivery, now)
        delivery.save(
            update_fields=["attempts", "response_status", "last_error", "status", "delivered_at", "next_attempt_at"]
        )
        if delivery.status == WebhookDelivery.Status.PENDING and not settings.CELERY_TASK_ALWAYS_EAGER:
            next_attempt_at = delivery.next_attempt_at
            assert next_attempt_at is not None  # _record_failure set it for the next try
            wait = (next_attempt_at - timezone.now()).total_seconds()
            transaction.on_commit(lambda: _enqueue_later(delivery.pk, wait))
        return delivery.status


def _record_failure(webhook: Webhook, delivery: WebhookDelivery, now) -> None:
    """A failed attempt: retry later, or disable the endpoint once it has failed for long."""
    webhook.failing_since = webhook.failing_since or now
    failing_for = (now - webhook.failing_since).total_seconds()
    if failing_for >= settings.MASHOV_WEBHOOK_DISABLE_AFTER_SECONDS:
        webhook.active = False
        webhook.disabled_reason = (
            f"disabled at {now.isoformat(timespec='seconds')}: every attempt failed since "
            f"{webhook.failing_since.isoformat(timespec='seconds')} (last: {delivery.last_error})"
        )[:300]
        webhook.save(update_fields=["failing_since", "active", "disabled_reason"])
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        WebhookDelivery.objects.filter(webhook=webhook, status=WebhookDelivery.Status.PENDING).exclude(
            pk=delivery.pk
        ).update(status=WebhookDelivery.Status.FAILED, last_error="the endpoint was disabled", next_attempt_at=None)
        transaction.on_commit(lambda: _forget_subscriptions(webhook.project_id))
        return
    webhook.save(update_fields=["failing_since"])
    delivery.next_attempt_at = now + timedelta(seconds=backoff_seconds(delivery.attempts))


def _enqueue_later(delivery_id: int, countdown: float) -> None:
    from celery import current_app

    try:
        current_app.tasks[DELIVER_TASK].apply_async(args=(delivery_id,), countdown=max(countdown, 0), retry=False)
    except Exception:  # the sweep sends due deliveries again
        pass


def deliveries_sweep() -> int:
    """Periodic: hand the worker again the pending deliveries that are due (a lost message,
    a broker that was down, the embedded default's retries). Returns how many."""
    due = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=timezone.now(), webhook__active=True
        ).values_list("pk", flat=True)[:1000]
    )
    for delivery_id in due:
        enqueue_rollback_unsafe(DELIVER_TASK, delivery_id)
    return len(due)
