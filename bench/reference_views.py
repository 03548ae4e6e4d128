"""Reference endpoints for bench/annotate.py, served only by the benchmark: what a request
costs on this stack before the assignment engine does anything. Each is a rung between the
floor (a bare Django JSON view) and `next`/`submit`:

- token: a DRF view behind the project's REST settings (token authentication, permission
  check, JSON renderer) that answers with the caller's id: one query;
- write: the same, plus one row inserted (with a foreign key to the user, like every claim
  and vote) in its own transaction: BEGIN, INSERT, COMMIT.

`bench.reference_settings` adds them to the project's URLs; the table is created by the
benchmark on its scratch database (`REFERENCE_WRITE_TABLE` in bench/annotate.py)."""

from django.db import connection, transaction
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import urlpatterns as project_urlpatterns


class TokenView(APIView):
    def get(self, request):
        return Response({"user": request.user.pk})


class WriteView(APIView):
    def post(self, request):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                'INSERT INTO bench_reference_write (user_id, value) VALUES (%s, \'{"label": "neutral"}\') RETURNING id',
                [request.user.pk],
            )
            (row_id,) = cursor.fetchone()
        return Response({"id": row_id}, status=201)


urlpatterns = project_urlpatterns + [
    path("bench/token/", TokenView.as_view()),
    path("bench/write/", WriteView.as_view()),
]
