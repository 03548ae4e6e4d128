"""The whole FarsTail loop through HTTP on the real sample (FarsTail §3 end to end): authors
turn multiple-choice questions into premise + three hypotheses; those pairs and the
FarsTail validation sample are relabeled blind by four annotators; the 4-of-5 consensus
runs; the authors revise (or withdraw) their failed pairs; round 2 is relabeled; the
consensus runs again; then the export, the stored outcomes and Krippendorff's alpha are
checked against a computation made here, independently, from the votes this test cast
(counted by hand, alpha from the `krippendorff` package)."""

import csv
import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.django_db

FARSTAIL = Path(__file__).resolve().parents[4] / "shared" / "data" / "farstail"
RELABEL, AUTHORING = "fa-farstail", "fa-mc"
RELABELERS = ("r1", "r2", "r3", "r4")
AUTHORS = ("a1", "a2")
LABELS = ("entailment", "neutral", "contradiction")
SHORT = {"e": "entailment", "c": "contradiction", "n": "neutral"}
ZWNJ = "\u200c"

# Written for this test (the FarsTail sample has no multiple-choice questions).
QUESTIONS = [
    {
        "id": "mc1",
        "question": "پایتخت ایران کدام شهر است؟",
        "choices": ["اصفهان", "تهران", "شیراز", "تبریز"],
        "answer_index": 1,
    },
    {"id": "mc2", "question": "حافظ در کدام شهر به دنیا آمد؟", "choices": ["شیراز", "مشهد", "یزد"], "answer_index": 0},
    {
        "id": "mc3",
        "question": f"بلندترین قله{ZWNJ}ی ایران کدام است؟",
        "choices": ["سبلان", "دنا", "دماوند"],
        "answer_index": 2,
    },
    {
        "id": "mc4",
        "question": "خلیج فارس در کدام سمت ایران است؟",
        "choices": ["شمال", "جنوب"],
        "answer_index": 1,
        "split": "test",
    },
]


def written_by(author: str, question: dict) -> dict:
    """The author's premise and hypotheses for a question (text of their own)."""
    answer = question["choices"][question["answer_index"]]
    wrong = next(c for i, c in enumerate(question["choices"]) if i != question["answer_index"])
    return {
        "premise": f"بر پایه{ZWNJ}ی منابع، پاسخ پرسش «{question['question']}» {answer} است. ({author})",
        "entailment": f"پاسخ درست {answer} است.",
        "contradiction": f"پاسخ درست {wrong} است.",
        "neutral": f"این پرسش در کتاب{ZWNJ}های درسی آمده است.",
    }


def upload(name: str, data: bytes):
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def other(label: str, shift: int = 1) -> str:
    return LABELS[(LABELS.index(label) + shift) % 3]


def plan_round_1(position: int, reference: str) -> list[str]:
    """The four relabels of an item in round 1, by its position: every outcome occurs."""
    pattern = position % 6
    if pattern in (0, 1):
        return [reference, reference, reference, other(reference)]  # 4-1 with the reference
    if pattern == 2:
        return [reference] * 4  # 5-0
    if pattern == 3:
        return [other(reference)] * 4  # 4-1 against the reference: overruled
    if pattern == 4:
        return [reference, reference, other(reference), other(reference)]  # 3-2: fails
    return [reference, other(reference), other(reference), other(reference, 2)]  # 2-2-1: fails


def plan_round_2(position: int, reference: str) -> list[str]:
    if position % 2:
        return [reference, reference, reference, other(reference)]  # accepted now
    return [reference, other(reference), other(reference), reference]  # 3-2 again: removed


@pytest.fixture
def loop(make_user, client_for, settings, django_capture_on_commit_callbacks):
    # Consensus and agreement tasks run in this process, on commit (captured below).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    admin = make_user("root", staff=True)
    root = client_for(admin)
    for body in (
        {"slug": RELABEL, "name": "FarsTail relabel", "kind": "nli_relabel", "language": "fa"},
        {
            "slug": AUTHORING,
            "name": "FarsTail authoring",
            "kind": "nli_authoring",
            "language": "fa",
            "settings": {"relabel_project": RELABEL},
        },
    ):
        response = root.post("/api/projects/", body, format="json")
        assert response.status_code == 201, response.content
    users = {"root": admin}
    for name in AUTHORS + RELABELERS:
        users[name] = make_user(name)
        slug = AUTHORING if name in AUTHORS else RELABEL
        response = root.post(
            f"/api/projects/{slug}/members/", {"username": name, "role": "annotator", "status": "active"}, format="json"
        )
        assert response.status_code == 201, response.content
    clients = {name: client_for(user) for name, user in users.items()}
    return users, clients


