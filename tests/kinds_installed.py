"""Installing fewer kinds in a test: `MASHOV_KINDS` without one kind, and the URLconf built
again from what is installed (the URL modules read the registry when they are imported).
Used by the layout test and by the tests of a project whose kind is not installed."""


def reload_urlconf() -> None:
    """Build the URLconf again from the kinds installed now."""
    import importlib

    from django.urls import clear_url_caches

    import annotation.urls
    import api.urls
    import config.urls

    for module in (api.urls, annotation.urls, config.urls):
        importlib.reload(module)
    clear_url_caches()


def kinds_setting_without(name: str) -> list[str]:
    """`MASHOV_KINDS` as it is now, without the kind whose code is `name`."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    return [path for path in settings.MASHOV_KINDS if import_string(path).name != name]


def all_kind_codes() -> list[str]:
    """The codes of the kinds the site's setting installs, in its order (usable at collection)."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    return [import_string(path).name for path in settings.MASHOV_KINDS]
