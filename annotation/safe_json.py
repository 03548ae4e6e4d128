"""JSON from outside — API bodies, JSONL rows, JSON columns of CSV files — parsed into
values that the rest of Mashov can walk and PostgreSQL can store.

Two things the standard library accepts are refused here:
- nesting deeper than MAX_DEPTH: json.loads itself stops near 1,000 levels with a
  RecursionError, and every recursive walk after it (validation, serialisation) can stop
  earlier; no record of ours nests more than a few levels;
- NaN, Infinity and -Infinity: not JSON (RFC 8259 §6), and PostgreSQL's jsonb refuses them;
  nor a number too large for a float (1e400), which Python would read as Infinity.
"""

import json
import math
from typing import Any

from django.utils.translation import gettext as _

MAX_DEPTH = 64


class UnsafeJSON(ValueError):
    """The text is not JSON, or is JSON that Mashov does not take; str() says why."""


def _refuse_constant(name: str):
    raise UnsafeJSON(_("%(name)s is not a JSON number") % {"name": name})


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e400: valid JSON that no float holds; Python would read it as Infinity.
        raise UnsafeJSON(_("%(number)s is beyond the range of a float") % {"number": text[:20]})
    return value


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Depth of nested lists and objects (a scalar is 0, `[]` is 1), counted without
    recursion; stops counting at limit + 1."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads, refusing NaN/Infinity and nesting deeper than max_depth with UnsafeJSON
    (a ValueError, as json.JSONDecodeError is).

    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads('[NaN]')
    Traceback (most recent call last):
    ...
    annotation.safe_json.UnsafeJSON: NaN is not a JSON number
    """
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):
            value = _DECODER.decode(text)  # json.loads, without building a decoder per call
        else:
            value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise UnsafeJSON(_("nests deeper than %(levels)s levels") % {"levels": max_depth}) from None
    except UnsafeJSON:
        raise
    except json.JSONDecodeError as exc:
        # The parser's own words ("Expecting value") are English only: the place is what helps.
        raise UnsafeJSON(
            _("is not valid JSON (line %(line)s, column %(column)s)") % {"line": exc.lineno, "column": exc.colno}
        ) from None
    except ValueError:
        # int() refuses a literal of more than sys.get_int_max_str_digits() digits.
        raise UnsafeJSON(_("holds an integer with too many digits")) from None
    # A text with no more brackets than max_depth cannot nest deeper (most import rows):
    # two counts at C speed instead of the walk.
    if _brackets(text) > max_depth and nesting_depth(value, max_depth) > max_depth:
        raise UnsafeJSON(_("nests deeper than %(levels)s levels") % {"levels": max_depth})
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def _brackets(text: str | bytes) -> int:
    """How many `{` and `[` the text holds: a bound on how deep its value nests."""
    if isinstance(text, str):
        return text.count("{") + text.count("[")
    return text.count(b"{") + text.count(b"[")
