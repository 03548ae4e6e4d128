"""An annotator never gets two pairs of one premise in a row while another premise is
available (FarsTail §3.2), also for JSONL and CSV files that carry no `group`: the nli kinds
group such pairs by their premise. The group column of the exports stays as the file had it."""

import csv
import io
import json

import pytest

pytestmark = pytest.mark.django_db

ANNOTATORS = ("g1", "g2", "g3", "g4", "g5", "g6")
# Written for this test: three premises, three hypotheses each.
PREMISES = (
    "کتابخانه‌ی شهر هر روز از ساعت هشت صبح باز است.",
    "باران دیشب خیابان‌های مرکز شهر را آب گرفت.",
    "تیم دانشگاه در مسابقه‌ی برنامه‌نویسی دوم شد.",
)
HYPOTHESES = ("جمله‌ی نخست.", "جمله‌ی دوم.", "جمله‌ی سوم.")
ROWS = [
    {"id": f"p{p}h{h}", "premise": premise, "hypothesis": hypothesis}
    for p, premise in enumerate(PREMISES)
    for h, hypothesis in enumerate(HYPOTHESES)
]


def as_jsonl() -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS).encode()


def as_csv() -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "premise", "hypothesis"])
    writer.writeheader()
    writer.writerows(ROWS)
    return out.getvalue().encode()


def upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


@pytest.fixture
def project_with(make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    def make(kind: str, fmt: str, data: bytes, *, created: int = 9):
        admin = make_user(f"root-{kind}-{fmt}", staff=True)
        slug = f"premises-{kind.replace('_', '-')}-{fmt}"
        # More voters than annotators, so that every annotator is served all nine pairs.
        project = project_create(
            actor=admin, slug=slug, name=slug, kind=kind, language="fa",
            settings={"consensus_n": 10, "consensus_k": 8} if kind == "nli_relabel" else {"labels_per_item": 10},
        )  # fmt: skip
        response = client_for(admin).post(
            f"/api/projects/{slug}/import/", {"file": upload(f"pairs.{fmt}", data), "format": fmt}, format="multipart"
        )
        assert response.status_code == 201, response.content
        assert response.json()["created"] == created
        annotators = []
        for name in ANNOTATORS:
            user = make_user(f"{slug}-{name}")
            Membership.objects.create(project=project, user=user, role="annotator", status="active")
            annotators.append(client_for(user))
        return project, admin, annotators

    return make


def premises_served(client, slug: str) -> list[str]:
    served = []
    while True:
        response = client.get(f"/api/projects/{slug}/next/")
        if response.status_code == 204:
            return served
        assert response.status_code == 200, response.content
        body = response.json()
        served.append(body["item"]["payload"]["premise"])
        submitted = client.post(
            f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
        )
        assert submitted.status_code == 201, submitted.content


def assert_no_premise_twice_while_another_is_left(served: list[str]) -> None:
    assert sorted(served) == sorted(row["premise"] for row in ROWS)
    left = {premise: len(HYPOTHESES) for premise in PREMISES}
    previous = None
    for position, premise in enumerate(served):
        if premise == previous:
            others = sum(count for other, count in left.items() if other != premise)
            assert others == 0, (
                f"pair {position + 1} repeats the premise while {others} pairs of other premises were left: {served}"
            )
        left[premise] -= 1
        previous = premise


@pytest.mark.parametrize("fmt, data", [("jsonl", as_jsonl()), ("csv", as_csv())], ids=["jsonl", "csv"])
@pytest.mark.parametrize("kind", ["nli_relabel", "label_test"])
def test_pairs_of_one_premise_never_follow_each_other_without_groups_in_the_file(
    project_with, client_for, kind, fmt, data
):
    project, admin, annotators = project_with(kind, fmt, data)
    for client in annotators:
        assert_no_premise_twice_while_another_is_left(premises_served(client, project.slug))

    # The grouping is the engine's: the file had no group, and neither do the items or exports.
    listed = client_for(admin).get(f"/api/projects/{project.slug}/items/?page_size=100").json()["results"]
    assert [item["group"] for item in listed] == [""] * 9
    exported = client_for(admin).get(f"/api/projects/{project.slug}/export/?format=jsonl&status=all")
    assert exported.status_code == 200
    records = [
        json.loads(line)
        for line in (
            b"".join(exported.streaming_content) if getattr(exported, "streaming", False) else exported.content
        )
        .decode()
        .splitlines()
    ]
    assert len(records) == 9
    assert {record["group"] for record in records} == {""}


def test_a_group_in_the_file_still_decides(project_with):
    """Where the file names groups, they are the rule's key, not the premise: two groups
    that cut across the premises alternate strictly (equal halves make that possible)."""
    from annotation.models import Item

    rows = [{**row, "group": f"q{index % 2}"} for index, row in enumerate(ROWS[:8])]
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    group_of = {(row["premise"], row["hypothesis"]): row["group"] for row in rows}
    project, _admin, annotators = project_with("nli_relabel", "jsonl", data, created=8)
    assert set(Item.objects.filter(project=project).values_list("group", flat=True)) == {"q0", "q1"}
    for client in annotators:
        groups = []
        while (response := client.get(f"/api/projects/{project.slug}/next/")).status_code == 200:
            body = response.json()
            payload = body["item"]["payload"]
            groups.append(group_of[payload["premise"], payload["hypothesis"]])
            submitted = client.post(
                f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": "neutral"}}, format="json"
            )
            assert submitted.status_code == 201
        assert len(groups) == 8
        assert all(x != y for x, y in zip(groups, groups[1:])), groups
