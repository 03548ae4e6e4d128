"""The model leaderboard in a real browser (Debian chromium through Playwright; fixtures in
tests/browser/fixtures.py): a bad predictions file listed row by row with nothing stored, a
good one scored while the page waits (its script polls and reloads), figures with CI
whiskers, the confusion heat map, the paired comparison's verdict; RTL in Persian and 390 px
without the page scrolling sideways; no CSP violation. Screenshots:
tests/browser/artifacts/leaderboard_*.png."""

import json
import re

import pytest

from tests.browser.helpers import PASSWORD, expect, follow, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture
def board(transactional_db, live_server):
    from django.contrib.auth import get_user_model

    from annotation.models import Item, Membership
    from annotation.services.projects import project_create

    users = get_user_model().objects
    admin = users.create_user(username="board-admin", password=PASSWORD, is_staff=True)
    sup = users.create_user(username="board-sup", password=PASSWORD)
    project = project_create(actor=admin, slug="fa-board", name="استنتاج فارسی", kind="nli_relabel", language="fa")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    for i in range(40):
        Item.objects.create(
            project=project,
            external_id=f"q{i}",
            position=i,
            split="test",
            status="accepted",
            gold_label=LABELS[i % 3],
            payload={
                "premise": f"پیش‌فرض {i}",
                "hypothesis": "فرضیه",
                "extra": {"hard(overlap)": "1" if i % 4 == 0 else "0"},
            },
        )
    return {"url": live_server.url, "project": project}


def predictions(right_every: int) -> str:
    """Right on every item but each `right_every`-th."""
    rows = [{"id": f"q{i}", "prediction": LABELS[i % 3] if i % right_every else LABELS[(i + 1) % 3]} for i in range(40)]
    return "".join(json.dumps(row) + "\n" for row in rows)


