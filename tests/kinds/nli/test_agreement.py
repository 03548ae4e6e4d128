"""The agreement job: alpha per round against an independent krippendorff computation,
its bootstrap CI, idempotency, undefined alpha, and agreement per annotator."""

import json
from datetime import timedelta

import krippendorff
import numpy as np
import pytest

LABELS = ["entailment", "neutral", "contradiction"]


@pytest.fixture
def world(nli_project, make_user):
    """nli_project plus two authors who also relabel each other's items."""
    from annotation.models import Membership

    for name in ("auth1", "auth2"):
        Membership.objects.create(project=nli_project, user=make_user(name), role="annotator", status="active")
    return nli_project


def user(name):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=name)


def make_item(project, external_id, reference="", author=None, round_=1, status="complete"):
    from annotation.models import Item

    return Item.objects.create(
        project=project,
        external_id=external_id,
        payload={"premise": "p " + external_id, "hypothesis": "h"},
        reference_label=reference,
        author=user(author) if author else None,
        round=round_,
        status=status,
    )


def vote(item, name, label, round_=1):
    from django.utils import timezone

    from annotation.models import Annotation, Assignment

    now = timezone.now()
    annotator = user(name)
    assignment = Assignment.objects.create(
        project=item.project,
        item=item,
        annotator=annotator,
        round=round_,
        status="submitted",
        claimed_at=now,
        expires_at=now + timedelta(hours=1),
        submitted_at=now,
    )
    return Annotation.objects.create(
        assignment=assignment, item=item, annotator=annotator, round=round_, value={"label": label} if label else {}
    )


def outcome(item, round_, gold=None):
    from annotation.models import ConsensusOutcome

    return ConsensusOutcome.objects.create(
        item=item,
        round=round_,
        outcome="accepted" if gold else "failed",
        gold=gold or "",
        votes={},
        n_votes=5,
        agreement=0.8,
    )


def run_agreement(project):
    from annotation.models import AgreementReport, Job
    from annotation.tasks import run_job

    job = Job.objects.create(kind="agreement", project=project)
    run_job(job.pk)  # the worker's entry point, synchronously
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job, {r.scope_key: r for r in AgreementReport.objects.filter(project=project)}


# Votes as (external id, round, coder, label); coder "@author" is the item's author label.
SPEC_ITEMS = [
    # id, reference, author
    ("a", "entailment", "auth1"),
    ("b", "neutral", "auth1"),
    ("c", "contradiction", "auth2"),
    ("d", "entailment", None),  # imported original label: the "original" coder
    ("e", "", None),  # no reference label: votes only
    ("f", "contradiction", "auth2"),
]
SPEC_VOTES = [
    ("a", 1, "ann1", "entailment"),
    ("a", 1, "ann2", "entailment"),
    ("a", 1, "auth2", "neutral"),
    ("b", 1, "ann1", "neutral"),
    ("b", 1, "ann3", "contradiction"),
    ("b", 1, "auth2", "entailment"),
    ("c", 1, "ann2", "contradiction"),
    ("c", 1, "ann3", "contradiction"),
    ("c", 1, "auth1", "contradiction"),
    ("d", 1, "ann1", "entailment"),
    ("d", 1, "ann2", "neutral"),
    ("d", 1, "ann3", "entailment"),
    ("e", 1, "ann1", "neutral"),
    ("e", 1, "ann2", "neutral"),
    ("e", 1, "ann3", None),  # an abstention
    ("f", 1, "ann1", "neutral"),
    ("f", 1, "ann3", "entailment"),
    # b failed in round 1 and was revised: round 2 with fresh votes.
    ("b", 2, "ann2", "neutral"),
    ("b", 2, "ann3", "neutral"),
    ("b", 2, "auth2", "neutral"),
    ("f", 2, "ann2", "contradiction"),
    ("f", 2, "auth1", "contradiction"),
]


def build(project):
    items = {
        ext: make_item(project, ext, ref, author, round_=2 if ext in "bf" else 1) for ext, ref, author in SPEC_ITEMS
    }
    for ext, round_, name, label in SPEC_VOTES:
        vote(items[ext], name, label, round_)
    return items


