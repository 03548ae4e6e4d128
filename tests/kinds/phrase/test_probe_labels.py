"""Which pairs become reversed probes, and what the progress bar says about them, through
the HTTP API (fine-grained-nli-coherence §5: only EQUIVALENT, FORWARD and BACKWARD pairs are
duplicated in reversed order). An annotator recognises a probe only by its phrases, so
neither the total of `GET /progress/` nor the bar the page draws from it may move when one
is handed out."""

import io
import json

import pytest

pytestmark = pytest.mark.django_db

LABELS = ["EQUIVALENT", "FORWARD", "BACKWARD", "OPPOSITION", "SIMILAR", "RELATED", "UNRELATED"]
PAPER_PROBE_LABELS = ["EQUIVALENT", "FORWARD", "BACKWARD"]
REVERSE = {"FORWARD": "BACKWARD", "BACKWARD": "FORWARD"}


def create_project(client, slug: str, settings: dict):
    return client.post(
        "/api/projects/",
        {"slug": slug, "name": slug, "kind": "phrase_pair", "language": "en", "settings": settings},
        format="json",
    )


@pytest.fixture
def project_with(make_user, client_for):
    """A project of `items` made-up pairs (one label each) with one annotator; returns the
    annotator's client."""
    from annotation.models import Membership, Project

    counter = {"n": 0}

    def make(items: int, **settings):
        counter["n"] += 1
        slug = f"probe-labels-{counter['n']}"
        admin = client_for(make_user(f"admin{counter['n']}", staff=True))
        made = create_project(admin, slug, {"labels_per_item": 1, **settings})
        assert made.status_code == 201, made.content
        rows = "".join(
            json.dumps({"id": f"pair{i}", "left": f"left phrase {i}", "right": f"right phrase {i}", "source": "images"})
            + "\n"
            for i in range(items)
        )
        upload = io.BytesIO(rows.encode("utf-8"))
        upload.name = "pairs.jsonl"
        imported = admin.post(f"/api/projects/{slug}/import/", {"file": upload, "format": "jsonl"}, format="multipart")
        assert imported.status_code == 201, imported.content
        annotator = make_user(f"annotator{counter['n']}")
        Membership.objects.create(
            project=Project.objects.get(slug=slug), user=annotator, role="annotator", status="active"
        )
        return slug, client_for(annotator)

    return make


def label_for(external_id: str) -> str:
    """The annotator's label for an original pair: every one of the seven, in turn."""
    return LABELS[int(external_id.removeprefix("pair")) % len(LABELS)]


def walk(client, slug: str, limit: int = 1000) -> list[dict]:
    """next → submit until 204. Per step: the id shown, whether it was seen before (a probe:
    it shows its original's id), the label the annotator had given the original, and the
    progress read after `next` (the page adds the item on screen) and after the submit."""
    seen: dict[str, str] = {}
    steps = []
    for _ in range(limit):
        got = client.get(f"/api/projects/{slug}/next/")
        shown = client.get(f"/api/projects/{slug}/progress/").json()
        if got.status_code == 204:
            steps.append({"end": shown})
            return steps
        assert got.status_code == 200, got.content
        body = got.json()
        external_id = body["item"]["external_id"]
        probe = external_id in seen
        label = REVERSE.get(seen[external_id], seen[external_id]) if probe else label_for(external_id)
        submitted = client.post(
            f"/api/assignments/{body['assignment']}/submit/", {"value": {"label": label}}, format="json"
        )
        assert submitted.status_code == 201, submitted.content
        after = client.get(f"/api/projects/{slug}/progress/").json()
        steps.append(
            {"id": external_id, "probe": probe, "original_label": seen.get(external_id), "shown": shown, "after": after}
        )
        seen.setdefault(external_id, label)
    raise AssertionError("the queue never ran dry")


@pytest.mark.parametrize(
    ("setting", "allowed"),
    [({}, PAPER_PROBE_LABELS), ({"probe_labels": ["FORWARD"]}, ["FORWARD"])],
)
def test_probes_are_reversals_of_pairs_labeled_with_a_listed_label(project_with, setting, allowed):
    slug, client = project_with(42, probe_rate=0.5, probe_seed=5, **setting)
    steps = walk(client, slug)
    probes = [step for step in steps if step.get("probe")]
    # 42 pairs, 6 of each label: enough FORWARD pairs for several probes even when they alone count.
    assert len(probes) >= 4, len(probes)
    assert {step["original_label"] for step in probes} <= set(allowed)
    assert len([step for step in steps if "id" in step and not step["probe"]]) == 42


@pytest.mark.parametrize("rate", [0.5, 0.2])
def test_progress_total_never_grows_and_done_counts_every_submit(project_with, rate):
    """The page draws `done / (done + remaining + 1)` while an item is on screen and
    `done / (done + remaining)` otherwise: both totals, read in walking order, never grow,
    `done` grows by one per submit (probes too), and at the end the bar is full."""
    slug, client = project_with(35, probe_rate=rate, probe_seed=9)
    start = client.get(f"/api/projects/{slug}/progress/").json()
    steps = walk(client, slug)
    assert any(step.get("probe") for step in steps)
    totals = [start["done"] + start["remaining"]]
    done = start["done"]
    for step in steps[:-1]:
        totals.append(step["shown"]["done"] + step["shown"]["remaining"] + 1)
        assert step["shown"]["done"] == done
        done += 1
        assert step["after"]["done"] == done
        totals.append(step["after"]["done"] + step["after"]["remaining"])
    end = steps[-1]["end"]
    totals.append(end["done"] + end["remaining"])
    assert all(later <= earlier for earlier, later in zip(totals, totals[1:])), totals
    assert end == {"done": len(steps) - 1, "remaining": 0}


def test_probe_labels_setting_is_checked(make_user, client_for):
    from annotation.models import Project

    client = client_for(make_user("root", staff=True))
    made = create_project(client, "defaults", {})
    assert made.status_code == 201, made.content
    assert made.json()["settings"]["probe_labels"] == PAPER_PROBE_LABELS
    narrowed = create_project(client, "narrowed", {"probe_labels": ["BACKWARD", "FORWARD"]})
    assert narrowed.status_code == 201, narrowed.content
    assert narrowed.json()["settings"]["probe_labels"] == ["BACKWARD", "FORWARD"]
    for value in (
        ["SIMILAR"],
        ["FORWARD", "UNRELATED"],
        ["forward"],
        [],
        ["FORWARD", "FORWARD"],
        [1],
        [["FORWARD"]],
        "FORWARD",
    ):
        response = create_project(client, "bad", {"probe_labels": value})
        assert response.status_code == 400, value
        assert [error["field"] for error in response.json()["errors"]] == ["settings.probe_labels"], value
    assert not Project.objects.filter(slug="bad").exists()
