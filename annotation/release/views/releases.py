"""The Releases page (/p/<slug>/releases/): the project's releases, newest first, each with
its status, files and checksums, a download link and its dataset card rendered (the YAML
header the Hub reads is shown as it is, the body as markdown). Supervisors only."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.guides import markdown_render
from annotation.release import publish


def card_parts(card: str) -> tuple[str, str]:
    """(YAML header, markdown body) of a dataset card; an empty header when it has none."""
    if card.startswith("---\n"):
        end = card.find("\n---\n", 4)
        if end != -1:
            return card[4:end], card[end + 5 :]
    return "", card


@login_required
@require_GET
def releases(request, slug):
    project, rows = publish.releases_for_project(user=request.user, slug=slug)
    shown = []
    for release in rows.select_related("created_by"):
        header, body = card_parts(release.card)
        shown.append({"release": release, "header": header, "body": markdown_render(body)})
    return render(request, "release/releases.html", {"project": project, "releases": shown})
