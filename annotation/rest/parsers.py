"""Strict request parsers: bodies PostgreSQL can store, or a 400 naming the field."""

from dataclasses import replace

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from annotation import safe_json
from annotation.errors import InvalidInput, PayloadTooLarge
from annotation.metrics.text import first_forbidden_string, forbidden_character
from annotation.wording import fault_text


class StrictJSONParser(JSONParser):
    """JSON that PostgreSQL can store, read through annotation.safe_json (no NaN/Infinity,
    bounded nesting) from at most MASHOV_MAX_BODY_BYTES: NUL characters and lone surrogates
    (legal in JSON escapes, illegal in UTF-8 text) are refused with a 400 naming the field."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.MASHOV_MAX_BODY_BYTES
        # RequestLimitsMiddleware has refused a longer Content-Length; reading one byte past
        # the limit catches a body that arrives without one.
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(_("the body is larger than %(n)s bytes") % {"n": limit}, field="body")
        try:
            data = safe_json.loads(raw.decode("utf-8")) if raw else {}
        except UnicodeDecodeError:
            raise InvalidInput(_("is not valid UTF-8"), field="body") from None
        except ValueError as exc:
            raise InvalidInput(str(exc), field="body") from None
        found = first_forbidden_string(data, "")
        if found:
            raise InvalidInput(fault_text(found[1]), field=found[0] or "body")
        return data


def refuse_forbidden_form_fields(fields) -> None:
    """The JSON parser's rule for form fields (a QueryDict of values or of uploads; of
    uploads only the field names are text): a NUL character, which PostgreSQL can neither
    store nor look up, is a 400 naming the field. Django decodes form text with replacement
    characters, so it holds no lone surrogates."""
    for name in fields:
        reason = forbidden_character(name)
        if reason:
            raise InvalidInput(fault_text(replace(reason, in_key=True)), field="<key>")
        for value in fields.getlist(name):
            reason = forbidden_character(value) if isinstance(value, str) else None
            if reason:
                raise InvalidInput(fault_text(reason), field=name)


class StrictFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        refuse_forbidden_form_fields(data)
        return data


class StrictMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        refuse_forbidden_form_fields(parsed.data)
        refuse_forbidden_form_fields(parsed.files)
        return parsed


def body_of(request) -> dict:
    """The parsed body, which must be a JSON object (a 400 naming `body` otherwise)."""
    if not isinstance(request.data, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    return request.data
