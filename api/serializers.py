"""Output shapes (and documented request shapes) of docs/api.md. Validation lives in the services;
the request serializers here describe the bodies for the OpenAPI schema."""

from rest_framework import serializers

from annotation.kinds.registry import available_kinds, installed_kind
from annotation.models import Annotation, Job, Membership, Project
from annotation.rest.serializers import AnnotatorItemSerializer
from annotation.selectors.items import annotator_label
from annotation.stored_text import translated_body


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField(trim_whitespace=False)
    password = serializers.CharField(trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class UserRequestSerializer(serializers.Serializer):
    username = serializers.CharField(trim_whitespace=False)
    password = serializers.CharField(trim_whitespace=False)
    email = serializers.EmailField(required=False)


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()


class ProjectRequestSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField(trim_whitespace=False)
    kind = serializers.ChoiceField(choices=[])
    language = serializers.CharField()
    settings = serializers.DictField(required=False)
    guidelines = serializers.CharField(required=False, trim_whitespace=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The installed kinds, read when the shape is built (the registry follows settings).
        self.fields["kind"].choices = available_kinds()


class ProjectSerializer(serializers.ModelSerializer):
    direction = serializers.CharField(read_only=True)
    counts = serializers.SerializerMethodField()
    owner = serializers.CharField(
        source="owner.username", default=None, read_only=True, allow_null=True, required=False,
        help_text="the supervisor who answers for the project; shown to its supervisors and admins only",
    )  # fmt: skip

    class Meta:
        model = Project
        fields = [
            "slug",
            "name",
            "kind",
            "language",
            "direction",
            "guidelines",
            "label_guide",
            "settings",
            "created_at",
            "counts",
            "owner",
        ]

    def get_counts(self, project) -> dict[str, int]:
        counts = self.context.get("counts")
        return counts if counts is not None else {}

    def to_representation(self, project):
        """The settings the caller's role may read (Kind.settings_shown_to) and, to those
        who supervise it, the project's owner; context `roles`: {project id: the caller's
        role}, absent or None for a supervisor's view (admins). A project whose kind is not
        installed is listed as it is stored, its settings shown to supervisors only."""
        data = super().to_representation(project)
        roles = self.context.get("roles")
        if roles is not None:
            role = roles.get(project.pk)
            kind = installed_kind(project.kind)
            if kind is not None:
                data["settings"] = kind.settings_shown_to(data["settings"], role)
            elif role != "supervisor":
                # Without its kind nobody can say which settings a member may read: none.
                data["settings"] = {}
            if role != "supervisor":
                del data["owner"]
        return data


class ProjectUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, trim_whitespace=False)
    guidelines = serializers.CharField(
        required=False, trim_whitespace=False, help_text="markdown; raw HTML is shown as text"
    )
    settings = serializers.DictField(
        required=False,
        help_text="merged over the stored settings; a change that would corrupt running rounds is a 400 naming the setting",
    )
    label_guide = serializers.DictField(
        required=False, help_text="section key → label or point → the project's own wording"
    )
    owner = serializers.CharField(
        required=False,
        help_text="hand the project on: the username of an active supervisor of it (its owner or an admin only)",
    )


class PasswordResetSerializer(serializers.Serializer):
    password = serializers.CharField(trim_whitespace=False)


class PreviewSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(allow_null=True, help_text="always null: a preview claims nothing")
    preview = serializers.BooleanField()
    item = serializers.DictField()


class MemberRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    status = serializers.ChoiceField(choices=[("trial", "trial"), ("active", "active")], required=False)
    trusted = serializers.BooleanField(required=False)


class MemberUpdateSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Membership.Status.choices, required=False)
    trusted = serializers.BooleanField(required=False)
    adjudicator = serializers.BooleanField(required=False, help_text="may decide items of the adjudication queue")
    role = serializers.ChoiceField(choices=Membership.Role.choices, required=False)


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(
        source="user.username", help_text="the export's pseudonym for callers who do not supervise the project"
    )

    class Meta:
        model = Membership
        fields = ["username", "role", "status", "trusted", "adjudicator", "created_at", "updated_at"]

    def to_representation(self, membership):
        """Context `names` False (reviewers): the member's export pseudonym for their username."""
        data = super().to_representation(membership)
        if self.context.get("names") is False:
            data["username"] = annotator_label(membership.project, membership.user, names=False)
        return data


class ImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.CharField()
    split = serializers.CharField(
        required=False,
        help_text="Every row of the file gets this split; left out, FarsTail's Train-/Val-/Test- file names give train/dev/test.",
    )
    labels_final = serializers.BooleanField(
        required=False,
        help_text="The file's labels are gold as published: items arrive accepted with their gold label, never relabeled.",
    )


class HeldOutRowSerializer(serializers.Serializer):
    row = serializers.IntegerField()
    id = serializers.CharField()
    reason = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()
    job = serializers.IntegerField(allow_null=True)
    held_out = serializers.IntegerField(help_text="Valid rows the kind's import filters kept out of the project.")
    held_out_rows = HeldOutRowSerializer(many=True, help_text="The first 1000 of them: row number, id and why.")


class SuggestionSerializer(serializers.Serializer):
    label = serializers.CharField()
    probability = serializers.FloatField(allow_null=True)


class NextSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    expires_at = serializers.DateTimeField()
    item = AnnotatorItemSerializer()
    # Only where the project's `suggestions` setting is on and the latest prediction set
    # predicts the item.
    suggestion = SuggestionSerializer(required=False)


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()


class SubmitRequestSerializer(serializers.Serializer):
    value = serializers.DictField()


class AnnotationSerializer(serializers.ModelSerializer):
    assignment = serializers.IntegerField(source="assignment_id")
    item = serializers.IntegerField(source="item_id")

    class Meta:
        model = Annotation
        fields = ["id", "assignment", "item", "round", "value", "created_at"]


class WarningSerializer(serializers.Serializer):
    field = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


class SubmittedSerializer(AnnotationSerializer):
    """The stored annotation and the kind's warnings about it (`Kind.value_warnings`)."""

    warnings = WarningSerializer(many=True, read_only=True)

    class Meta(AnnotationSerializer.Meta):
        fields = [*AnnotationSerializer.Meta.fields, "warnings"]


_DATETIME = serializers.DateTimeField()


def annotation_data(annotation: Annotation) -> dict:
    """What `AnnotationSerializer(annotation).data` gives, without building a model
    serializer's fields on every submit (the annotate hot path; a test keeps the two equal)."""
    return {
        "id": annotation.pk,
        "assignment": annotation.assignment_id,
        "item": annotation.item_id,
        "round": annotation.round,
        "value": annotation.value,
        "created_at": _DATETIME.to_representation(annotation.created_at),
    }


class JobSerializer(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = ["id", "kind", "status", "progress", "result", "error", "created_at", "started_at", "finished_at"]

    def to_representation(self, instance):
        # The worker stored what the job says in English; the reader reads it in their language.
        data = super().to_representation(instance)
        data["result"], data["error"] = translated_body(data["result"]), translated_body(data["error"])
        return data
