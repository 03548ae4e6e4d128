"""Messages computed where no reader is known, put into the reader's language when read.

The Celery worker runs jobs with no request, hence no reader's language: what a job says
(its errors, the reasons in its result, a failed release's reason) is stored in English
with, where the code that wrote it knew them, its message id and parameters
(`stored_message`). The job API and the pages translate it when it is read
(`translated_body`, `translated_text`), in the language of the request. A message stored
as plain English text (by a service's `gettext(...) % params` on the worker, or before
message ids were stored) is matched against the catalog's message ids, its parameters
recovered, so old results are read in Hebrew and Persian too; text that matches nothing
(an exception's own words, a row's content) is shown as stored."""

import re
from functools import lru_cache

from django.utils.translation import get_language, gettext, trans_real

from annotation.wording import join_list

# The keys whose values are sentences for people, in a job's result or error body.
TEXT_KEYS = frozenset({"message", "reason"})
_PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")
# A message id whose fixed words are fewer than this matches too much to be recognised.
_MIN_LETTERS = 8


def stored_message(msgid: str, **params) -> dict:
    """A message for a stored job body: the English text for any reader, and its id and
    parameters for translating it when it is read. Mark `msgid` with gettext_noop."""
    english = msgid % {name: _english(value) for name, value in params.items()} if params else msgid
    return {"message": english, "msgid": msgid, "params": params}


def _english(value):
    return ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else value


def translated_body(body):
    """A stored job result or error with its sentences in the active language; the message
    ids and parameters are dropped (the API's shape stays {"field", "message", "row"})."""
    if isinstance(body, list):
        return [translated_body(value) for value in body]
    if not isinstance(body, dict):
        return body
    out = {}
    for key, value in body.items():
        if key in ("msgid", "params") and "message" in body:
            continue
        if key == "message" and isinstance(body.get("msgid"), str):
            out[key] = _from_id(body["msgid"], body.get("params") or {}, fallback=value)
        elif key in TEXT_KEYS and isinstance(value, str):
            out[key] = translated_text(value)
        else:
            out[key] = translated_body(value)
    return out


def _from_id(msgid: str, params: dict, *, fallback: str) -> str:
    values = {name: _parameter(value) for name, value in params.items()}
    try:
        return gettext(msgid) % values
    except (KeyError, TypeError, ValueError):  # a catalog entry that does not fit: show what was stored
        return fallback


def _parameter(value):
    """A parameter in the active language: a list joined as the language joins lists, a
    sentence or name stored in English translated, a number as it is."""
    if isinstance(value, list | tuple):
        return join_list(translated_text(str(v)) for v in value)
    return translated_text(value) if isinstance(value, str) else value


def translated_text(text: str) -> str:
    """English text stored by the worker, in the active language: an exact message id, or
    one with parameters whose fixed words match; otherwise unchanged."""
    if not text:
        return text
    exact = gettext(text)
    if exact != text:
        return exact
    for pattern, msgid in _patterns(get_language() or ""):
        match = pattern.fullmatch(text)
        if match is not None:
            return _from_id(msgid, match.groupdict(), fallback=text)
    return text


@lru_cache(maxsize=8)
def _patterns(language: str) -> tuple[tuple[re.Pattern, str], ...]:
    """The active language's message ids with parameters, as patterns that recover them;
    the ones with the most fixed words first, so the most specific id wins."""
    catalog = getattr(trans_real.translation(language), "_catalog", None) if language else None
    if catalog is None:
        return ()
    found = []
    for msgid in catalog.keys():
        if not isinstance(msgid, str) or "\x04" in msgid or "%%" in msgid or not _PLACEHOLDER.search(msgid):
            continue
        fixed = _PLACEHOLDER.sub("", msgid)
        letters = sum(ch.isalpha() for ch in fixed)
        if letters < _MIN_LETTERS or "%" in fixed:
            continue
        parts, names, position = [], set(), 0
        for placeholder in _PLACEHOLDER.finditer(msgid):
            parts.append(re.escape(msgid[position : placeholder.start()]))
            name = placeholder.group(1)
            parts.append(f"(?P={name})" if name in names else f"(?P<{name}>.+?)")
            names.add(name)
            position = placeholder.end()
        parts.append(re.escape(msgid[position:]))
        found.append((letters, re.compile("".join(parts), re.DOTALL), msgid))
    found.sort(key=lambda entry: -entry[0])
    return tuple((pattern, msgid) for _, pattern, msgid in found)
