"""The bias page in a real browser (Debian chromium through Playwright): a supervisor of a
Persian project with the FarsTail samples runs the analysis from the page, the charts are
drawn by static/release/bias.js (PMI bars as SVG, confusion matrices as heat maps) in a
Persian (RTL) interface, without CSP or script errors, and fit at 1366×900 and 390×844.
Screenshots: tests/browser/artifacts/bias_*.png."""

import json

import pytest

from tests.browser.helpers import PASSWORD, login
from tests.release.bias_setup import farstail_release

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project(live_server, client_for):
    from django.contrib.auth import get_user_model

    from annotation.models import Membership
    from annotation.services.projects import project_create

    User = get_user_model()
    admin = User.objects.create_user(username="bias-admin", password=PASSWORD, is_staff=True)
    sup = User.objects.create_user(username="bias-sup", password=PASSWORD)
    project = project_create(actor=admin, slug="fa-bias", name="فارس‌تیل", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    farstail_release(client_for(sup), "fa-bias")
    return project


def assert_bars_grow_from_the_right(row):
    svg_box, rect_box = row.locator("svg.pmi-bar").bounding_box(), row.locator("svg.pmi-bar rect").bounding_box()
    assert abs((rect_box["x"] + rect_box["width"]) - (svg_box["x"] + svg_box["width"])) < 1.5
    assert rect_box["width"] > 0.9 * svg_box["width"]  # the first row has the largest PMI


def test_the_supervisor_runs_the_analysis_and_sees_the_charts(project, page, live_server, artifacts_dir, celery_worker):
    base = live_server.url
    page.context.add_cookies([{"name": "django_language", "value": "fa", "url": base}])
    page.set_viewport_size({"width": 1366, "height": 900})
    login(page, base, "bias-sup")
    page.goto(f"{base}/p/fa-bias/bias/")
    assert page.get_attribute("html", "dir") == "rtl"
    page.wait_for_selector("#bias-empty:not([hidden])")
    page.fill("input[name=smoothing]", "100")
    page.click("#bias-form button[type=submit]")  # the job runs on the worker
    page.wait_for_selector("#bias-pmi:not([hidden])", timeout=60_000)

    # Table 2: one row per class; PMI: a bar per (word, class) growing from the right in RTL.
    assert page.locator("#bias-classes tbody tr").count() == 3
    # Items, tokens and processed tokens of premise and hypothesis, the two overlaps.
    assert page.locator("#bias-classes tbody tr").first.locator("td").count() == 7
    result = json.loads(page.evaluate("fetch('/api/projects/fa-bias/bias/').then(r => r.text())"))
    corpus = page.locator("#bias-corpus")
    assert corpus.is_visible()
    persian = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")
    assert str(result["corpus"]["tokens"]).translate(persian) in corpus.inner_text()
    assert corpus.locator("code").inner_text() == result["tokenizer"]  # a version keeps its digits
    rows = page.locator(".pmi-row")
    assert rows.count() == 30
    first_word = rows.first.locator(".pmi-word bdi")
    assert first_word.get_attribute("dir") == "rtl" and first_word.get_attribute("lang") == "fa"
    assert_bars_grow_from_the_right(rows.first)
    # Heat maps: the two models on test (no dev items), 3×3 cells with the counts.
    matrices = page.locator(".matrix table.heat")
    assert matrices.count() == 2
    cells = matrices.first.locator("tbody td")
    assert cells.count() == 9
    assert sum(int(cells.nth(i).locator(".n").inner_text()) for i in range(9)) == 61
    assert page.locator("#bias-flags tbody tr").count() == 2
    # §4.3's joint crosstab: the computed flags and the file's own columns, 61 items each.
    for source in ("computed", "imported"):
        cells = page.locator(f'#bias-joint tr[data-source="{source}"] td')
        assert cells.count() == 4
        assert sum(int(text) for text in cells.all_inner_texts()) == 61
    page.problems.assert_clean(page)
    page.screenshot(path=str(artifacts_dir / "bias_fa_1366.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector("#bias-pmi:not([hidden])")
    assert_bars_grow_from_the_right(page.locator(".pmi-row").first)
    # Nothing but the scrolling tables is wider than the screen.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.problems.assert_clean(page)
    page.screenshot(path=str(artifacts_dir / "bias_fa_390.png"), full_page=True)
    page.locator("#h-pmi").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "bias_fa_390_pmi.png"))


def test_the_hypothesis_only_flags_can_come_from_an_uploaded_evaluation(
    project, page, live_server, artifacts_dir, celery_worker
):
    import json

    from django.contrib.auth import get_user_model

    from annotation.models import Item, Job
    from annotation.release.evaluation import evaluation_start
    from annotation.tasks import run_job
    from tests.release.test_bias_api import read_rows

    items = list(Item.objects.filter(project=project, split="test").order_by("position", "id"))
    published = [row[3] == "1" for row in read_rows("Test-word.csv")]
    wrong = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}
    lines = [
        json.dumps({"id": i.external_id, "prediction": wrong[i.gold_label] if hard else i.gold_label})
        for i, hard in zip(items, published)
    ]
    evaluation = evaluation_start(
        project=project,
        user=get_user_model().objects.get(username="bias-sup"),
        data="\n".join(lines).encode(),
        filename="mbert.jsonl",
        name="mBERT",
    )
    run_job(evaluation.job_id)
    base = live_server.url
    page.context.add_cookies([{"name": "django_language", "value": "fa", "url": base}])
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, base, "bias-sup")
    page.goto(f"{base}/p/fa-bias/bias/")
    label = page.locator("#bias-form label").filter(has=page.locator("select[name=evaluation]"))
    assert "برچسب‌های دشواری مدل فقط‌فرضیه از" in label.inner_text()
    page.select_option("#bias-form select[name=evaluation]", str(evaluation.pk))
    page.click("#bias-form button[type=submit]")
    page.wait_for_selector("#bias-pmi:not([hidden])", timeout=60_000)
    job = Job.objects.filter(kind="bias").latest("id")
    assert job.params["evaluation"] == evaluation.pk
    flags = [Item.objects.get(pk=i.pk).computed["computed_hard(hypothesis)"] for i in items]
    assert flags == published
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.problems.assert_clean(page)
    page.screenshot(path=str(artifacts_dir / "bias_fa_390_from_evaluation.png"), full_page=True)
