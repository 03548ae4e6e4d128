"""The core endpoints of docs/api.md: tokens, users, projects, members, import, items, the next
item, progress, preview, submit and jobs. Each view parses, calls the access layer and one service, renders."""

from collections import Counter

from django.conf import settings
from django.contrib.auth import authenticate
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access, throttle
from annotation.errors import InvalidInput, PayloadTooLarge
from annotation.kinds.registry import get_kind
from annotation.models import Annotation, Item, Membership
from annotation.rest.idempotency import idempotent_write
from annotation.rest.parsers import StrictFormParser, StrictMultiPartParser, body_of
from annotation.rest.schema import ERRORS, IDEMPOTENCY_KEY
from annotation.rest.serializers import ErrorsSerializer, ItemSerializer
from annotation.selectors.assignments import progress_for_annotator
from annotation.selectors.items import item_preview_after
from annotation.selectors.names import names_visible
from annotation.selectors.predictions import suggestion_for_item
from annotation.selectors.projects import project_roles_of_user
from annotation.selectors.reports import status_counts_for_project
from annotation.services import assignments as assignment_services
from annotation.services import imports as import_services
from annotation.services import projects as project_services
from annotation.services import users as user_services
from annotation.wording import join_list
from api import serializers as s


class TokenView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        request=s.TokenRequestSerializer,
        responses={200: s.TokenSerializer, 400: ErrorsSerializer, 429: ErrorsSerializer},
    )
    def post(self, request):
        data = body_of(request)
        username, password = data.get("username"), data.get("password")
        if not isinstance(username, str) or not isinstance(password, str):
            raise InvalidInput(gettext("username and password are required"), field="username")
        user = authenticate(request, username=username, password=password)
        if user is None and (wait := throttle.refused_for(request)) is not None:
            raise exceptions.Throttled(wait=wait)
        if user is None:
            raise InvalidInput(gettext("unknown username or wrong password"), field="password")
        return Response({"token": user_services.user_token_issue(user=user, request=request)})


