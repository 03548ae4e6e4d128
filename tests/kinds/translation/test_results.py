"""Agreement per system × criterion for translation_rating (LCHAIM Table 1), computed by
the kind from stored annotations: alpha per level against the krippendorff package,
Krippendorff's published worked example (2011: 4 coders × 12 units; ordinal 0.815,
interval 0.849, nominal 0.743), and the degenerate cases reported as undefined, never 1.0."""

import krippendorff
import numpy as np
import pytest

pytestmark = pytest.mark.django_db

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 × 12 example.
WORKED = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def make_project(make_user, settings=None, slug="mt"):
    from annotation.services.projects import project_create

    admin = make_user(f"{slug}-root", staff=True)
    return project_create(
        actor=admin, slug=slug, name=slug, kind="translation_rating", language="he", settings=settings or {}
    )


def store(project, make_user, matrix_by_criterion: dict, systems=("amazon",)):
    """Annotations straight into the database: coder r rates item u with the matrices'
    values (NaN = that coder did not rate the item). Non-given criteria get 3 / True."""
    from django.utils import timezone

    from annotation.models import Annotation, Assignment, Item

    first = next(iter(matrix_by_criterion.values()))
    coders, units = len(first), len(first[0])
    users = [make_user(f"{project.slug}-c{r}") for r in range(coders)]
    items = [
        Item.objects.create(
            project=project,
            external_id=f"u{u}",
            payload={
                "source": {"premise": "p", "hypothesis": "h", "label": "e"},
                "candidates": [{"system": s, "premise": "x", "hypothesis": "y"} for s in systems],
            },
            reference_label="entailment",
        )
        for u in range(units)
    ]
    now = timezone.now()
    for r, user in enumerate(users):
        for u, item in enumerate(items):
            if np.isnan(first[r][u]):
                continue
            scores = {"accuracy": 3, "fluency": 3, "cultural_fit": 3, "label_valid": True}
            for criterion, matrix in matrix_by_criterion.items():
                value = matrix[r][u]
                scores[criterion] = bool(value) if criterion == "label_valid" else int(value)
            assignment = Assignment.objects.create(
                project=project, item=item, annotator=user, round=1, status="submitted", claimed_at=now, expires_at=now
            )
            Annotation.objects.create(
                assignment=assignment,
                item=item,
                annotator=user,
                round=1,
                value={
                    "ratings": {str(i): scores for i in range(len(systems))},
                    "display_order": list(range(len(systems))),
                },
            )
    return items


def compute(project):
    from annotation.kinds.registry import get_kind
    from annotation.models import AgreementReport

    kind = get_kind("translation_rating")
    result = kind.compute_agreement(project, None)
    reports = {
        (r.scope["system"], r.scope["criterion"], r.level): r for r in AgreementReport.objects.filter(project=project)
    }
    return result, reports