def independent_matrix(rounds):
    """coders × units with the krippendorff package's conventions (NaN missing), built
    straight from the spec: author labels count as the author's value."""
    refs = {ext: (ref, author or "original") for ext, ref, author in SPEC_ITEMS}
    cells = {}
    for ext, round_, name, label in SPEC_VOTES:
        if round_ in rounds and label:
            cells[(name, (ext, round_))] = LABELS.index(label)
    units = sorted({unit for _, unit in cells} | {(ext, r) for ext, r, _, _ in SPEC_VOTES if r in rounds})
    for ext, round_ in units:
        ref, coder = refs[ext]
        if ref:
            cells[(coder, (ext, round_))] = LABELS.index(ref)
    coders = sorted({coder for coder, _ in cells})
    matrix = np.full((len(coders), len(units)), np.nan)
    for (coder, unit), code in cells.items():
        matrix[coders.index(coder), units.index(unit)] = code
    return matrix, coders


@pytest.mark.django_db
def test_alpha_per_round_equals_krippendorff_package(world):
    build(world)
    _, reports = run_agreement(world)
    assert set(reports) == {'{"round":1}', '{"round":2}', '{"round":"all"}'}
    for key, rounds in (('{"round":1}', {1}), ('{"round":2}', {2}), ('{"round":"all"}', {1, 2})):
        matrix, coders = independent_matrix(rounds)
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        report = reports[key]
        assert report.alpha == pytest.approx(expected, abs=1e-12), key
        assert report.level == "nominal" and report.scope == json.loads(key)
        pairable = int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum())
        assert report.units == pairable
        assert report.coders == len(coders)
    # Round 1 has an "original" coder (item d) besides the users.
    _, coders_round1 = independent_matrix({1})
    assert "original" in coders_round1 and reports['{"round":1}'].coders == 6


@pytest.mark.django_db
def test_bootstrap_ci_point_estimate_is_alpha(world):
    build(world)
    _, reports = run_agreement(world)
    for report in reports.values():
        boot = report.details["bootstrap"]
        assert boot["n_resamples"] == 1000
        assert boot["point"] == pytest.approx(report.alpha, abs=1e-12)
        assert report.ci_low <= report.alpha + 1e-12 and report.alpha - 1e-12 <= report.ci_high


@pytest.mark.django_db
def test_running_twice_gives_the_same_rows(world):
    from annotation.models import AgreementReport

    build(world)
    job1, first = run_agreement(world)
    job2, second = run_agreement(world)
    assert set(first) == set(second)
    for key in first:
        a, b = first[key], second[key]
        assert a.pk == b.pk
        fields = ("scope", "level", "alpha", "ci_low", "ci_high", "units", "coders", "reason", "details")
        assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
        assert b.computed_at >= a.computed_at and b.job_id == job2.pk
    assert AgreementReport.objects.filter(project=world).count() == 3


@pytest.mark.django_db
def test_undefined_alpha_is_stored_with_a_reason(world):
    items = [make_item(world, f"x{i}", "neutral") for i in range(4)]
    for item in items:
        for name in ("ann1", "ann2", "ann3"):
            vote(item, name, "neutral")
    job, reports = run_agreement(world)
    report = reports['{"round":1}']
    assert report.alpha is None and report.ci_low is None and report.ci_high is None
    assert "identical" in report.reason
    assert report.units == 4
    assert job.result["reports"][0]["reason"] == report.reason


