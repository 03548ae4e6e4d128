from .adjudication import Adjudication, QueueSighting
from .aggregation import (
    AdjudicationReason,
    AggregationChange,
    AnnotatorCompetence,
    ItemAggregate,
    ItemFigures,
    ItemValueCount,
    ProjectFigures,
    QueueCount,
)
from .annotations import Annotation, Assignment, IdempotencyRecord
from .audit import AuditEntry
from .curation import CurationRun, DuplicatePair
from .decisions import Decision
from .evaluations import Evaluation
from .items import Item, ItemStatusCount
from .jobs import Job
from .predictions import Prediction, PredictionSet
from .projects import LANGUAGES, RTL_LANGUAGES, AccountInvitation, Membership, Project
from .releases import Release, Webhook, WebhookDelivery
from .results import AgreementReport, ConsensusOutcome, ItemRevision
from .reviews import Feedback, QuestionAudit, QuestionValidation, Review

__all__ = [
    "AccountInvitation",
    "AuditEntry",
    "Adjudication",
    "AggregationChange",
    "AnnotatorCompetence",
    "ItemAggregate",
    "ItemFigures",
    "ItemValueCount",
    "ItemStatusCount",
    "AdjudicationReason",
    "AgreementReport",
    "ConsensusOutcome",
    "Feedback",
    "QuestionAudit",
    "QuestionValidation",
    "Review",
    "ItemRevision",
    "Annotation",
    "Evaluation",
    "CurationRun",
    "Decision",
    "DuplicatePair",
    "Assignment",
    "IdempotencyRecord",
    "Item",
    "Job",
    "LANGUAGES",
    "Membership",
    "Prediction",
    "PredictionSet",
    "Project",
    "ProjectFigures",
    "QueueCount",
    "QueueSighting",
    "RTL_LANGUAGES",
    "Release",
    "Webhook",
    "WebhookDelivery",
]
