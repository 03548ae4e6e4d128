from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.kinds.registry import api_url_modules
from api.views import (
    annotator_quality,
    annotator_work,
    audit,
    bias,
    core,
    curation,
    decisions,
    evaluation,
    export,
    results,
)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("auth/token/", core.TokenView.as_view(), name="api-token"),
    path("auth/token/current/", core.TokenRevokeView.as_view(), name="api-token-current"),
    path("users/", core.UserCreateView.as_view(), name="api-users"),
    path("users/<str:username>/password/", core.UserPasswordView.as_view(), name="api-user-password"),
    path("projects/", core.ProjectListView.as_view(), name="api-projects"),
    path("projects/<slug:slug>/", core.ProjectDetailView.as_view(), name="api-project"),
    path("projects/<slug:slug>/members/", core.MemberListView.as_view(), name="api-members"),
    path("projects/<slug:slug>/members/<str:username>/", core.MemberDetailView.as_view(), name="api-member"),
    path("projects/<slug:slug>/import/", core.ImportView.as_view(), name="api-import"),
    path("projects/<slug:slug>/items/", core.ItemListView.as_view(), name="api-items"),
    path("projects/<slug:slug>/next/", core.NextView.as_view(), name="api-next"),
    path("projects/<slug:slug>/progress/", core.ProgressView.as_view(), name="api-progress"),
    path("projects/<slug:slug>/preview/", core.PreviewView.as_view(), name="api-preview"),
    path("assignments/<id:assignment_id>/submit/", core.SubmitView.as_view(), name="api-submit"),
    path("assignments/<id:assignment_id>/skip/", annotator_work.SkipView.as_view(), name="api-skip"),
    path("assignments/<id:assignment_id>/draft/", annotator_work.DraftView.as_view(), name="api-draft"),
    path("projects/<slug:slug>/mine/", annotator_work.MineView.as_view(), name="api-mine"),
    path("annotations/<id:annotation_id>/", annotator_work.AnnotationEditView.as_view(), name="api-annotation"),
    path("jobs/<id:job_id>/", core.JobView.as_view(), name="api-job"),
    path("projects/<slug:slug>/export/", export.ExportView.as_view(), name="api-export"),
    path("projects/<slug:slug>/agreement/", results.AgreementView.as_view(), name="api-agreement"),
    path("projects/<slug:slug>/report/", results.ReportView.as_view(), name="api-report"),
    path("projects/<slug:slug>/annotators/", annotator_quality.AnnotatorsView.as_view(), name="api-annotators"),
    path(
        "projects/<slug:slug>/adjudication/",
        annotator_quality.AdjudicationQueueView.as_view(),
        name="api-adjudication",
    ),
    path("items/<id:item_id>/adjudicate/", annotator_quality.AdjudicateView.as_view(), name="api-item-adjudicate"),
    path("items/<id:item_id>/decisions/", decisions.ItemDecisionsView.as_view(), name="api-item-decisions"),
    path("items/<id:item_id>/reopen/", decisions.ItemReopenView.as_view(), name="api-item-reopen"),
    path("projects/<slug:slug>/evaluations/", evaluation.EvaluationListView.as_view(), name="api-evaluations"),
    path(
        "projects/<slug:slug>/evaluations/compare/",
        evaluation.EvaluationCompareView.as_view(),
        name="api-evaluation-compare",
    ),
    path(
        "projects/<slug:slug>/evaluations/<id:evaluation_id>/",
        evaluation.EvaluationDetailView.as_view(),
        name="api-evaluation",
    ),
    path("projects/<slug:slug>/bias/", bias.BiasView.as_view(), name="api-bias"),
    path("projects/<slug:slug>/duplicates/", curation.DuplicatesView.as_view(), name="api-duplicates"),
    path(
        "projects/<slug:slug>/duplicates/remove-all/",
        curation.DuplicatesRemoveAllView.as_view(),
        name="api-duplicates-remove-all",
    ),
    path(
        "projects/<slug:slug>/duplicates/restore/",
        curation.DuplicatesRestoreView.as_view(),
        name="api-duplicates-restore",
    ),
    path(
        "projects/<slug:slug>/duplicates/<id:pair_id>/", curation.DuplicateDecisionView.as_view(), name="api-duplicate"
    ),
    path("projects/<slug:slug>/splits/", curation.SplitsView.as_view(), name="api-splits"),
    path("projects/<slug:slug>/leaks/", curation.LeaksView.as_view(), name="api-leaks"),
    path("projects/<slug:slug>/audit/", audit.AuditLogView.as_view(), name="api-audit"),
    # Each kind's own operations.
    *(path("", include(module)) for module in api_url_modules()),
]