def upload_file(page, tmp_path, name: str, text: str, model: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    page.fill("#upload-form input[name=name]", model)
    page.set_input_files("#upload-form input[type=file]", str(path))
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")


def run_queued_job():
    from annotation.models import Job
    from annotation.tasks import run_job

    job = Job.objects.filter(kind="evaluation", status="queued").latest("id")
    run_job(job.pk)


def test_leaderboard_upload_scores_compares_rtl_and_narrow(board, page, browser, artifacts_dir, tmp_path):
    from annotation.models import Evaluation

    url = board["url"]
    page.set_viewport_size({"width": 1366, "height": 900})
    login(page, url, "board-sup")
    page.goto(f"{url}/p/fa-board/")
    # The leaderboard links its stylesheets inside <body>: the page is read once it has
    # loaded, and through assertions that wait (tests/browser/helpers.py says why).
    follow(page, "text=Model leaderboard")
    expect(page).to_have_url(re.compile(r"/p/fa-board/leaderboard/$"))
    expect(page.locator("main")).to_contain_text("No model has been evaluated yet.")

    # A bad file: every bad row listed, nothing stored.
    bad = '{"id": "q0", "prediction": "maybe"}\n{"id": "zz", "prediction": "neutral"}\n'
    upload_file(page, tmp_path, "bad.jsonl", bad, "broken")
    expect(page.locator("#upload-errors")).to_contain_text("unknown id “zz”")
    errors = page.inner_text("#upload-errors")
    assert "row 1" in errors and "prediction" in errors and "row 2" in errors and "unknown id “zz”" in errors
    assert "no prediction for id “q1”" in errors
    assert Evaluation.objects.count() == 0

    # A good file: queued; the page polls the API and reloads by itself once it is scored.
    upload_file(page, tmp_path, "strong.jsonl", predictions(right_every=10), "strong")
    expect(page.locator("tr[data-status=queued]")).to_have_count(1)
    with page.expect_navigation(timeout=20_000):
        run_queued_job()
    row = page.locator("#leaderboard tbody tr").first
    expect(row).to_have_attribute("data-status", "done")
    assert "strong" in row.inner_text() and "0.900" in row.inner_text()
    assert row.locator("svg.ci-bar line.ci").count() >= 3

    upload_file(page, tmp_path, "weak.jsonl", predictions(right_every=2), "weak")
    with page.expect_navigation(timeout=20_000):
        run_queued_job()
    expect(page.locator("#leaderboard tbody tr[data-status=done]")).to_have_count(2)

    # Every figure and the confusion heat map of one evaluation.
    details = page.locator("details.figures").last
    details.locator("summary").click()
    expect(details.locator("table.heat td.diagonal")).to_have_count(3)
    expect(details.locator("table.heat")).to_be_visible()

    # Does strong beat weak?
    strong, weak = (Evaluation.objects.get(name=name).pk for name in ("strong", "weak"))
    page.select_option("#compare-form select[name=a]", str(strong))
    page.select_option("#compare-form select[name=b]", str(weak))
    with page.expect_navigation():
        page.click("#compare-form button[type=submit]")
    expect(page.locator("#verdict")).to_contain_text(re.compile("strong\u2069? beats \u2068?weak"))
    expect(page.locator("#comparison")).to_contain_text("100%")
    page.screenshot(path=str(artifacts_dir / "leaderboard_1366.png"), full_page=True)
    page.problems.assert_clean(page)

    # Persian interface at 390 px: right to left, nothing wider than the screen but the tables' own scroll.
    context = browser.new_context(locale="fa-IR", viewport={"width": 390, "height": 844})
    narrow = context.new_page()
    login(narrow, url, "board-sup")
    narrow.goto(f"{url}/p/fa-board/leaderboard/?a={strong}&b={weak}")
    expect(narrow.locator("html")).to_have_attribute("dir", "rtl")
    expect(narrow.locator("#verdict")).to_be_visible()
    assert narrow.evaluate("() => document.documentElement.scrollWidth") <= 390
    # The first bar grows from the right edge in RTL.
    bar = narrow.locator("#leaderboard svg.ci-bar rect.rate").first
    assert float(bar.get_attribute("x")) + float(bar.get_attribute("width")) == pytest.approx(120, abs=0.01)
    narrow.screenshot(path=str(artifacts_dir / "leaderboard_390_rtl.png"), full_page=True)
    context.close()


def test_scores_by_slice_in_english_and_in_persian_at_390(board, page, browser, artifacts_dir):
    from django.contrib.auth import get_user_model

    from annotation.release.evaluation import evaluation_start

    evaluation = evaluation_start(
        project=board["project"],
        user=get_user_model().objects.get(username="board-sup"),
        data=predictions(right_every=4).encode(),
        filename="p.jsonl",
        name="sliced",
    )
    run_queued_job()
    url = board["url"]
    page.set_viewport_size({"width": 1366, "height": 900})
    login(page, url, "board-sup")
    page.goto(f"{url}/p/fa-board/leaderboard/")
    page.select_option("#slice-form select[name=slice_of]", str(evaluation.pk))
    page.select_option("#slice-form select[name=slice]", "hard(overlap)")
    with page.expect_navigation():
        page.click("#slice-form button[type=submit]")
    rows = page.locator("#slices tbody tr")
    expect(rows).to_have_count(2)
    # Items 0, 4, 8, … are the hard(overlap) ones, and exactly the ones the model got wrong.
    expect(rows.nth(0)).to_contain_text("30")
    expect(rows.nth(0)).to_contain_text("1.000")
    expect(rows.nth(1)).to_contain_text("10")
    expect(rows.nth(1)).to_contain_text("0.000")
    page.problems.assert_clean(page)
    # An attribute no item has: the refusal is on the page.
    page.goto(f"{url}/p/fa-board/leaderboard/?slice_of={evaluation.pk}&slice=nope")
    expect(page.locator("#h-slices ~ p.error")).to_contain_text("must be one of")

    context = browser.new_context(locale="fa-IR", viewport={"width": 390, "height": 844})
    narrow = context.new_page()
    login(narrow, url, "board-sup")
    narrow.goto(f"{url}/p/fa-board/leaderboard/?slice_of={evaluation.pk}&slice=hard(overlap)")
    expect(narrow.locator("html")).to_have_attribute("dir", "rtl")
    expect(narrow.locator("#h-slices")).to_have_text("امتیازها به تفکیک بخش")
    expect(narrow.locator("#h-slices + p.hint")).to_contain_text("بازهٔ اطمینان ۹۵٪")
    expect(narrow.locator("#slices tbody tr")).to_have_count(2)
    assert narrow.evaluate("() => document.documentElement.scrollWidth") <= 390
    narrow.screenshot(path=str(artifacts_dir / "leaderboard_slices_390_rtl.png"), full_page=True)
    context.close()
