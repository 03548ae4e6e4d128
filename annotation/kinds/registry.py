"""The installed workflow kinds, and what the core asks of them.

The kinds a site offers are listed in the `MASHOV_KINDS` setting, each by the dotted path of
its Kind class, and imported on first use, so that the core (models, services, selectors,
tasks, URLs, templates) reaches a kind through this module without importing or naming any
particular kind: the kinds import the core, never the other way round. Adding a kind is one
folder under kinds/ and one line in the setting; its URL modules, job handlers, project
links and report keys are read from what its class declares."""

from functools import cache
from importlib import import_module

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from django.utils.translation import gettext

from annotation.errors import InvalidInput, KindNotInstalled
from annotation.wording import join_list

from .base import Kind


@cache
def _kinds() -> dict[str, Kind]:
    """Kind name → instance, in the order of `MASHOV_KINDS`."""
    kinds: dict[str, Kind] = {}
    for path in settings.MASHOV_KINDS:
        kind = import_string(path)()
        if not kind.name:
            raise RuntimeError(f"{path} has no name")
        if kind.name in kinds:
            raise RuntimeError(f"{path} names itself {kind.name!r}, as {type(kinds[kind.name]).__name__} does")
        kinds[kind.name] = kind
    return kinds


@receiver(setting_changed)
def _forget_kinds(*, setting, **kwargs) -> None:
    """A test that changes `MASHOV_KINDS` gets the kinds it names."""
    if setting == "MASHOV_KINDS":
        _kinds.cache_clear()


def get_kind(name: str) -> Kind:
    """The installed kind `name`; KindNotInstalled (a 409, and a KeyError) when it is not."""
    kind = _kinds().get(name)
    if kind is None:
        raise KindNotInstalled(name)
    return kind


def require_installed_kind(project) -> None:
    """Refuse (KindNotInstalled) a project whose kind the site does not install: the gate the
    access layer puts before every page and operation of a project."""
    if project.kind not in _kinds():
        raise KindNotInstalled(project.kind)


def available_kinds() -> tuple[str, ...]:
    """The names of the installed kinds, in the order of `MASHOV_KINDS`."""
    return tuple(_kinds())


def installed_kinds() -> list[Kind]:
    """The installed kinds, in the order of `MASHOV_KINDS`."""
    return list(_kinds().values())


def kind_for_new_project(name) -> Kind:
    if not isinstance(name, str) or name not in _kinds():
        # Named as people know them; the codes are in the kind select and the API's schema.
        raise InvalidInput(
            gettext("is not a kind this site offers; it offers: %(kinds)s")
            % {"kinds": join_list(str(kind.short_title) for kind in _kinds().values())},
            field="kind",
        )
    return get_kind(name)


def kind_title(name: str) -> str:
    """A kind's name for people (its `short_title`) in messages; a kind that is not installed
    is named by its code, the only name it has here."""
    kind = _kinds().get(name)
    return str(kind.short_title) if kind is not None else name


def installed_kind(name: str) -> Kind | None:
    """The kind `name` if it is installed, else None."""
    return _kinds().get(name)


def kinds_aggregating_by_consensus() -> list[str]:
    return [name for name, kind in _kinds().items() if kind.aggregates_by_consensus]


def _declared_once(attribute: str) -> list[str]:
    """The distinct dotted names the kinds declare in `attribute`, in registry order (two
    kinds may share a module: label_test's results page lives with translation's)."""
    seen: list[str] = []
    for kind in _kinds().values():
        for module in getattr(kind, attribute):
            if module not in seen:
                seen.append(module)
    return seen


def kind_report_keys() -> dict[str, str]:
    """Keys the installed kinds add to the project report → "<kind>: what it holds"."""
    keys: dict[str, str] = {}
    for kind in _kinds().values():
        for key, help_text in kind.report_keys.items():
            keys.setdefault(key, f"{kind.name}: {help_text}")
    return keys


def recompute_pages() -> list[str]:
    """URL names of the kinds' results pages that carry the "Recompute agreement" button."""
    return _declared_once("recompute_pages")


def url_modules() -> list[str]:
    """The kinds' URL modules: their `urlpatterns` (pages) are mounted at the site's root."""
    return _declared_once("urls")


def api_url_patterns() -> list[list]:
    """The `api_urlpatterns` (API operations) of the kinds' URL modules that have them,
    mounted under /api/."""
    modules = [import_module(name) for name in _declared_once("urls")]
    return [module.api_urlpatterns for module in modules if hasattr(module, "api_urlpatterns")]


def job_titles() -> dict:
    """Job kind → its name for people, for the jobs the kinds define."""
    return {job_kind: title for kind in _kinds().values() for job_kind, title in kind.job_titles.items()}


def job_handlers() -> dict[str, str]:
    """Job kind → dotted path of the function that runs it, for the jobs the kinds define."""
    handlers: dict[str, str] = {}
    for kind in _kinds().values():
        for job_kind, path in kind.job_handlers.items():
            if handlers.setdefault(job_kind, path) != path:
                raise RuntimeError(f"job kind {job_kind!r} has two handlers: {handlers[job_kind]} and {path}")
    return handlers
