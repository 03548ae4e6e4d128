"""The qa_authoring quality dashboard (/p/<slug>/quality/; HeQ §3.3-3.4 and
appendix C) through HTTP: every figure printed on the page is the report API's figure
(`GET /api/projects/{slug}/report/`), the charts are server-rendered SVG without style
attributes, the page is RTL with user names isolated, reviewers and supervisors see it,
annotators get 403 and non-members 404."""

import json
import re
from html.parser import HTMLParser

import pytest

from tests.kinds.qa.test_api import JERUSALEM, PARAGRAPH, START, add_paragraphs, qa, submit, upload  # noqa: F401 (qa is a fixture)
from tests.kinds.qa.test_reviews import IMPORTED

pytestmark = pytest.mark.django_db
RLO = "\u202e"


class Figures(HTMLParser):
    """Collects the text of every element carrying `data-figure` (nested figures included)."""

    def __init__(self):
        super().__init__()
        self.figures: dict[str, str] = {}
        self.open: list[tuple[str, str | None]] = []
        self.texts: dict[int, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        figure = dict(attrs).get("data-figure")
        self.open.append((tag, figure))
        if figure is not None:
            self.texts[len(self.open)] = []

    def handle_endtag(self, tag):
        while self.open:
            depth = len(self.open)
            open_tag, figure = self.open.pop()
            if figure is not None:
                self.figures[figure] = "".join(self.texts.pop(depth)).strip()
            if open_tag == tag:
                break

    def handle_data(self, data):
        for parts in self.texts.values():
            parts.append(data)


def figures_of(html: str) -> dict[str, str]:
    parser = Figures()
    parser.feed(html)
    return parser.figures


def n3(value):
    return "—" if value is None else f"{value:.3f}"


@pytest.fixture
def filled(qa, client_for):
    """The `qa` project with the imported file's questions, two authors' paragraphs graded,
    and validations of authored and imported questions."""
    from annotation.models import Item, Project

    sup, rev = qa["client"]("sup"), qa["client"]("rev")
    doc = json.loads(json.dumps(IMPORTED))
    doc["data"][0]["title"] = "ערים מיובאות"
    response = sup.post(
        "/api/projects/heq/import/",
        {"file": upload("f.json", json.dumps(doc, ensure_ascii=False)), "format": "squad"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    project = Project.objects.get(slug="heq")
    project.settings = {**project.settings, "validate_splits": ["train", "dev", "test"]}
    project.save()
    first = submit(qa, "a1")
    for index, grade in enumerate(("verified", "good", "rejected", "gold")):
        assert (
            rev.post(
                f"/api/annotations/{first}/review/", {"grade": grade, "question": index}, format="json"
            ).status_code
            == 201
        )
    second = submit(qa, "t1")
    rev.post(f"/api/annotations/{second}/review/", {"grade": "good", "question": 0}, format="json")
    v1 = qa["client"]("v1")
    assert (
        v1.post(
            "/api/validations/submit/",
            {
                "annotation": first,
                "question": 0,
                "answerable": True,
                "answer": {"start": START - 1, "text": "ב" + JERUSALEM},
            },
            format="json",
        ).status_code
        == 201
    )
    item = Item.objects.get(project=project, payload__title="ערים מיובאות")
    assert (
        v1.post(
            "/api/validations/submit/",
            {
                "item": item.pk,
                "question_key": "q-answerable",
                "answerable": True,
                "answer": {"start": START, "text": JERUSALEM},
            },
            format="json",
        ).status_code
        == 201
    )
    assert (
        qa["client"]("v2")
        .post(
            "/api/validations/submit/",
            {
                "item": item.pk,
                "question_key": "q-impossible",
                "answerable": True,
                "answer": {"start": 0, "text": PARAGRAPH[:4]},
            },
            format="json",
        )
        .status_code
        == 201
    )
    return qa


def page(user, slug="heq"):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(f"/p/{slug}/quality/")


def test_every_figure_on_the_page_is_the_reports(filled):
    report = filled["client"]("sup").get("/api/projects/heq/report/").json()
    response = page(filled["users"]["sup"])
    assert response.status_code == 200
    html = response.content.decode("utf-8")
    shown = figures_of(html)

    expected = {f"questions.{k}": str(v) for k, v in report["questions"].items()}
    expected.update({f"review_backlog.{k}": str(report["review_backlog"][k]) for k in ("annotations", "questions")})
    expected.update({f"validation.{k}": str(report["validation"][k]) for k in ("questions", "complete", "answers")})
    agreement = report["span_agreement"]
    rows = {
        "all": agreement,
        **agreement["by_origin"],
        **{f"validator:{r['validator']}": r for r in agreement["per_validator"]},
    }
    for key, row in rows.items():
        expected[f"span_agreement.{key}.pairs"] = str(row["pairs"])
        for metric in ("em", "f1", "tlnls"):
            expected[f"span_agreement.{key}.{metric}"] = n3(row[metric])
    for entry in report["grades_per_annotator"]:
        who = entry["annotator"]
        for grade, n in entry["totals"].items():
            expected[f"grades.{who}.totals.{grade}"] = str(n)
        for period in entry["series"]:
            expected[f"grades.{who}.{period['period']}.mean"] = f"{period['mean_grade']:.2f}"
        expected[f"grades.{who}.first"] = f"{entry['series'][0]['mean_grade']:.2f}"
        expected[f"grades.{who}.last"] = f"{entry['series'][-1]['mean_grade']:.2f}"
    for section in ("question_overlap", "answer_positions"):
        for series in ("authored", "imported"):
            for b, n in enumerate(report[section][series]):
                expected[f"{section}.{series}.{b}"] = str(n)
    for series in ("authored", "imported"):
        expected[f"question_overlap.mean_{series}"] = n3(report["question_overlap"][f"mean_{series}"])
        wh = report["wh_words"][series]
        expected[f"wh_words.{series}.distinct"] = str(wh["distinct"])
        expected[f"wh_words.{series}.entropy"] = n3(wh["entropy"])
        expected[f"wh_words.{series}.without_wh"] = str(wh["without_wh"])
        for word, n in wh["counts"].items():
            expected[f"wh_words.{series}.{word}"] = str(n)
    expected["question_overlap.warning_above"] = f"{report['question_overlap']['warning_above']:.2f}"

    missing = sorted(set(expected) - set(shown))
    assert not missing, missing
    assert {key: shown[key] for key in expected} == expected
    # Words missing from one series are shown as 0 for it (the table has both columns).
    for key, value in shown.items():
        if (
            key.startswith("wh_words.")
            and key not in expected
            and not key.endswith(("distinct", "entropy", "without_wh"))
        ):
            assert value == "0", key
    # The data behind the checks is not trivial.
    assert report["questions"]["imported"] == 3 and report["questions"]["authored"] == 8
    assert agreement["by_origin"]["imported"]["pairs"] == 2 and agreement["by_origin"]["authored"]["pairs"] == 1
    assert report["review_backlog"]["questions"] == 3
    assert shown["review_backlog.oldest"].startswith(report["review_backlog"]["oldest"][:10])


def test_the_page_is_rtl_svg_without_inline_style_and_isolates_names(filled, make_user, client_for):
    # A reviewer whose name carries a bidi override: shown isolated, never steering the page.
    from annotation.models import Item, Membership

    tricky = make_user(f"rev{RLO}x")
    Membership.objects.create(project=filled["project"], user=tricky, role="reviewer", status="active")
    item = Item.objects.get(project=filled["project"], payload__title="ערים מיובאות")
    assert (
        client_for(tricky)
        .post(
            "/api/validations/submit/",
            {"item": item.pk, "question_key": "q-impossible", "answerable": False, "answer": None},
            format="json",
        )
        .status_code
        == 201
    )
    # Names are shown to supervisors (reviewers see the export's pseudonyms).
    response = page(filled["users"]["sup"])
    assert response.status_code == 200
    html = response.content.decode("utf-8")
    assert re.search(r'<html lang="en" dir="ltr"', html)  # the interface's language (English here), not the project's
    assert "<style" not in html and " style=" not in html and "<script" not in html.split("</main>")[0]
    assert re.search(r"\son[a-z]+=", html) is None  # no inline handlers
    assert html.count("<svg") >= 2 + 2 + 2  # trends, bars, histograms …
    assert '<bdi class="annotator">a1</bdi>' in html and '<bdi class="annotator">t1</bdi>' in html
    assert '<bdi class="validator">v1</bdi>' in html and f'<bdi class="validator">rev{RLO}x</bdi>' in html
    # RTL: the first bin of each histogram sits at the inline start (the right side).
    first_bar = re.search(r'data-chart="answer_positions".*?<rect class="qq-authored" x="([\d.]+)"', html, re.S)
    last_bar = re.findall(
        r'<rect class="qq-authored" x="([\d.]+)"', html.split('data-chart="answer_positions"')[1].split("</svg>")[0]
    )
    assert float(first_bar.group(1)) > float(last_bar[-1])
    # The review page links here.
    from django.test import Client

    client = Client()
    client.force_login(filled["users"]["rev"])
    review = client.get("/p/heq/review/").content.decode("utf-8")
    assert 'href="/p/heq/quality/"' in review


def test_ltr_projects_draw_left_to_right(make_user):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    admin = make_user("root", staff=True)
    project = project_create(actor=admin, slug="en-qa", name="English QA", kind="qa_authoring", language="en")
    sup = make_user("sup")
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    response = page(sup, "en-qa")
    assert response.status_code == 200
    html = response.content.decode("utf-8")
    assert '<html lang="en" dir="ltr"' in html
    assert "No question has been graded yet." in html


def test_who_sees_the_quality_page(filled, make_user):
    from annotation.services.projects import project_create

    assert page(filled["users"]["sup"]).status_code == 200
    assert page(filled["users"]["rev"]).status_code == 200
    assert page(filled["users"]["root"]).status_code == 200  # an admin
    for annotator in ("a1", "t1", "v1"):
        assert page(filled["users"][annotator]).status_code == 403
    assert page(make_user("stranger")).status_code == 404
    assert page(filled["users"]["sup"], "no-such-project").status_code == 404
    # Another kind has no quality page.
    project_create(actor=filled["users"]["root"], slug="nli", name="NLI", kind="nli_relabel", language="fa")
    assert page(filled["users"]["root"], "nli").status_code == 404
    # Anonymous: to the login page.
    from django.test import Client

    anonymous = Client().get("/p/heq/quality/")
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_page_queries_do_not_grow_with_the_work(filled):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count():
        with CaptureQueriesContext(connection) as queries:
            assert page(filled["users"]["sup"]).status_code == 200
        return len(queries)

    add_paragraphs(filled, 2)
    small = count()
    for _ in range(2):
        annotation_id = submit(filled, "a1")
        filled["client"]("rev").post(
            f"/api/annotations/{annotation_id}/review/", {"grade": "gold", "question": 1}, format="json"
        )
    assert count() == small
