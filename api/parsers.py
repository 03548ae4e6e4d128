import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.errors import InvalidInput
from annotation.metrics.text import first_forbidden_string


class StrictJSONParser(JSONParser):
    """JSON that PostgreSQL can store: NUL characters and lone surrogates (legal in JSON
    escapes, illegal in UTF-8 text) are refused with a 400 naming the field."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            raw = stream.read() if stream is not None else b""
            data = json.loads(raw.decode("utf-8")) if raw else {}
        except UnicodeDecodeError:
            raise ParseError("The body is not valid UTF-8.") from None
        except ValueError as exc:
            raise ParseError(f"The body is not valid JSON: {exc}") from None
        found = first_forbidden_string(data, "")
        if found:
            raise InvalidInput(found[1], field=found[0] or "body")
        return data
