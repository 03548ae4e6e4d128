"""Which tokenizer and stoplist a project's texts are measured with (annotation/text_tools.py):
Hazm's for Persian projects where requirements-persian.txt is installed (the `persian` tests,
run in CI), Mashov's own otherwise; Hazm is imported only when a Persian project asks."""

import subprocess
import sys
from importlib.metadata import version

import pytest

from annotation.metrics import bias
from annotation.text_tools import OWN, text_tools

ZWNJ = "\u200c"


def test_other_languages_get_mashovs_own_tokenizer_and_list():
    for language in ("he", "en"):
        tools = text_tools(language)
        assert tools.name == OWN
        assert tools.tokenizer is bias.reader_tokens
        assert tools.stoplist == bias.stopwords(language)


def test_without_hazm_persian_falls_back_to_mashovs_own(monkeypatch):
    from annotation import text_tools as module

    monkeypatch.setattr(module, "hazm_installed", lambda: False)
    tools = module.text_tools("fa")
    assert (tools.name, tools.tokenizer, tools.stoplist) == (OWN, bias.reader_tokens, bias.stopwords("fa"))


def test_hazm_is_imported_only_for_a_persian_project():
    code = (
        "import os, sys, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings.test'; django.setup(); "
        "from annotation.text_tools import text_tools; import annotation.release.bias; "
        "text_tools('he'); print('hazm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.persian
def test_persian_projects_get_hazms_tokenizer_and_389_word_stoplist():
    import hazm

    tools = text_tools("fa")
    assert tools.name == f"hazm {version('hazm')}" == "hazm 0.10.0"
    listed = hazm.stopwords_list()
    assert len(set(listed)) == 389
    # Folded as tokens are: each word as listed and with Arabic yeh/kaf made Persian.
    assert tools.stoplist == bias.fold_stoplist(listed)
    # Its list holds joined verbs as its tokenizer cuts them.
    assert {"است", "باشد", "آمده_است"} <= tools.stoplist
    # Hazm's cut, not Mashov's: verb parts join into one token; a ZWNJ word stays whole.
    text = f"این کار انجام شده باشد و کتاب{ZWNJ}ها را خواهد برد."
    assert bias.tokens(text, tokenizer=tools.tokenizer) == [
        "این",
        "کار",
        "انجام",
        "شده_باشد",
        "و",
        f"کتاب{ZWNJ}ها",
        "را",
        "خواهد_برد",
        ".",
    ]
    assert "شده_باشد" not in bias.tokens(text)


@pytest.mark.persian
@pytest.mark.django_db
def test_a_persian_projects_bias_analysis_is_measured_with_hazm(nli_project, client_for, django_user_model):
    """The job's PMI words are Hazm's tokens: a hypothesis "… شده باشد" gives the word
    "شده_باشد" and no "باشد"; the result names the tokenizer."""
    from annotation.models import Item, Job
    from annotation.tasks import run_job

    premises = ["کتاب را خواندم", "به خانه رفتم", "نامه را نوشتم", "غذا را پختم"]
    items = []
    for index, premise in enumerate(premises):
        for label, hypothesis in (
            ("entailment", f"{premise} و کار انجام شده باشد"),
            ("contradiction", "هیچ کاری نکردم"),
            ("neutral", "فردا به سفر می‌روم"),
        ):
            items.append(
                Item(
                    project=nli_project,
                    external_id=f"{index}-{label}",
                    position=len(items),
                    payload={"premise": premise, "hypothesis": hypothesis},
                    split="train",
                    gold_label=label,
                    status=Item.Status.ACCEPTED,
                )
            )
    Item.objects.bulk_create(items)
    client = client_for(django_user_model.objects.get(username="sup"))
    response = client.post(f"/api/projects/{nli_project.slug}/bias/", {}, format="json")
    assert response.status_code == 202, response.content
    run_job(response.json()["job"])
    job = Job.objects.get(pk=response.json()["job"])
    assert job.status == "done", job.error
    result = client.get(f"/api/projects/{nli_project.slug}/bias/").json()
    assert result["tokenizer"] == "hazm 0.10.0"
    words = {(row["word"], row["label"]): row for row in result["pmi"]}
    assert words[("شده_باشد", "entailment")]["count"] == 4
    assert not any(row["word"] == "باشد" for row in result["pmi"])


@pytest.mark.persian
@pytest.mark.django_db
def test_with_hazm_the_overlap_model_still_reads_the_words_of_the_text(nli_project, client_for, django_user_model):
    """On the shipped FarsTail samples: Hazm's joined verb parts do not reach the overlap
    model, whose flags are those of the text's words (59 of the 61 published hard(overlap)
    flags; with Hazm's tokens it would be 55)."""
    from annotation.models import Job
    from annotation.tasks import run_job
    from tests.release.bias_setup import farstail_release

    client = client_for(django_user_model.objects.get(username="sup"))
    release = farstail_release(client, nli_project.slug)
    response = client.post(f"/api/projects/{nli_project.slug}/bias/", {}, format="json")
    run_job(response.json()["job"])
    assert Job.objects.get(pk=response.json()["job"]).status == "done"
    result = client.get(f"/api/projects/{nli_project.slug}/bias/").json()
    assert result["tokenizer"] == "hazm 0.10.0"

    def split(items, *, tokenizer):
        pairs = [(i.payload["premise"], i.payload["hypothesis"]) for i in items]
        labels = [i.gold_label for i in items]
        cut = [[bias.tokens(text, fold_letters=True, tokenizer=tokenizer) for text in pair] for pair in pairs]
        return bias.Split([p for p, _ in cut], [h for _, h in cut], labels)

    own = [split(release[name], tokenizer=bias.reader_tokens) for name in ("train", "test")]
    [expected] = bias.overlap_predictions(own[0], [own[1]])
    wanted = bias.hard_flags(own[1].labels, expected)
    for item in release["test"]:
        item.refresh_from_db()
    assert [item.computed["computed_hard(overlap)"] for item in release["test"]] == wanted
    published = [item.payload["extra"]["hard(overlap)"] == "1" for item in release["test"]]
    assert sum(w == p for w, p in zip(wanted, published)) == 59
    hazm = [split(release[name], tokenizer=text_tools("fa").tokenizer) for name in ("train", "test")]
    [joined] = bias.overlap_predictions(hazm[0], [hazm[1]])
    assert sum((j != g) == p for j, g, p in zip(joined, hazm[1].labels, published)) == 55
