"""An uploaded file's text, read line by line rather than decoded whole.

An import of a million rows is a file of hundreds of megabytes; its decoded text took as
much again (Hebrew and Persian are two bytes a character in a Python string, and more
than the file's UTF-8). `UploadText` reads the file (the upload's temporary file, the
bytes of a request, or an import job's stored input) in slices, decodes them as it goes
and hands the readers one line at a time. One pass over the bytes comes first
(`UploadText.checked`): it refuses a file in another encoding before any row is read,
as a whole file decoded at once did, and counts what the import needs to know
beforehand (how many rows at most, whether a string may hold a NUL or a lone surrogate).
Imports no kind and no service: the readers in `annotation/rows.py` build on it."""

import codecs
import io
from collections.abc import Iterator
from typing import NoReturn, Protocol

from django.utils.translation import gettext as _

from annotation.errors import InvalidInput

# The slice of the file read at a time: large enough for the decoder and the line
# splitting to run at C speed, small beside the file.
READ_BYTES = 1 << 20
UTF16_SAMPLE_BYTES = 65536


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...


class _SliceReader(io.RawIOBase):
    """A raw binary stream over an upload: the slices of a bytes-like object (no copy of
    it), or what an open file's `read` gives. Closing it leaves the upload open."""

    def __init__(self, source: "memoryview | Readable"):
        self._source, self._at = source, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if isinstance(self._source, memoryview):
            piece: bytes | memoryview = self._source[self._at : self._at + len(buffer)]
        else:
            piece = self._source.read(len(buffer))
        size = len(piece)
        buffer[:size] = piece
        self._at += size
        return size