def relabel_everything(clients, plan: dict[int, list[str]], cast: dict, round_: int, capture) -> None:
    """Each relabeler takes items through next/submit until none is left, voting the
    plan; `cast[(item, round)][name]` records every vote."""
    done = set()
    while len(done) < len(RELABELERS):
        for index, name in enumerate(RELABELERS):
            if name in done:
                continue
            response = clients[name].get(f"/api/projects/{RELABEL}/next/")
            if response.status_code == 204:
                done.add(name)
                continue
            assert response.status_code == 200, response.content
            body = response.json()
            item_id = body["item"]["id"]
            # Blind: the pair only, never the intended label or the author.
            assert set(body["item"]["payload"]) == {"premise", "hypothesis"}
            label = plan[item_id][index]
            with capture(execute=True):
                submitted = clients[name].post(
                    f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
                )
            assert submitted.status_code == 201, submitted.content
            assert name not in cast[(item_id, round_)]
            cast[(item_id, round_)][name] = label


def decide_here(votes: list[str], reference: str) -> tuple[str, str, dict]:
    """4 of 5, the reference counted as one vote: (outcome, gold, votes per label)."""
    counts = Counter(votes + [reference])
    (top, n_top), *rest = counts.most_common()
    accepted = n_top >= 4 and (not rest or rest[0][1] < n_top)
    return ("accepted" if accepted else "failed"), (top if accepted else ""), dict(counts)


