"""The guide an annotate page shows (annotation.guides), read for one project."""

from annotation.guides import guide_with_overrides, markdown_render
from annotation.kinds.registry import get_kind


def guide_for_project(project) -> dict:
    """What the annotate page's guide shows for `project`, in the active language: its
    guidelines as safe HTML and its kind's label guide with the project's rewordings."""
    kind = get_kind(project.kind)
    return {
        "html": markdown_render(project.guidelines) if project.guidelines else "",
        "sections": guide_with_overrides(kind.label_guide(None, project.settings), project.label_guide),
    }
