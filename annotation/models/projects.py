import secrets

from django.conf import settings as django_settings
from django.db import models
from django.utils.translation import gettext_lazy as _

RTL_LANGUAGES = frozenset({"he", "fa", "ar", "ur", "yi", "ps", "ckb", "dv", "syr"})
# Languages a project may be created in: code → English name. Direction follows RTL_LANGUAGES.
LANGUAGES = {
    "he": "Hebrew",
    "fa": "Persian",
    "ar": "Arabic",
    "ur": "Urdu",
    "yi": "Yiddish",
    "en": "English",
    "de": "German",
    "fr": "French",
    "ru": "Russian",
    "tr": "Turkish",
    "es": "Spanish",
}


def _new_draw_secret() -> str:
    return secrets.token_hex(32)


class Project(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=32)
    language = models.CharField(max_length=8)
    # Markdown, rendered through annotation.guides.markdown_render.
    guidelines = models.TextField(blank=True, default="")
    # The project's rewording of its kind's label guide (Kind.label_guide): section key →
    # label or point → text; what it leaves out keeps the paper's wording.
    label_guide = models.JSONField(default=dict, blank=True)
    # Protocol numbers; the kind fills in the papers' defaults for omitted keys.
    settings = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The supervisor who answers for the project: its creator, until the owner or an admin
    # hands it on. Only the owner or an admin changes another supervisor's role or status.
    owner = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Keys the project's random draws (review sampling, probes) so that members cannot
    # predict them from what they can read; never leaves the server.
    draw_secret = models.CharField(max_length=64, default=_new_draw_secret, editable=False)
    # The aggregation's change counter: `aggregation_requested` counts the changes to the
    # project's votes and decisions that asked for a run, `aggregation_done` the count the
    # last finished run had read. The sweep runs a project only while they differ.
    aggregation_requested = models.PositiveBigIntegerField(default=0, editable=False)
    aggregation_done = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def direction(self) -> str:
        return "rtl" if self.language in RTL_LANGUAGES else "ltr"


class Membership(models.Model):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", _("annotator")
        REVIEWER = "reviewer", _("reviewer")
        SUPERVISOR = "supervisor", _("supervisor")

    class Status(models.TextChoices):
        TRIAL = "trial", _("trial")
        ACTIVE = "active", _("active")
        DISQUALIFIED = "disqualified", _("disqualified")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.TRIAL)
    # New annotators are always reviewed; trusted ones are sampled.
    trusted = models.BooleanField(default=False)
    # May decide items in the adjudication queue (supervisors always may).
    adjudicator = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_unique_project_user")]
        ordering = ["project_id", "user_id"]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.project_id}:{self.role}"


class AccountInvitation(models.Model):
    """An account a supervisor created: until its first login it is an invitation, and its
    creator may still set its password (services.projects.user_password_reset)."""

    user = models.OneToOneField(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitation")
    invited_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