class TokenRevokeView(APIView):
    """Logout for API clients: the caller's token stops working (a separate view from
    TokenView, which takes no authentication)."""

    @extend_schema(
        request=None, responses={204: OpenApiResponse(description="the token is revoked"), 401: ErrorsSerializer}
    )
    def delete(self, request):
        user_services.user_token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class UserPasswordView(APIView):
    @extend_schema(
        request=s.PasswordResetSerializer,
        responses={204: OpenApiResponse(description="the password is changed; the user's API token ends"), **ERRORS},
    )
    def post(self, request, username):
        data = body_of(request)
        project_services.user_password_reset(actor=request.user, username=username, password=data.get("password"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class UserCreateView(APIView):
    @extend_schema(
        request=s.UserRequestSerializer, parameters=IDEMPOTENCY_KEY, responses={201: s.UserSerializer, **ERRORS}
    )
    @idempotent_write
    def post(self, request):
        data = body_of(request)
        user = project_services.user_create(
            actor=request.user, username=data.get("username"), password=data.get("password"), email=data.get("email")
        )
        return Response({"id": user.pk, "username": user.username, "email": user.email}, status=status.HTTP_201_CREATED)


class ProjectListView(generics.ListAPIView):
    serializer_class = s.ProjectSerializer

    def get_queryset(self):
        return access.projects_visible_to(self.request.user).select_related("owner").order_by("slug")

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "roles": project_roles_of_user(self.request.user)}

    @extend_schema(
        request=s.ProjectRequestSerializer, parameters=IDEMPOTENCY_KEY, responses={201: s.ProjectSerializer, **ERRORS}
    )
    @idempotent_write
    def post(self, request):
        data = body_of(request)
        project = project_services.project_create(
            actor=request.user,
            slug=data.get("slug"),
            name=data.get("name"),
            kind=data.get("kind"),
            language=data.get("language"),
            settings=data.get("settings"),
            guidelines=data.get("guidelines", ""),
        )
        serializer = s.ProjectSerializer(project, context={"counts": status_counts_for_project(project)})
        return Response(serializer.data, status=status.HTTP_201_CREATED)


class ProjectDetailView(APIView):
    @extend_schema(responses={200: s.ProjectSerializer, **ERRORS})
    def get(self, request, slug):
        project = access.access_project_for_user(request.user, slug)
        context = {"counts": status_counts_for_project(project), "roles": project_roles_of_user(request.user)}
        return Response(s.ProjectSerializer(project, context=context).data)

    @extend_schema(
        request=s.ProjectUpdateSerializer, parameters=IDEMPOTENCY_KEY, responses={200: s.ProjectSerializer, **ERRORS}
    )
    @idempotent_write
    def patch(self, request, slug):
        project = project_services.project_update(actor=request.user, slug=slug, changes=body_of(request))
        context = {"counts": status_counts_for_project(project), "roles": project_roles_of_user(request.user)}
        return Response(s.ProjectSerializer(project, context=context).data)


class PreviewView(APIView):
    """The annotate page as an annotator would see it, for the project's staff: an item's
    annotator payload, with nothing claimed and nothing stored."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after",
                int,
                description="the id of the item previewed last; the next one in the project's order follows",
            )
        ],
        responses={200: s.PreviewSerializer, 204: OpenApiResponse(description="no items"), **ERRORS},
    )
    def get(self, request, slug):
        project = access.access_project_for_staff(request.user, slug)
        after = request.query_params.get("after")
        item = item_preview_after(project, after)
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        kind = get_kind(project.kind)
        return Response(
            {
                "assignment": None,
                "preview": True,
                "item": {"id": item.pk, "external_id": item.external_id, "payload": kind.annotator_payload(item)},
            }
        )


class MemberListView(generics.ListAPIView):
    serializer_class = s.MembershipSerializer

    def get_queryset(self):
        self.project = access.access_project_for_staff(self.request.user, self.kwargs["slug"])
        return (
            Membership.objects.filter(project=self.project).select_related("user", "project").order_by("user__username")
        )

    def get_serializer_context(self):
        # Names are for supervisors and admins; reviewers read pseudonyms (selectors.names).
        project = getattr(self, "project", None)
        names = project is None or names_visible(self.request.user, project)
        return {**super().get_serializer_context(), "names": names}

    @extend_schema(
        request=s.MemberRequestSerializer, parameters=IDEMPOTENCY_KEY, responses={201: s.MembershipSerializer, **ERRORS}
    )
    @idempotent_write
    def post(self, request, slug):
        data = body_of(request)
        membership = project_services.membership_add(
            actor=request.user,
            slug=slug,
            username=data.get("username"),
            role=data.get("role"),
            status=data.get("status", Membership.Status.TRIAL),
            trusted=data.get("trusted", False),
        )
        return Response(s.MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    @extend_schema(
        request=s.MemberUpdateSerializer, parameters=IDEMPOTENCY_KEY, responses={200: s.MembershipSerializer, **ERRORS}
    )
    @idempotent_write
    def patch(self, request, slug, username):
        membership = project_services.membership_update(
            actor=request.user, slug=slug, username=username, changes=body_of(request)
        )
        return Response(s.MembershipSerializer(membership).data)


class ImportView(APIView):
    parser_classes = [StrictMultiPartParser, StrictFormParser]

    @extend_schema(
        request={"multipart/form-data": s.ImportRequestSerializer},
        parameters=IDEMPOTENCY_KEY,
        responses={201: s.ImportResultSerializer, 202: s.ImportResultSerializer, 413: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, slug):
        project = access.access_project_for_supervisor(request.user, slug)
        upload = request.FILES.get("file")
        if upload is None:
            raise InvalidInput(gettext("a file is required"), field="file")
        fmt = request.data.get("format") or ""
        if upload.size > settings.MASHOV_MAX_IMPORT_BYTES:
            raise PayloadTooLarge(
                gettext("the file is larger than %(n)s bytes") % {"n": settings.MASHOV_MAX_IMPORT_BYTES}, field="file"
            )
        options = import_services.import_options_clean(request.data.get("split"), request.data.get("labels_final"))
        result = import_services.items_import(
            project=project, data=upload, fmt=fmt, filename=upload.name or "", user=request.user, options=options
        )
        code = status.HTTP_202_ACCEPTED if result.job else status.HTTP_201_CREATED
        return Response(result.as_dict(), status=code)


class ItemListView(generics.ListAPIView):
    serializer_class = ItemSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=Item.Status.values),
            OpenApiParameter("split", str),
            OpenApiParameter("group", str),
        ],
        responses={200: ItemSerializer(many=True), **ERRORS},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        project = access.access_project_for_staff(self.request.user, self.kwargs["slug"])
        self.project = project
        items = Item.objects.filter(project=project).select_related("author", "project").order_by("position", "id")
        # Filters come from an allow-list, never from request.GET wholesale.
        params = self.request.query_params
        if params.get("status"):
            if params["status"] not in Item.Status.values:
                raise InvalidInput(
                    gettext("must be one of %(choices)s") % {"choices": join_list(Item.Status.values)}, field="status"
                )
            items = items.filter(status=params["status"])
        for name in ("split", "group"):
            if params.get(name) is not None:
                items = items.filter(**{name: params[name]})
        return items

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        names = names_visible(request.user, self.project)
        serializer = self.get_serializer(page, many=True, context={"votes": votes_for_items(page), "names": names})
        return self.get_paginated_response(serializer.data)


def votes_for_items(items) -> dict[int, dict[str, int]]:
    """Labels cast per item in its current round, in one query."""
    by_id = {item.pk: item for item in items}
    votes: dict[int, Counter] = {pk: Counter() for pk in by_id}
    for item_id, round_, value in Annotation.objects.filter(item_id__in=by_id).values_list("item_id", "round", "value"):
        if round_ == by_id[item_id].round and isinstance(value, dict) and isinstance(value.get("label"), str):
            votes[item_id][value["label"]] += 1
    return {pk: dict(sorted(counter.items())) for pk, counter in votes.items()}


class NextView(APIView):
    @extend_schema(
        responses={200: s.NextSerializer, 204: OpenApiResponse(description="nothing left for the caller"), **ERRORS}
    )
    def get(self, request, slug):
        assignment = assignment_services.assignment_next_for_annotator(user=request.user, slug=slug)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        kind = get_kind(assignment.project.kind)
        item = assignment.item
        body = {
            "assignment": assignment.pk,
            "expires_at": assignment.expires_at,
            # A coherence probe shows its original's id: nothing marks it as a probe.
            "item": {
                "id": item.pk,
                "external_id": item.probe_of.external_id if item.probe_of_id else item.external_id,
                "payload": kind.annotator_payload(item),
            },
        }
        suggestion = suggestion_for_item(assignment.project, kind.settings_for(assignment.project.settings), item.pk)
        if suggestion is not None:
            body["suggestion"] = suggestion
        return Response(body)


class ProgressView(APIView):
    @extend_schema(responses={200: s.ProgressSerializer, **ERRORS})
    def get(self, request, slug):
        membership = access.access_membership_for_annotator(request.user, slug)
        kind = get_kind(membership.project.kind)
        settings = kind.settings_for(membership.project.settings)
        needed = assignment_services.needed_pair(kind, settings)
        return Response(progress_for_annotator(membership.project, request.user, needed, kind=kind, settings=settings))


class SubmitView(APIView):
    @extend_schema(
        request=s.SubmitRequestSerializer,
        parameters=IDEMPOTENCY_KEY,
        responses={201: s.SubmittedSerializer, 409: ErrorsSerializer, **ERRORS},
    )
    @idempotent_write
    def post(self, request, assignment_id):
        data = body_of(request)
        if "value" not in data:
            raise InvalidInput(gettext("is required"), field="value")
        annotation = assignment_services.annotation_submit(
            user=request.user, assignment_id=assignment_id, value=data["value"]
        )
        kind = get_kind(annotation.assignment.project.kind)
        answer = s.annotation_data(annotation)
        answer["value"] = kind.annotator_value(annotation.value, annotation.item)
        answer["warnings"] = kind.value_warnings(annotation.value)
        return Response(answer, status=status.HTTP_201_CREATED)


class JobView(APIView):
    @extend_schema(responses={200: s.JobSerializer, **ERRORS})
    def get(self, request, job_id):
        return Response(s.JobSerializer(access.access_job_for_user(request.user, job_id)).data)
