"""hspell, Debian's Hebrew spell checker and morphological analyser (the `hspell` package,
1.4), as the analyser of HeSum Table 1's morphology columns
(annotation/metrics/hebrew_morphology.py says what is counted and how).

Optional, like Hazm for Persian (annotation/text_tools.py): the figures are computed where
`hspell` is on the worker's PATH and are None elsewhere, with the report naming the analyser
it used or none. One `hspell -l` process per batch of new words (words through stdin,
ISO-8859-8, the only encoding hspell reads); every word's analysis is kept for the rest of
the run, so a corpus's frequent words are analysed once."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache

from annotation.metrics.hebrew_morphology import WordReadings, parse_hspell, word_readings

EXECUTABLE = "hspell"
ENCODING = "iso-8859-8"
# Generous: 100,000 words take well under a second.
TIMEOUT_SECONDS = 600


@cache
def _version(path: str) -> str:
    # `hspell -V` prints "Hspell 1.4" on its first line.
    first = subprocess.run([path, "-V"], capture_output=True, timeout=60, check=True).stdout.decode().splitlines()
    return first[0].split()[-1] if first and first[0].split() else "unknown"


class Hspell:
    """hspell's analyses of words, run in batches and kept per word."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = f"hspell {_version(path)}"
        self._analyses: dict[str, WordReadings] = {}

    def analyse(self, words: Iterable[str]) -> Mapping[str, WordReadings]:
        """The analyses of `words` (Hebrew words as hebrew_words gives them), running hspell
        once for those not analysed before; the mapping returned holds every word analysed
        so far."""
        new = sorted({word for word in words if word not in self._analyses})
        if new:
            completed = subprocess.run(
                [self.path, "-l"],
                input="\n".join(new).encode(ENCODING) + b"\n",
                capture_output=True,
                timeout=TIMEOUT_SECONDS,
                check=True,
            )
            parsed = parse_hspell(completed.stdout.decode(ENCODING))
            for word in new:
                self._analyses[word] = word_readings(word, parsed.get(word, []))
        return self._analyses


def hspell_or_none() -> Hspell | None:
    """An analyser where hspell is on the PATH, else None."""
    path = shutil.which(EXECUTABLE)
    return Hspell(path) if path else None
