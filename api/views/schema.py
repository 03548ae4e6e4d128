"""The OpenAPI schema, built and rendered once per process, language, version and format.

It changes only with the code, and building it walks every view and serializer: built per
request, it left each web worker about 10 MiB larger. The web master renders the default
language's copy before it forks (config/preload.py), so the workers share those bytes."""

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponse
from django.utils import translation
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView

_rendered: dict[tuple, bytes] = {}


def rendered_schema(renderer, media_type: str, version: str | None = None) -> bytes:
    """The public schema (every endpoint, whoever asks) in the active language, rendered."""
    key = (translation.get_language(), version, type(renderer), media_type)
    if key not in _rendered:
        schema = SchemaGenerator(api_version=version).get_schema(request=None, public=True)
        _rendered[key] = renderer.render(schema, media_type, {})
    return _rendered[key]


@receiver(setting_changed)
def _forget_on_settings_change(**_kwargs) -> None:
    # Only tests change settings in a running process; the URLconf or a kind's installation
    # may change the schema.
    _rendered.clear()


def prerender_default_schema() -> None:
    renderer = OpenApiYamlRenderer()
    rendered_schema(renderer, renderer.media_type)


class SchemaView(SpectacularAPIView):
    def _get_schema_response(self, request):
        version = self.api_version or request.version or self._get_version_parameter(request)
        renderer, media_type = request.accepted_renderer, request.accepted_media_type
        response = HttpResponse(
            rendered_schema(renderer, media_type, version),
            content_type=f"{media_type}; charset={renderer.charset}" if renderer.charset else media_type,
        )
        response["Content-Disposition"] = f'inline; filename="{self._get_filename(request, version)}"'
        return response
