"""What a web master loads before it forks its workers (config/gunicorn.py): everything a
request would otherwise load once per worker, on its first call, and then keep — the view
modules behind the URLconf, the compiled templates, the translation catalogs. Loaded here,
their pages are shared by all workers (copy-on-write), and serving a page for the first
time leaves a worker's memory where it was. Nothing here opens a database or broker
connection."""

from pathlib import Path


def warm_web() -> None:
    from django.conf import settings
    from django.template import engines
    from django.urls import get_resolver
    from django.utils import translation

    # Imports every view module and builds the resolver's lookup tables.
    get_resolver()._populate()
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            translation.gettext("")
    root = Path(settings.BASE_DIR).resolve()
    for engine in engines.all():
        backend = getattr(engine, "engine", None)
        if backend is None:
            continue
        for folder in template_folders(backend, root):
            for path in sorted(folder.rglob("*.html")):
                backend.get_template(path.relative_to(folder).as_posix())


def template_folders(engine, root: Path) -> list[Path]:
    """The engine's template folders that belong to the project (not Django's or a library's)."""
    from django.template.utils import get_app_template_dirs

    folders = [Path(d) for d in engine.dirs]
    if engine.app_dirs:
        folders += [Path(d) for d in get_app_template_dirs("templates")]
    return [folder.resolve() for folder in folders if folder.resolve().is_relative_to(root)]
