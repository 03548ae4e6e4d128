from drf_spectacular.utils import inline_serializer
from rest_framework import pagination, serializers


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000


def page_of(name: str, serializer, **extra):
    """The paginated envelope of API.md lists, for the schema; `extra` fields sit beside
    `results` (a list's summary)."""
    return inline_serializer(name, {
        "count": serializers.IntegerField(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        **extra,
        "results": serializer(many=True),
    })
