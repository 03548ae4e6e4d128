"""Content negotiation for endpoints whose `?format=` names a file format, not a renderer."""

from rest_framework.negotiation import DefaultContentNegotiation


class JsonErrorsNegotiation(DefaultContentNegotiation):
    """Always JSON (for error bodies): `?format=` names the export format here, not a DRF
    renderer, so DRF's URL format override must not see it (it would answer 404)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