def test_farstail_loop_through_http(loop, django_capture_on_commit_callbacks):
    import krippendorff

    from annotation.models import ConsensusOutcome, Item

    users, clients = loop
    root = clients["root"]
    capture = django_capture_on_commit_callbacks

    # 1. Multiple-choice questions; each author writes two of them up.
    data = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS).encode()
    response = root.post(f"/api/projects/{AUTHORING}/import/", {"file": upload("mc.jsonl", data), "format": "jsonl"})
    assert response.status_code == 201 and response.json()["created"] == 4, response.content
    by_id = {q["id"]: q for q in QUESTIONS}
    authored: dict[str, dict] = {}  # external id of the generated item → what its author wrote
    for author in AUTHORS * 2:
        body = clients[author].get(f"/api/projects/{AUTHORING}/next/").json()
        question = by_id[body["item"]["external_id"]]
        assert body["item"]["payload"]["choices"] == question["choices"]
        value = written_by(author, question)
        response = clients[author].post(
            f"/api/assignments/{body['assignment']}/submit/", {"value": value}, format="json"
        )
        assert response.status_code == 201, response.content
        authored[question["id"]] = {"author": author, "value": value}
    assert clients["a1"].get(f"/api/projects/{AUTHORING}/next/").status_code == 204

    # 2. The FarsTail validation sample goes into the same relabel project.
    raw = (FARSTAIL / "Val-word.csv").read_bytes()
    response = root.post(
        f"/api/projects/{RELABEL}/import/", {"file": upload("Val-word.csv", raw), "format": "farstail"}
    )
    assert response.status_code == 201, response.content
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline=""), delimiter="\t"))[1:]
    assert response.json()["created"] == len(rows) == 152

    items = list(Item.objects.filter(project__slug=RELABEL).select_related("author").order_by("position", "pk"))
    assert len(items) == 152 + 3 * len(QUESTIONS)
    generated = [i for i in items if i.author_id is not None]
    assert len(generated) == 12
    for item in generated:
        qid = item.group.split(":", 1)[1]
        assert item.author.username == authored[qid]["author"]
        assert item.payload["hypothesis"] == authored[qid]["value"][item.reference_label]
    # The sample's labels arrive as the reference ("original") labels, text byte-exact.
    imported = [i for i in items if i.author_id is None]
    assert [(i.payload["premise"], i.payload["hypothesis"], i.reference_label) for i in imported] == [
        (row[0], row[1], SHORT[row[2]]) for row in rows
    ]
    info = {i.pk: i for i in items}

    # 3. Round 1: four relabels per item, chosen so that every outcome occurs.
    plan1 = {i.pk: plan_round_1(position, i.reference_label) for position, i in enumerate(items)}
    # Authored pairs: half fail (3-2 or 2-2-1), so that the revision round has work.
    for n, item in enumerate(generated):
        plan1[item.pk] = plan_round_1(4 + (n % 2) if n < 6 else n % 4, item.reference_label)
    cast: dict = {key: {} for key in [(pk, 1) for pk in info] + [(pk, 2) for pk in info]}
    relabel_everything(clients, plan1, cast, 1, capture)
    assert all(len(cast[(pk, 1)]) == 4 for pk in info)

    expected1 = {pk: decide_here(list(cast[(pk, 1)].values()), info[pk].reference_label) for pk in info}
    stored = {(o.item_id, o.round): o for o in ConsensusOutcome.objects.filter(item__project__slug=RELABEL)}
    assert set(stored) == {(pk, 1) for pk in info}
    for pk, (outcome, gold, votes) in expected1.items():
        row = stored[(pk, 1)]
        assert (row.outcome, row.gold, row.votes, row.n_votes) == (outcome, gold, votes, 5), info[pk].external_id
        assert row.agreement == max(votes.values()) / 5
        assert row.label_changed == (outcome == "accepted" and gold != info[pk].reference_label)
    failed_authored = [i for i in generated if expected1[i.pk][0] == "failed"]
    assert len(failed_authored) == 6
    status = dict(Item.objects.filter(project__slug=RELABEL).values_list("pk", "status"))
    for pk, (outcome, _, _) in expected1.items():
        want = "accepted" if outcome == "accepted" else ("needs_revision" if info[pk].author_id else "removed")
        assert status[pk] == want
    # The 12 authored pairs come first (positions 0-11), 6 of them failing; of the 152
    # sample rows at positions 12-163, those at position % 6 in (4, 5) fail: 50.
    assert Counter(o for o, _, _ in expected1.values()) == {"accepted": 108, "failed": 56}

    # 4. The authors see their failed pairs with the labels cast (not who cast them) and
    # revise all but one, which is withdrawn.
    revised = {}
    for author in AUTHORS:
        listed = clients[author].get(f"/api/projects/{RELABEL}/revisions/")
        assert listed.status_code == 200, listed.content
        body = listed.json()
        entries = body if isinstance(body, list) else body["results"]
        mine = [i for i in failed_authored if i.author.username == author]
        assert sorted(e["id"] for e in entries) == sorted(i.pk for i in mine)
        for entry in entries:
            assert entry["labels_cast"] == dict(sorted(Counter(cast[(entry["id"], 1)].values()).items()))
            assert "r1" not in json.dumps(entry, ensure_ascii=False)
    withdrawn = failed_authored[0]
    response = clients[withdrawn.author.username].post(
        f"/api/items/{withdrawn.pk}/revise/", {"withdraw": True}, format="json"
    )
    assert response.status_code == 200, response.content
    for item in failed_authored[1:]:
        hypothesis = item.payload["hypothesis"] + " (بازنویسی شده)"
        response = clients[item.author.username].post(
            f"/api/items/{item.pk}/revise/", {"hypothesis": hypothesis}, format="json"
        )
        assert response.status_code == 200, response.content
        revised[item.pk] = hypothesis
    # Someone else's pair, or one that is not waiting: refused, nothing changes.
    other_author = "a2" if failed_authored[1].author.username == "a1" else "a1"
    assert (
        clients[other_author]
        .post(f"/api/items/{failed_authored[1].pk}/revise/", {"hypothesis": "x"}, format="json")
        .status_code
        == 404
    )
    assert (
        clients[failed_authored[1].author.username]
        .post(f"/api/items/{failed_authored[1].pk}/revise/", {"hypothesis": "y"}, format="json")
        .status_code
        == 409
    )

    # 5. Round 2 for the revised pairs, with fresh votes; then the consensus again.
    plan2 = {pk: plan_round_2(n, info[pk].reference_label) for n, pk in enumerate(revised)}
    relabel_everything(clients, plan2, cast, 2, capture)
    assert all(len(cast[(pk, 2)]) == 4 for pk in revised)
    assert all(not cast[(pk, 2)] for pk in info if pk not in revised)
    expected2 = {pk: decide_here(list(cast[(pk, 2)].values()), info[pk].reference_label) for pk in revised}
    for pk, (outcome, gold, votes) in expected2.items():
        row = ConsensusOutcome.objects.get(item_id=pk, round=2)
        assert (row.outcome, row.gold, row.votes, row.n_votes) == (outcome, gold, votes, 5)

    final = {}  # item id → (status, round, outcome, gold, votes of the final round)
    for pk, item in info.items():
        round_ = 2 if pk in revised else 1
        outcome, gold, votes = (expected2 if round_ == 2 else expected1)[pk]
        if outcome == "accepted":
            status_ = "accepted"
        elif pk == withdrawn.pk or round_ == 2 or item.author_id is None:
            status_ = "removed"
        else:
            status_ = "needs_revision"
        final[pk] = (status_, round_, outcome, gold, votes)
    assert dict(Item.objects.filter(project__slug=RELABEL).values_list("pk", "status")) == {
        pk: f[0] for pk, f in final.items()
    }
    assert not Item.objects.filter(project__slug=RELABEL, status__in=["open", "complete", "needs_revision"]).exists()

    # 6. Export: the gold (default status=accepted) as computed here.
    response = root.get(f"/api/projects/{RELABEL}/export/", {"format": "jsonl"})
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    records = [json.loads(line) for line in body.decode("utf-8").splitlines() if line]
    accepted = {info[pk].external_id: (pk, f) for pk, f in final.items() if f[0] == "accepted"}
    assert sorted(r["id"] for r in records) == sorted(accepted)
    for record in records:
        pk, (_, round_, _, gold, votes) = accepted[record["id"]]
        item = info[pk]
        assert record["gold_label"] == gold
        assert record["author_label"] == item.reference_label
        assert record["round"] == round_
        assert record["n"] == 5
        assert record["votes"] == {label: votes.get(label, 0) for label in LABELS}
        assert record["label_changed"] == (gold != item.reference_label)
        assert record["agreement"] == max(votes.values()) / 5
        assert sorted(record["annotator_labels"]) == sorted(cast[(pk, round_)].values())
        assert len(set(record["annotators"])) == 4
        assert record["premise"] == item.payload["premise"]
        assert record["hypothesis"] == revised.get(pk, item.payload["hypothesis"])
        assert record["group"] == item.group
    # The FarsTail layout keeps the sample's own columns for the accepted original rows.
    response = root.get(f"/api/projects/{RELABEL}/export/", {"format": "farstail"})
    assert response.status_code == 200
    tsv = (b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content).decode(
        "utf-8"
    )
    exported = list(csv.reader(io.StringIO(tsv, newline=""), delimiter="\t"))
    assert exported[0][:3] == ["premise", "hypothesis", "label"]
    assert len(exported) - 1 == len(records)

    # 7. Agreement: the job's alpha per round and over all rounds against the package on
    # the matrix built here (coders = the four relabelers, each author, and "original"
    # for the sample's labels; a unit is an item in a round).
    with capture(execute=True):
        response = root.post(f"/api/projects/{RELABEL}/agreement/")
    assert response.status_code == 202, response.content
    job = root.get(f"/api/jobs/{response.json()['job']}/").json()
    assert job["status"] == "done", job
    reports = {
        json.dumps(r["scope"], sort_keys=True): r for r in root.get(f"/api/projects/{RELABEL}/agreement/").json()
    }

    code = {label: n for n, label in enumerate(LABELS)}
    coders = list(RELABELERS) + list(AUTHORS) + ["original"]

    def matrix(units):
        data = np.full((len(coders), len(units)), np.nan)
        for column, (pk, round_) in enumerate(units):
            item = info[pk]
            data[coders.index(item.author.username if item.author_id else "original"), column] = code[
                item.reference_label
            ]
            for name, label in cast[(pk, round_)].items():
                data[coders.index(name), column] = code[label]
        return data

    units = {
        '{"round": 1}': [(pk, 1) for pk in info],
        '{"round": 2}': [(pk, 2) for pk in revised],
        '{"round": "all"}': [(pk, 1) for pk in info] + [(pk, 2) for pk in revised],
    }
    assert set(reports) == set(units)
    for scope, scope_units in units.items():
        expected = krippendorff.alpha(reliability_data=matrix(scope_units), level_of_measurement="nominal")
        report = reports[scope]
        assert report["level"] == "nominal"
        assert report["alpha"] == pytest.approx(expected, abs=1e-9), scope
        assert report["units"] == len(scope_units)
        assert report["ci_low"] <= report["alpha"] <= report["ci_high"]
