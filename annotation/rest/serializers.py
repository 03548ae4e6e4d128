"""Shapes that the core API and the kinds' endpoints both answer with: the one error body
(docs/api.md "General rules"), an item as supervisors see it and an item as annotators see it."""

from rest_framework import serializers

from annotation.models import Item
from annotation.selectors.items import annotator_label


class ErrorSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    row = serializers.IntegerField(required=False)


class ErrorsSerializer(serializers.Serializer):
    errors = ErrorSerializer(many=True)


class ItemSerializer(serializers.ModelSerializer):
    """An item as supervisors and reviewers see it, with its reference label and votes."""

    author = serializers.SerializerMethodField(
        help_text="the username to supervisors, the export's pseudonym to reviewers"
    )
    gold = serializers.SerializerMethodField()
    votes = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "payload",
            "status",
            "split",
            "group",
            "round",
            "author",
            "reference_label",
            "gold",
            "votes",
            "probe_of",
        ]

    def get_author(self, item) -> str | None:
        if item.author_id is None:
            return None
        return annotator_label(item.project, item.author, names=self.context.get("names", True))

    def get_gold(self, item) -> str | None:
        return item.gold_label or None

    def get_votes(self, item) -> dict[str, int]:
        return self.context.get("votes", {}).get(item.pk, {})


class AnnotatorItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    payload = serializers.DictField()
