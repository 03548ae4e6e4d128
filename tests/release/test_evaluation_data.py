"""Model evaluation on the real samples: FarsTail's test file with its published
hard(...) columns, HeQ's validation sample with a SQuAD predictions dict (the validators'
extra spans count as gold), and PhrasIS pairs with reversed predictions (coherence).
The items' gold and split are set directly: deciding them is other parts' work."""

import json
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, f1_score

from annotation.metrics.coherence import reverse_label
from tests.kinds.qa.test_api import jsonl, upload

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def run_latest_job():
    from annotation.models import Job
    from annotation.tasks import run_job

    job = Job.objects.filter(kind="evaluation").latest("id")
    run_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job


def evaluate(client, slug: str, name: str, data: bytes | str, **fields) -> dict:
    response = client.post(
        f"/api/projects/{slug}/evaluations/",
        {"file": upload(name, data), "name": "model", **fields},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    run_latest_job()
    return client.get(f"/api/projects/{slug}/evaluations/{response.json()['id']}/").json()


def supervisor_client(slug: str, kind: str, language: str, make_user, client_for):
    from annotation.models import Membership
    from annotation.services.projects import project_create

    sup = make_user(f"sup-{slug}")
    project = project_create(
        actor=make_user(f"root-{slug}", staff=True), slug=slug, name=slug, kind=kind, language=language
    )
    Membership.objects.create(project=project, user=sup, role="supervisor", status="active")
    return project, client_for(sup)


def import_sample(client, project, path: Path, fmt: str):
    """Import one of the samples through the API; its items become the test split."""
    from annotation.models import Item

    response = client.post(
        f"/api/projects/{project.slug}/import/",
        {"file": upload(path.name, path.read_bytes()), "format": fmt},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    Item.objects.filter(project=project).update(split="test")


def test_farstail_test_file_is_scored_with_its_published_hard_columns(make_user, client_for):
    from django.db.models import F

    from annotation.models import Item

    project, client = supervisor_client("farstail", "nli_relabel", "fa", make_user, client_for)
    import_sample(client, project, DATA / "farstail" / "Test-word.csv", "farstail")
    # Published labels are final (what `labels_final` does on import).
    Item.objects.filter(project=project).update(gold_label=F("reference_label"), status="accepted")
    items = list(Item.objects.filter(project=project).order_by("position", "id"))
    flags = [(item.payload["extra"]["hard(overlap)"], item.payload["extra"]["hard(hypothesis)"]) for item in items]
    assert {"0", "1"} <= {overlap for overlap, _ in flags}
    # A model right exactly on the items the overlap baseline found easy.
    wrong = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}
    predictions = {
        item.external_id: item.gold_label if flags[i][0] == "0" else wrong[item.gold_label]
        for i, item in enumerate(items)
    }
    detail = evaluate(
        client, "farstail", "farstail.jsonl", jsonl({"id": k, "prediction": v} for k, v in predictions.items())
    )
    figures = detail["figures"]
    assert detail["items"] == 61
    gold = [item.gold_label for item in items]
    predicted = list(predictions.values())
    assert figures["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted))
    assert figures["macro_f1"]["value"] == pytest.approx(f1_score(gold, predicted, average="macro"))
    assert figures["subsets"]["hard(overlap)"]["easy"]["value"] == 1.0
    assert figures["subsets"]["hard(overlap)"]["hard"]["value"] == 0.0
    hypothesis_hard = [g == p for (_, h), g, p in zip(flags, gold, predicted) if h == "1"]
    assert figures["subsets"]["hard(hypothesis)"]["hard"]["value"] == pytest.approx(
        sum(hypothesis_hard) / len(hypothesis_hard)
    )
    assert figures["subset_items"]["hard(overlap)"]["hard"] == sum(o == "1" for o, _ in flags)


def heq_sample_project(slug: str, make_user, client_for):
    """A qa_authoring project with HeQ's shipped validation sample imported as the test
    split: (project, client, [(article, paragraph, question) of every question not rejected])."""
    project, client = supervisor_client(slug, "qa_authoring", "he", make_user, client_for)
    path = DATA / "heq" / "val_v1.1_sample.json"
    import_sample(client, project, path, "squad")
    document = json.loads(path.read_text(encoding="utf-8"))
    return (
        project,
        client,
        [
            (article, p, q)
            for article in document["data"]
            for p in article["paragraphs"]
            for q in p["qas"]
            if q.get("question quality") != "rejected"
        ],
    )


def test_heq_sample_with_a_squad_predictions_dict_and_validators_extra_spans(make_user, client_for):
    from annotation.models import Item, QuestionValidation

    project, client, sample = heq_sample_project("heq-eval", make_user, client_for)
    questions = [(q, p["context"]) for _article, p, q in sample]
    answerable = [q for q, _ in questions if not q["is_impossible"]]
    unanswerable = [q for q, _ in questions if q["is_impossible"]]
    assert answerable and len(unanswerable) >= 2
    # A validator marked another span of the first answerable question: predicting it is exact.
    target, context = next((q, c) for q, c in questions if not q["is_impossible"])
    extra = next(word for word in context.split() if all(word not in a["text"] for a in target["answers"]))
    item = next(
        i
        for i in Item.objects.filter(project=project)
        if any(q.get("id") == target["id"] for q in i.payload.get("questions", []))
    )
    index = next(n for n, q in enumerate(item.payload["questions"]) if q.get("id") == target["id"])
    QuestionValidation.objects.create(
        item=item,
        question=index,
        question_key=target["id"],
        validator=make_user("val"),
        answer_start=context.index(extra),
        answer_text=extra,
    )
    predictions = {q["id"]: ("" if q["is_impossible"] else q["answers"][0]["text"]) for q, _ in questions}
    predictions[target["id"]] = extra
    predictions[unanswerable[0]["id"]] = "תשובה כלשהי"  # answered an unanswerable question: 0
    detail = evaluate(client, "heq-eval", "predictions.json", json.dumps(predictions, ensure_ascii=False))
    figures = detail["figures"]
    # A model that never answers: right on the unanswerable questions only. The paired
    # comparison says the first one beats it on F1, and by how much.
    silent = evaluate(client, "heq-eval", "silent.json", json.dumps({qid: "" for qid in predictions}))
    compared = client.get(f"/api/projects/heq-eval/evaluations/compare/?a={detail['id']}&b={silent['id']}").json()
    assert compared["primary"] == "f1" and compared["verdict"] == "a_better"
    assert compared["figures"]["f1"]["difference"] == pytest.approx(
        figures["f1"]["value"] - silent["figures"]["f1"]["value"]
    )
    assert compared["figures"]["answerable"]["exact_match"]["share_a_better"] == 1.0
    assert silent["figures"]["unanswerable"]["exact_match"]["value"] == 1.0
    assert detail["items"] == len(questions)
    assert figures["questions"] == {"answerable": len(answerable), "unanswerable": len(unanswerable)}
    for name in ("exact_match", "f1", "tlnls"):
        assert figures["answerable"][name]["value"] == 1.0
        assert figures["unanswerable"][name]["value"] == pytest.approx(1 - 1 / len(unanswerable))
        assert figures[name]["value"] == pytest.approx(1 - 1 / len(questions))
        assert figures[name]["ci_low"] <= figures[name]["value"] <= figures[name]["ci_high"]


def test_heq_predictions_refuse_non_string_answers_and_duplicate_keys(make_user, client_for):
    from annotation.models import Evaluation, Item

    project, client, sample = heq_sample_project("heq-bad", make_user, client_for)
    ids = [q["id"] for _article, _p, q in sample]
    entries = [
        f'"{ids[0]}": 7',
        f'"{ids[1]}": null',
        f'"{ids[2]}": NaN',
        f'"{ids[3]}": ["x"]',
        f'"{ids[4]}": ""',
        f'"{ids[4]}": ""',
        *(f'"{qid}": ""' for qid in ids[5:]),
    ]
    response = client.post(
        "/api/projects/heq-bad/evaluations/",
        {"file": upload("p.json", "{" + ",\n".join(entries) + "}"), "name": "m"},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    found = {(e.get("row"), e["field"]) for e in response.json()["errors"]}
    assert {(1, "prediction"), (2, "prediction"), (3, "prediction"), (4, "prediction"), (6, "id")} <= found
    assert not Evaluation.objects.exists()


def test_phrasis_pairs_with_reversed_predictions_give_soft_and_hard_coherence(make_user, client_for):
    from annotation.models import Item

    project, client = supervisor_client("phrasis-eval", "phrase_pair", "en", make_user, client_for)
    import_sample(client, project, DATA / "phrasis" / "PhrasIS.train.images.positives.txt", "phrasis")
    items = list(Item.objects.filter(project=project).order_by("position", "id"))
    golds = [item.reference_label for item in items]
    assert "UNRELATED" not in golds[:14]
    rows = []
    for i, (item, gold) in enumerate(zip(items, golds)):
        row = {"id": item.external_id, "prediction": gold}
        if i < 10:
            row["reversed"] = reverse_label(gold)  # coherent and correct
        elif i < 14:
            row["prediction"] = row["reversed"] = "UNRELATED"  # coherent (symmetric), wrong
        rows.append(row)
    text = "id,prediction,reversed\n" + "".join(f"{r['id']},{r['prediction']},{r.get('reversed', '')}\n" for r in rows)
    first = evaluate(client, "phrasis-eval", "p.csv", text)
    figures = first["figures"]
    predicted = [r["prediction"] for r in rows]
    assert figures["accuracy"]["value"] == pytest.approx(accuracy_score(golds, predicted))
    assert figures["reversed_pairs"] == 14
    assert figures["soft_coherence"]["value"] == 1.0
    assert figures["hard_coherence"]["value"] == pytest.approx(10 / 14)
    assert figures["hard_coherence"]["ci_low"] <= 10 / 14 <= figures["hard_coherence"]["ci_high"]
    # A model that flips direction without flipping the label is incoherent on FORWARD/BACKWARD pairs.
    directional = [i for i, gold in enumerate(golds) if gold in ("FORWARD", "BACKWARD")]
    assert directional
    rows = [
        {"id": item.external_id, "prediction": gold, **({"reversed": gold} if i in directional else {})}
        for i, (item, gold) in enumerate(zip(items, golds))
    ]
    second = evaluate(client, "phrasis-eval", "p.jsonl", jsonl(rows))
    figures = second["figures"]
    assert figures["soft_coherence"]["value"] == 0.0 and figures["hard_coherence"]["value"] == 0.0
    assert figures["accuracy"]["value"] == 1.0
    # Paired: the second is more accurate, the first more coherent (over the pairs both reversed).
    compared = client.get(f"/api/projects/phrasis-eval/evaluations/compare/?a={first['id']}&b={second['id']}").json()
    assert compared["verdict"] == "b_better"
    assert compared["figures"]["accuracy"]["difference"] == pytest.approx(-4 / len(items))
    assert compared["figures"]["soft_coherence"]["difference"] == 1.0


def test_phrase_predictions_refuse_unknown_labels_in_either_direction(make_user, client_for):
    from annotation.models import Evaluation, Item

    project, client = supervisor_client("phrasis-bad", "phrase_pair", "en", make_user, client_for)
    Item.objects.create(
        project=project, external_id="a", split="test", reference_label="FORWARD", payload={"left": "x", "right": "y"}
    )
    Item.objects.create(
        project=project, external_id="b", split="test", reference_label="SIMILAR", payload={"left": "x", "right": "z"}
    )
    text = jsonl([{"id": "a", "prediction": "FORW", "reversed": "SIDEWAYS"}, {"id": "b", "prediction": "similar"}])
    response = client.post(
        "/api/projects/phrasis-bad/evaluations/", {"file": upload("p.jsonl", text), "name": "m"}, format="multipart"
    )
    assert response.status_code == 400
    assert {(e["row"], e["field"]) for e in response.json()["errors"]} == {(1, "reversed"), (2, "prediction")}
    assert not Evaluation.objects.exists()


def test_phrasis_six_scenarios_give_the_papers_weighted_f_score(make_user, client_for):
    """The coherence paper's Table 3 measure: weighted F1 on the positive pairs and on all
    pairs, of the images, the headlines and both sources (the four sample files), each equal
    to scikit-learn's on those pairs; the confusion matrix comes normalised too (appendix A.2)."""
    from annotation.metrics.coherence import LABELS
    from annotation.models import Item

    project, client = supervisor_client("phrasis-tracks", "phrase_pair", "en", make_user, client_for)
    for source in ("images", "headlines"):
        for polarity in ("positives", "negatives"):
            import_sample(client, project, DATA / "phrasis" / f"PhrasIS.train.{source}.{polarity}.txt", "phrasis")
    items = list(Item.objects.filter(project=project).order_by("position", "id"))
    # A model right on every UNRELATED pair that calls every third related pair SIMILAR.
    predicted = {
        item.external_id: "SIMILAR" if i % 3 == 0 and item.reference_label != "UNRELATED" else item.reference_label
        for i, item in enumerate(items)
    }
    text = "id,prediction\n" + "".join(f"{key},{label}\n" for key, label in predicted.items())
    figures = evaluate(client, "phrasis-tracks", "p.csv", text)["figures"]

    def weighted(chosen):
        gold = [item.reference_label for item in chosen]
        guess = [predicted[item.external_id] for item in chosen]
        return f1_score(gold, guess, labels=list(LABELS), average="weighted", zero_division=0)

    assert figures["weighted_f1"]["value"] == pytest.approx(weighted(items))
    for polarity in ("positives", "all"):
        for source in ("images", "headlines", "all"):
            chosen = [
                item
                for item in items
                if source in ("all", item.payload["source"])
                and polarity in ("all", item.payload["phrasis"]["polarity"])
            ]
            figure = figures["tracks"][polarity][source]["weighted_f1"]
            assert figure["value"] == pytest.approx(weighted(chosen)), (polarity, source)
            assert figure["ci_low"] <= figure["value"] <= figure["ci_high"]
    # Positives only are harder here than all pairs (every UNRELATED negative is right).
    tracks = figures["tracks"]
    assert tracks["positives"]["all"]["accuracy"]["value"] < tracks["all"]["all"]["accuracy"]["value"]
    normalized = figures["confusion"]["normalized"]
    counts = figures["confusion"]["matrix"]
    for row, shares in zip(counts, normalized):
        assert sum(shares) == pytest.approx(1.0 if sum(row) else 0.0, abs=1e-5)
        assert shares == [pytest.approx(c / sum(row), abs=1e-6) if sum(row) else 0.0 for c in row]
