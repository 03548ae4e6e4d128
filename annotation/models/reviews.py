from django.conf import settings as django_settings
from django.db import models

from .annotations import Annotation
from .items import Item
from .projects import Project


class Review(models.Model):
    """A reviewer's grade of one authored question (HeQ §3: rejected / verified / good / gold),
    or of a whole annotation when the kind has no questions (`question` is then null)."""

    class Grade(models.TextChoices):
        REJECTED = "rejected"
        VERIFIED = "verified"
        GOOD = "good"
        GOLD = "gold"

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="reviews")
    question = models.PositiveSmallIntegerField(null=True, blank=True)
    grade = models.CharField(max_length=16, choices=Grade.choices)
    comment = models.TextField(blank=True, default="")
    reviewer = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotation", "question"], name="review_unique_question"),
            models.UniqueConstraint(
                fields=["annotation"], condition=models.Q(question__isnull=True), name="review_unique_whole_annotation"
            ),
        ]
        ordering = ["annotation_id", "question"]


class Feedback(models.Model):
    """A message in an annotator's inbox (HeQ: personal feedback after review)."""

    recipient = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feedback")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="feedback")
    review = models.ForeignKey(Review, null=True, blank=True, on_delete=models.CASCADE, related_name="feedback")
    message = models.TextField()
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["recipient", "read_at"], name="feedback_inbox_idx")]


class QuestionValidation(models.Model):
    """A validator's own answer to an existing question, without seeing the author's
    (HeQ §3.3): a span in code points of the stored paragraph, or null for unanswerable.

    The question is either authored in Mashov (`annotation` + `question`, the index in the
    annotation's value) or came with the imported file (`item` + `question_key`, the file's
    question id; `question` then keeps its index in the item's payload at answer time, for
    reading only — the key is what identifies it)."""

    annotation = models.ForeignKey(
        Annotation, null=True, blank=True, on_delete=models.CASCADE, related_name="validations"
    )
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.CASCADE, related_name="validations")
    question = models.PositiveSmallIntegerField()
    question_key = models.CharField(max_length=200, blank=True, default="")
    validator = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    answer_start = models.PositiveIntegerField(null=True, blank=True)
    answer_text = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["annotation", "question", "validator"],
                condition=models.Q(annotation__isnull=False),
                name="validation_unique_validator",
            ),
            models.UniqueConstraint(
                fields=["item", "question_key", "validator"],
                condition=models.Q(item__isnull=False),
                name="validation_unique_imported_validator",
            ),
            # Exactly one target: an authored question or an imported one (which has a key).
            models.CheckConstraint(
                condition=models.Q(annotation__isnull=False, item__isnull=True, question_key="")
                | (models.Q(annotation__isnull=True, item__isnull=False) & ~models.Q(question_key="")),
                name="validation_one_target",
            ),
            models.CheckConstraint(
                condition=models.Q(answer_start__isnull=True, answer_text__isnull=True)
                | models.Q(answer_start__isnull=False, answer_text__isnull=False),
                name="validation_span_complete",
            ),
        ]


class QuestionAudit(models.Model):
    """One question of a project's final audit sample (HeQ §3.4: a random sample of questions
    per source, checked by hand for the question's and the answer span's correctness). The
    question is authored (`annotation` + `question`, its index in the annotation's value) or
    imported (`item` + `question_key`, the file's id); `source` is the paragraph's source when
    drawn. Marked by a supervisor: `span_correct` is null where there is no span to judge (an
    unanswerable question)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="question_audits")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    annotation = models.ForeignKey(Annotation, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    question = models.PositiveSmallIntegerField()
    question_key = models.CharField(max_length=200, blank=True, default="")
    source = models.CharField(max_length=100, blank=True, default="")
    seed = models.BigIntegerField()
    question_correct = models.BooleanField(null=True, blank=True)
    span_correct = models.BooleanField(null=True, blank=True)
    auditor = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    audited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["source", "id"]
        indexes = [models.Index(fields=["project", "source", "id"], name="question_audit_idx")]