@pytest.mark.django_db
def test_per_annotator_agreement_with_the_consensus(world):
    """Hand count. Accepted: a (gold entailment, r1), c (contradiction, r1), d (neutral!,
    r1: the votes were overruled in this made-up outcome), b (neutral, r2); e and f failed.

    round 1: ann1 a✓ d✗ = 1/2; ann2 a✓ c✓ d✓ = 3/3; ann3 c✓ d✗ = 1/2; auth1 c✓ = 1/1;
             auth2 a✗ = 0/1.  round 2: ann2 1/1, ann3 1/1, auth2 1/1.
    Author labels are not annotations: auth1's intended "entailment" on a is not counted."""
    items = build(world)
    outcome(items["a"], 1, "entailment")
    outcome(items["b"], 1)
    outcome(items["c"], 1, "contradiction")
    outcome(items["d"], 1, "neutral")
    outcome(items["e"], 1)
    outcome(items["f"], 1)
    outcome(items["b"], 2, "neutral")
    outcome(items["f"], 2)
    _, reports = run_agreement(world)

    def figures(key):
        return {name: (v["agree"], v["total"]) for name, v in reports[key].details["per_annotator"].items()}

    assert figures('{"round":1}') == {"ann1": (1, 2), "ann2": (3, 3), "ann3": (1, 2), "auth1": (1, 1), "auth2": (0, 1)}
    assert figures('{"round":2}') == {"ann2": (1, 1), "ann3": (1, 1), "auth2": (1, 1)}
    assert figures('{"round":"all"}') == {
        "ann1": (1, 2),
        "ann2": (4, 4),
        "ann3": (2, 3),
        "auth1": (1, 1),
        "auth2": (1, 2),
    }
    assert reports['{"round":"all"}'].details["per_annotator"]["ann3"]["rate"] == pytest.approx(2 / 3)

    # The report selector computes the same figures live from votes and golds.
    from annotation.selectors.reports import per_annotator_for_project

    live = {row["annotator"]: (row["agree"], row["total"]) for row in per_annotator_for_project(world)}
    assert live == figures('{"round":"all"}')

    # And the metrics module's reference function, on the annotators × (item, round) matrix.
    from annotation.metrics.agreement import per_coder_agreement_with_reference

    golds = {("a", 1): "entailment", ("c", 1): "contradiction", ("d", 1): "neutral", ("b", 2): "neutral"}
    units = sorted({(ext, r) for ext, r, _, _ in SPEC_VOTES})
    names = sorted({name for _, _, name, _ in SPEC_VOTES})
    matrix = [[None] * len(units) for _ in names]
    for ext, r, name, label in SPEC_VOTES:
        matrix[names.index(name)][units.index((ext, r))] = label
    reference = per_coder_agreement_with_reference(matrix, [golds.get(unit) for unit in units])
    assert {names[i]: v for i, v in reference.items() if v[1]} == figures('{"round":"all"}')


@pytest.mark.django_db
def test_label_test_reference_is_the_gold_not_a_coder(db, make_user):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="lt", name="LT", kind="label_test", language="he")
    for name in ("ann1", "ann2"):
        Membership.objects.create(project=project, user=make_user(name), role="annotator", status="active")
    spec = [
        ("entailment", "entailment", "neutral"),
        ("neutral", "neutral", "neutral"),
        ("contradiction", "entailment", "contradiction"),
    ]
    for i, (gold, v1, v2) in enumerate(spec):
        item = make_item(project, f"t{i}", gold)
        vote(item, "ann1", v1)
        vote(item, "ann2", v2)
    _, reports = run_agreement(project)
    report = reports['{"round":1}']
    matrix = np.array([[LABELS.index(s[1]) for s in spec], [LABELS.index(s[2]) for s in spec]], dtype=float)
    assert report.alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
    assert report.coders == 2
    per = {k: (v["agree"], v["total"]) for k, v in report.details["per_annotator"].items()}
    assert per == {"ann1": (2, 3), "ann2": (2, 3)}


@pytest.mark.django_db
def test_agreement_request_is_for_supervisors(world):
    from annotation.errors import NotFound, PermissionDenied
    from annotation.services.agreement import agreement_request

    with pytest.raises(PermissionDenied):
        agreement_request(user=user("rev"), slug=world.slug)
    with pytest.raises(PermissionDenied):
        agreement_request(user=user("ann1"), slug=world.slug)
    with pytest.raises(NotFound):
        agreement_request(user=user("sup"), slug="nope")
    job = agreement_request(user=user("sup"), slug=world.slug)
    assert job.kind == "agreement" and job.project_id == world.pk and job.status == "queued"


@pytest.mark.django_db
def test_job_loads_in_bounded_queries(world, django_assert_max_num_queries):
    """No query per item: the same count for 6 items and for 60."""
    from annotation.models import Job
    from annotation.services.agreement import agreement_compute_job

    build(world)
    for i in range(54):
        item = make_item(world, f"bulk{i}", "neutral")
        for name in ("ann1", "ann2", "ann3"):
            vote(item, name, LABELS[i % 3] if name == "ann3" else "neutral")
    job = Job.objects.create(kind="agreement", project=world)
    with django_assert_max_num_queries(12):
        agreement_compute_job(job)
