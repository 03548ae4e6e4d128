from .annotations import Annotation, Assignment, IdempotencyRecord
from .curation import CurationRun, DuplicatePair
from .items import Item
from .jobs import Job
from .projects import LANGUAGES, RTL_LANGUAGES, Membership, Project
from .results import AgreementReport, ConsensusOutcome, ItemRevision
from .reviews import Feedback, QuestionValidation, Review

__all__ = [
    "AgreementReport",
    "ConsensusOutcome",
    "Feedback",
    "QuestionValidation",
    "Review",
    "ItemRevision",
    "Annotation",
    "CurationRun",
    "DuplicatePair",
    "Assignment",
    "IdempotencyRecord",
    "Item",
    "Job",
    "LANGUAGES",
    "Membership",
    "Project",
    "RTL_LANGUAGES",
]