def test_worked_example_ordinal_and_interval(make_user):
    project = make_project(make_user)
    store(project, make_user, {"accuracy": WORKED})
    _, reports = compute(project)
    ordinal = reports[("amazon", "accuracy", "ordinal")]
    assert round(ordinal.alpha, 3) == 0.815
    assert ordinal.units == 11 and ordinal.coders == 4  # unit 12 has one value: not pairable
    assert ordinal.ci_low <= ordinal.alpha <= ordinal.ci_high
    # Other criteria are all 3 and label_valid all True: undefined, never 1.0.
    for criterion, level in (("fluency", "ordinal"), ("label_valid", "nominal")):
        report = reports[("amazon", criterion, level)]
        assert report.alpha is None and report.ci_low is None and "identical" in report.reason
        assert report.details["mean"] == (3.0 if criterion == "fluency" else 1.0)

    project.settings = {**project.settings, "alpha_level_scores": "interval"}
    project.save()
    _, reports = compute(project)
    assert round(reports[("amazon", "accuracy", "interval")].alpha, 3) == 0.849
    assert ("amazon", "accuracy", "ordinal") not in reports  # the stale level is gone
    assert round(krippendorff.alpha(reliability_data=WORKED, level_of_measurement="nominal"), 3) == 0.743


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_per_level_matches_the_krippendorff_package(make_user, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=30)
    matrix = np.clip(truth + rng.integers(-1, 2, size=(3, 30)), 1, 5).astype(float)
    matrix[rng.random((3, 30)) < 0.2] = NAN
    matrix[0, np.isnan(matrix).all(axis=0)] = 3
    valid = (rng.random((3, 30)) < 0.7).astype(float)
    valid[np.isnan(matrix)] = NAN
    project = make_project(make_user, slug=f"mt{seed}")
    store(project, make_user, {"accuracy": matrix.tolist(), "label_valid": valid.tolist()}, systems=("a", "b"))
    _, reports = compute(project)
    for system in ("a", "b"):
        assert reports[(system, "accuracy", "ordinal")].alpha == pytest.approx(
            krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
        )
        assert reports[(system, "label_valid", "nominal")].alpha == pytest.approx(
            krippendorff.alpha(reliability_data=valid, level_of_measurement="nominal")
        )
        label = reports[(system, "label_valid", "nominal")].details
        assert label["share"] == pytest.approx(np.nanmean(valid))


def test_one_rater_and_no_pairable_values_are_undefined(make_user):
    project = make_project(make_user, slug="one")
    store(project, make_user, {"accuracy": [[1, 2, 3, 4, 5]]})
    _, reports = compute(project)
    report = reports[("amazon", "accuracy", "ordinal")]
    assert report.alpha is None and report.reason == "fewer than 2 coders" and report.units == 0
    assert report.details["mean"] == 3.0

    # Two raters who never rate the same item: no pairable values either.
    project = make_project(make_user, slug="apart")
    store(project, make_user, {"accuracy": [[1, NAN, 3, NAN], [NAN, 5, NAN, 2]]})
    _, reports = compute(project)
    report = reports[("amazon", "accuracy", "ordinal")]
    assert report.alpha is None and "pairable" in report.reason


def test_all_raters_agree_is_undefined_not_one(make_user):
    project = make_project(make_user, slug="agree")
    store(project, make_user, {"accuracy": [[4, 4, 4], [4, 4, 4]]})
    result, reports = compute(project)
    report = reports[("amazon", "accuracy", "ordinal")]
    assert report.alpha is None and report.alpha != 1.0 and report.reason
    assert report.details["mean_ci_low"] == report.details["mean_ci_high"] == 4.0
    # Rerunning upserts the same rows.
    before = sorted((r.scope_key, r.level, r.alpha) for r in reports.values())
    _, again = compute(project)
    assert sorted((r.scope_key, r.level, r.alpha) for r in again.values()) == before


def test_table1_intervals_stay_on_each_criterion_scale(make_user, client):
    """Few, spread ratings: a t interval would reach past 1-5 and past 0-1 for the share;
    Table 1, stored and on the page, shows intervals within the scale around the mean."""
    import re

    from django.contrib.auth import get_user_model

    from annotation.kinds.translation.results import translation_table1

    project = make_project(make_user, slug="spread")
    store(project, make_user, {"accuracy": [[1, 2, 5]], "label_valid": [[1, 0, 1]]})
    compute(project)
    cells = translation_table1(project)["rows"][0]["cells"]
    for criterion, (low, high) in (("accuracy", (1, 5)), ("label_valid", (0, 1))):
        cell = cells[criterion]
        assert low <= cell["mean_ci_low"] < cell["mean"] < cell["mean_ci_high"] <= high, (criterion, cell)

    client.force_login(get_user_model().objects.get(username="spread-root"))
    html = client.get(f"/p/{project.slug}/lchaim/").content.decode()
    shown = [(float(a), float(b)) for a, b in re.findall(r'class="ci">\[(-?[\d.]+), (-?[\d.]+)\]', html)]
    assert len(shown) == 4, html
    assert all(0 <= a <= b <= 5 for a, b in shown), shown
