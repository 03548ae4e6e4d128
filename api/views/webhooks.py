"""Webhooks (docs/api.md "Webhooks"): a project's endpoints, their delivery log, a re-send.
Supervisors only. Thin: parse, call annotation.services.webhooks, answer."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access
from annotation.models import WebhookDelivery
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS
from annotation.services import webhooks

LAST_DELIVERIES = 5
LOG_LENGTH = 100


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    event = serializers.CharField()
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.values)
    attempts = serializers.IntegerField()
    response_status = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    created_at = serializers.DateTimeField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    delivered_at = serializers.DateTimeField(allow_null=True)


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=webhooks.EVENTS))
    active = serializers.BooleanField()
    disabled_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_deliveries = serializers.SerializerMethodField()

    def get_last_deliveries(self, webhook) -> list[dict]:
        return DeliverySerializer(webhook.deliveries.order_by("-id")[:LAST_DELIVERIES], many=True).data


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(help_text="the HMAC-SHA256 signing key; shown only in this answer")


class WebhookListView(APIView):
    @extend_schema(
        summary="The project's webhooks with their last deliveries (supervisors)",
        responses={200: WebhookSerializer(many=True), **ERRORS},
    )
    def get(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        return Response(WebhookSerializer(project.webhooks.order_by("id"), many=True).data)

    @extend_schema(
        summary="Register a webhook (supervisors)",
        description=(
            "`url`: https (plain http only to a loopback address); a host resolving to a private, link-local or "
            "reserved address is refused unless its network is allowed in MASHOV_WEBHOOK_ALLOWED_NETWORKS. "
            "`events`: item.decided, round.closed, import.done, release.made. Deliveries are JSON signed with "
            '`X-Mashov-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. The answer '
            "carries the secret, shown this once."
        ),
        request=inline_serializer(
            "WebhookRequest",
            {"url": serializers.CharField(), "events": serializers.ListField(child=serializers.CharField())},
        ),
        responses={201: WebhookCreatedSerializer, **ERRORS},
    )
    def post(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        webhook, secret = webhooks.webhook_create(user=request.user, project=project, body=body_of(request))
        data = {**WebhookSerializer(webhook).data, "secret": secret}
        return Response(data, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    @extend_schema(
        summary="A webhook and its delivery log, newest first (supervisors)",
        responses={
            200: inline_serializer(
                "WebhookLog", {"webhook": WebhookSerializer(), "deliveries": DeliverySerializer(many=True)}
            ),
            **ERRORS,
        },
    )
    def get(self, request, slug, webhook_id):
        project = access.access_project_for_supervisor(request.user, slug)
        webhook = webhooks.webhook_for_project(project, webhook_id)
        deliveries = webhook.deliveries.order_by("-id")[:LOG_LENGTH]
        return Response(
            {"webhook": WebhookSerializer(webhook).data, "deliveries": DeliverySerializer(deliveries, many=True).data}
        )

    @extend_schema(summary="Remove a webhook (supervisors)", responses={204: None, **ERRORS})
    def delete(self, request, slug, webhook_id):
        project = access.access_project_for_supervisor(request.user, slug)
        webhooks.webhook_delete(user=request.user, project=project, webhook_id=webhook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryResendView(APIView):
    @extend_schema(
        summary="Send a delivery again (supervisors)",
        description="The same body with a fresh signature; a disabled endpoint is enabled again.",
        request=None,
        responses={202: DeliverySerializer, **ERRORS},
    )
    def post(self, request, slug, webhook_id, delivery_id):
        project = access.access_project_for_supervisor(request.user, slug)
        delivery = webhooks.delivery_resend(
            user=request.user, project=project, webhook_id=webhook_id, delivery_id=delivery_id
        )
        delivery.refresh_from_db()
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
