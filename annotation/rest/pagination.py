from drf_spectacular.utils import inline_serializer
from rest_framework import pagination, serializers


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000

    def __init__(self, **summary):
        """`summary`: fields the page carries after `results` (a list's summary, such as an
        inbox's unread count), as `page_of`'s `extra` describe them."""
        super().__init__()
        self.summary = summary

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        response.data.update(self.summary)
        return response


def page_of(name: str, serializer, **extra):
    """The paginated envelope of docs/api.md lists ("General rules"), for the schema; `extra` fields sit beside
    `results` (a list's summary)."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            **extra,
            "results": serializer(many=True),
        },
    )
