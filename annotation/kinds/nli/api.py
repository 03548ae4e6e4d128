"""The author's side of a failed relabel round through the API (docs/api.md "Revisions"): list
the items to revise, then revise or withdraw one."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.rest.serializers import ErrorsSerializer, ItemSerializer

from . import revisions as revision_services


class RevisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    payload = serializers.DictField()
    intended_label = serializers.CharField()
    round = serializers.IntegerField()
    labels_cast = serializers.DictField(child=serializers.IntegerField())


class ReviseRequestSerializer(serializers.Serializer):
    premise = serializers.CharField(required=False, trim_whitespace=False)
    hypothesis = serializers.CharField(required=False, trim_whitespace=False)
    withdraw = serializers.BooleanField(required=False)


class RevisionListView(generics.ListAPIView):
    serializer_class = RevisionSerializer

    def get_queryset(self):
        return revision_services.revisions_for_author(user=self.request.user, slug=self.kwargs["slug"])


class ItemReviseView(APIView):
    @extend_schema(
        request=ReviseRequestSerializer,
        parameters=IDEMPOTENCY_KEY,
        responses={200: ItemSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, item_id):
        item = revision_services.item_revise(user=request.user, item_id=item_id, changes=body_of(request))
        return Response(ItemSerializer(item).data)
