import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.errors import InvalidInput
from annotation.metrics.text import forbidden_character


def _first_bad_string(value, path: str) -> tuple[str, str] | None:
    if isinstance(value, str):
        reason = forbidden_character(value)
        return (path or "body", reason) if reason else None
    if isinstance(value, dict):
        for key, inner in value.items():
            if forbidden_character(key):
                # The key itself cannot be echoed back (a lone surrogate cannot be encoded).
                reason = forbidden_character(key).replace("position", "key position")
                return (f"{path}.<key>" if path else "<key>", reason)
            child = f"{path}.{key}" if path else str(key)
            found = _first_bad_string(inner, child)
            if found:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = _first_bad_string(inner, f"{path}[{index}]")
            if found:
                return found
    return None


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
        found = _first_bad_string(data, "")
        if found:
            raise InvalidInput(found[1], field=found[0])
        return data