class UploadText:
    """The UTF-8 text of an uploaded file, read from `source` (bytes, a memoryview, or an
    open binary file such as Django's upload) each time it is asked for, never held whole.
    A leading BOM is dropped (it marks the encoding, it is not content). Build it with
    `checked`, which refuses a file that is not UTF-8."""

    def __init__(self, source: "bytes | bytearray | memoryview | Readable"):
        self._source: memoryview | Readable = (
            memoryview(source).cast("B") if isinstance(source, (bytes, bytearray, memoryview)) else source
        )
        self.size = self._size()
        self.rows_bound = 0
        self.may_hold_unstorable_text = True

    @classmethod
    def checked(cls, source: "bytes | bytearray | memoryview | Readable") -> "UploadText":
        """The upload's text after one pass over its bytes, which raises InvalidInput (for
        the field `file`) when it is not UTF-8 and notes `rows_bound` (at least the
        number of records, whatever the line ends: CRLF, LF, or CR alone as old Mac files
        have, all of which csv reads as line ends) and `may_hold_unstorable_text`
        (a NUL or a JSON \\u escape somewhere: see metrics.text.may_hold_unstorable_text)."""
        upload = cls(source)
        upload.check()
        return upload

    def _size(self) -> int:
        if isinstance(self._source, memoryview):
            return len(self._source)
        size = getattr(self._source, "size", None)  # Django's uploads know theirs
        if size is None:
            size = self._source.seek(0, io.SEEK_END)
            self._source.seek(0)
        return size

    def _binary(self) -> io.BufferedReader:
        if not isinstance(self._source, memoryview):
            self._source.seek(0)
        return io.BufferedReader(_SliceReader(self._source), buffer_size=READ_BYTES)

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes, READ_BYTES at a time (the last slice shorter)."""
        with self._binary() as binary:
            while chunk := binary.read(READ_BYTES):
                yield chunk

    def bytes(self) -> bytes:
        """The whole file, for storing it (an import job's input)."""
        if isinstance(self._source, memoryview):
            return self._source.tobytes()
        return b"".join(self.chunks())

    def lines(self, newline: str) -> Iterator[str]:
        """The text's lines, each with its line end. `newline` as for open(): "\\n" ends
        lines at LF only (JSONL: a JSON string may hold U+2028, which str.splitlines would
        break at), "" at CRLF, LF or CR alone (csv's reading)."""
        with io.TextIOWrapper(self._binary(), encoding="utf-8-sig", newline=newline) as text:
            text._CHUNK_SIZE = READ_BYTES  # type: ignore[attr-defined]  # its reads (8 KiB by default)
            yield from text

    def read(self) -> str:
        """The whole text, for the formats that are one document (SQuAD's JSON)."""
        with io.TextIOWrapper(self._binary(), encoding="utf-8-sig", newline="") as text:
            return text.read()

    def check(self) -> None:
        """`checked`'s pass over the bytes, on an upload already made."""
        decode = codecs.utf_8_decode
        pending = b""
        offset = newlines = ends = 0
        last = b""  # the previous slice's last byte
        unstorable = False
        size = 0
        with self._binary() as binary:
            head = binary.read(UTF16_SAMPLE_BYTES)
        refuse_utf16(head)
        bom = head.startswith(codecs.BOM_UTF8)
        for chunk in self.chunks():
            size += len(chunk)
            ends += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
            if last == b"\r" and chunk.startswith(b"\n"):
                ends -= 1
            if not unstorable:
                unstorable = b"\x00" in chunk or b"\\u" in chunk or (last == b"\\" and chunk.startswith(b"u"))
            buffer = pending + chunk
            try:
                _text, used = decode(buffer, "strict", False)
            except UnicodeDecodeError as exc:
                refuse_not_utf8(newlines + buffer.count(b"\n", 0, exc.start) + 1, offset + exc.start)
            newlines += buffer.count(b"\n", 0, used)
            offset += used
            pending = buffer[used:]
            last = chunk[-1:]
        if pending:
            # The file ends inside a character.
            try:
                decode(pending, "strict", True)
            except UnicodeDecodeError as exc:
                refuse_not_utf8(newlines + pending.count(b"\n", 0, exc.start) + 1, offset + exc.start)
        empty = size == (len(codecs.BOM_UTF8) if bom else 0)
        self.size = size
        self.rows_bound = ends + (0 if empty or last in (b"\n", b"\r") else 1)
        self.may_hold_unstorable_text = unstorable


FileText = str | UploadText


def whole_text(text: FileText) -> str:
    """The whole text of a file given whole or as an upload: for formats that are one
    document (SQuAD's JSON), which are read whole either way."""
    return text if isinstance(text, str) else text.read()


def text_lines(text: FileText, newline: str) -> Iterator[str]:
    """The lines of a text given whole or as an upload, each with its line end
    (`UploadText.lines`)."""
    if isinstance(text, str):
        return iter(io.StringIO(text, newline=newline))
    return text.lines(newline)


def refuse_utf16(data: bytes) -> None:
    """A 400 for a UTF-16 file, with or without its byte-order mark (`data`: the file's
    first bytes, at least UTF16_SAMPLE_BYTES of them unless the file is shorter)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InvalidInput(_("the file is UTF-16; save it as UTF-8"), field="file")
    endian = utf16_without_bom(data)
    if endian:
        raise InvalidInput(
            _("the file is UTF-16 (%(endian)s-endian) without a byte-order mark; save it as UTF-8")
            % {"endian": endian},
            field="file",
        )


def refuse_not_utf8(line: int, byte: int) -> NoReturn:
    """A 400 for a file that is not UTF-8, naming the line and the byte where it stops
    being so."""
    raise InvalidInput(
        _(
            "the file is not valid UTF-8 (line %(line)s, byte %(byte)s); save it as UTF-8"
            " (it may be in a legacy encoding such as Windows-1256 or ISO-8859-8)"
        )
        % {"line": line, "byte": byte},
        field="file",
    ) from None


def utf16_without_bom(data: bytes) -> str | None:
    """The byte order ("little" or "big") of a file that looks like UTF-16 without a
    byte-order mark, else None. In UTF-16 every ASCII character (line ends, delimiters,
    digits, spaces, JSON's punctuation) has a zero byte beside it, all on the same side;
    UTF-8 text has no zero bytes at all. So: zero bytes in at least 1% of the first 64 KiB,
    nine in ten of them at odd offsets (little-endian) or at even ones (big-endian), and
    the sample decodes."""
    sample = data[:UTF16_SAMPLE_BYTES]
    sample = sample[: len(sample) - len(sample) % 2]
    zeros = sample.count(0)
    if zeros < 2 or zeros * 100 < len(sample):
        return None
    odd = sample[1::2].count(0)
    for endian, on_side in (("little", odd), ("big", zeros - odd)):
        if on_side * 10 >= zeros * 9:
            decoder = codecs.getincrementaldecoder(f"utf-16-{endian[0]}e")()
            try:
                decoder.decode(sample, final=False)  # the sample may end inside a surrogate pair
            except UnicodeDecodeError:
                return None
            return endian
    return None
