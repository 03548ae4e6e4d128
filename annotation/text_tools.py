"""The tokenizer and stoplist a project's texts are measured with (bias analysis, release
statistics): Hazm's word tokenizer and its 389-word stoplist for Persian projects where the
optional requirements-persian.txt is installed — FarsTail's Tables 2 and 4 were computed
with them —, else Mashov's own tokenizer and the shipped stopwords-iso list
(annotation/metrics/bias.py). annotation/metrics/ never imports Hazm: it takes the tokenizer
as an argument.

Hazm is imported on first use, and only for a Persian project: importing it loads nltk,
gensim and fastText (its package imports every module), which other projects do not need."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version

from annotation.metrics import bias

HAZM_LANGUAGE = "fa"
OWN = "mashov"


@dataclass(frozen=True)
class TextTools:
    name: str  # "hazm <version>" or "mashov": what the result says it was measured with
    tokenizer: bias.Tokenizer
    stoplist: frozenset[str]


def hazm_installed() -> bool:
    return importlib.util.find_spec("hazm") is not None


@cache
def _hazm() -> TextTools:
    import hazm

    # The defaults, as the paper's tokenizer: verb parts join ("شده_باشد" is one token).
    tokenizer = hazm.WordTokenizer()
    return TextTools(f"hazm {version('hazm')}", tokenizer.tokenize, bias.fold_stoplist(hazm.stopwords_list()))


def text_tools(language: str) -> TextTools:
    """Hazm's tools for a Persian project where they are installed, else Mashov's own."""
    if language == HAZM_LANGUAGE and hazm_installed():
        return _hazm()
    return TextTools(OWN, bias.reader_tokens, bias.stopwords(language))
