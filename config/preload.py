"""What a web master loads before it forks its workers (config/gunicorn.py): everything a
request would otherwise load once per worker, on its first call, and then keep — the view
modules behind the URLconf, the compiled templates, the translation catalogs, what the API
schema, rendered. Loaded here, their pages are shared by all workers (copy-on-write), and
serving a page for the first time leaves a worker's memory near where it was. Nothing here
opens a database or broker connection (tests/test_startup_memory.py)."""

import codecs
import pkgutil
from importlib import import_module
from pathlib import Path


def warm_web() -> None:
    from django.conf import settings
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
    from django.urls import get_resolver
    from django.utils import formats, translation
    from django.utils.module_loading import import_string

    from api.views.schema import prerender_default_schema

    # The static files' storage (lazy: the first attribute read builds it), and with the
    # manifest storage its manifest, read once.
    staticfiles_storage.base_url  # noqa: B018
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            translation.gettext("")
            # Imports every view module and builds the resolver's lookup tables (per language).
            get_resolver().reverse_dict  # noqa: B018
            formats.get_format("DATE_FORMAT")
    for status in (400, 403, 404, 500):
        get_resolver().resolve_error_handler(status)
    # What the middleware imports on its first request: the messages' storage, the sessions'.
    import_string(settings.MESSAGE_STORAGE)
    import django.contrib.sessions.exceptions  # noqa: F401

    # DRF imports its exception handler on the first error it answers (a 400, a 405).
    from rest_framework.settings import api_settings

    api_settings.EXCEPTION_HANDLER  # noqa: B018
    # Django's log of a 4xx answer escapes the path with this codec, looked up on first use.
    codecs.lookup("unicode_escape")
    import_kind_modules()

    for engine in engines.all():
        backend = getattr(engine, "engine", None)
        if backend is None:
            continue
        backend.template_context_processors  # noqa: B018 (imported on the first render)
        for folder in template_folders(backend):
            for path in sorted(folder.rglob("*.html")):
                try:
                    backend.get_template(path.relative_to(folder).as_posix())
                except (TemplateDoesNotExist, TemplateSyntaxError):
                    # A library's template for a feature whose tag library is not installed
                    # here (so never rendered either).
                    continue
    with translation.override(settings.LANGUAGE_CODE):
        prerender_default_schema()


def import_kind_modules() -> None:
    """Every module of the installed kinds' packages. A kind imports some of its modules
    where it uses them (its report sections, its project links, its evaluation), and the
    project page or an API view would otherwise import them in each worker on its first
    call; none of them loads a heavy library (tests/test_startup_memory.py)."""
    from annotation.kinds import registry

    for kind in registry.installed_kinds():
        package = type(kind).__module__.rpartition(".")[0]
        if package == registry.__package__:
            continue  # a kind in a module of its own, beside the core's: not the other kinds'
        for module in pkgutil.walk_packages(import_module(package).__path__, f"{package}."):
            import_module(module.name)


def template_folders(engine) -> list[Path]:
    """The engine's template folders: the project's and the installed apps'."""
    from django.template.utils import get_app_template_dirs

    folders = [Path(d) for d in engine.dirs]
    if engine.app_dirs:
        folders += [Path(d) for d in get_app_template_dirs("templates")]
    return folders
