"""An import reads its file a slice at a time and hands the readers one line at a time:
the file's decoded text is never held whole. The pass over the bytes that comes first
refuses what the whole decode refused (UTF-16, bytes that are not UTF-8, named by line
and byte) and counts the same rows and the same need for string checks, wherever the
slices happen to cut the file; the readers give the same records from the upload as
from the whole text."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.errors import InvalidInput

# Bytes that cut characters, line ends and escapes at every place: ASCII line ends and
# quotes, a backslash and a `u`, Hebrew (two bytes), a three-byte character, a BOM,
# and bytes that are no UTF-8.
PIECES = [b"\n", b"\r", b"\r\n", b'"', b",", b"\t", b"\\", b"u", b"a", b" ", "ש".encode(), "€".encode(), b"\xef\xbb\xbf",
          b"\x00", b"\xff", b"\xd7", "\u2028".encode()]  # fmt: skip


def _decode_whole(data: bytes) -> str:
    """The reference: the whole file decoded at once, refused as the product refuses."""
    from annotation.upload_text import refuse_not_utf8, refuse_utf16

    refuse_utf16(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        refuse_not_utf8(data.count(b"\n", 0, exc.start) + 1, exc.start)
    return text.removeprefix("\ufeff")


def _whole(data: bytes):
    """What the whole decode gave: the text, or the refusal's message."""
    from annotation.services.imports import row_count_bound, strings_to_check

    try:
        text = _decode_whole(data)
    except InvalidInput as exc:
        return ("refused", exc.errors[0].message)
    return (text, row_count_bound(text), strings_to_check("jsonl", text))


def _streamed(data: bytes, source):
    from annotation.upload_text import UploadText

    try:
        upload = UploadText.checked(source)
    except InvalidInput as exc:
        return ("refused", exc.errors[0].message)
    return (upload.read(), upload.rows_bound, upload.may_hold_unstorable_text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(1, 9))
def test_the_pass_over_the_bytes_agrees_with_the_whole_decode_wherever_the_slices_cut(pieces, slice_bytes):
    from annotation import upload_text

    data = b"".join(pieces)
    expected = _whole(data)
    real = upload_text.READ_BYTES
    upload_text.READ_BYTES = slice_bytes
    try:
        for source in (data, memoryview(data), io.BytesIO(data)):
            assert _streamed(data, source) == expected, (data, slice_bytes)
    finally:
        upload_text.READ_BYTES = real


def _records(fmt: str, text, monkeypatch=None):
    from annotation.kinds.registry import get_kind
    from annotation.services.imports import read_records

    kind = get_kind("nli_relabel")
    try:
        return list(read_records(kind, fmt, text, "Train-x.tsv"))
    except InvalidInput as exc:
        return ("refused", [error.as_dict() for error in exc.errors])


FILES = {
    "jsonl": "\ufeff"
    + json.dumps({"id": "a", "premise": "ש\u2028ל", "hypothesis": "ה"}, ensure_ascii=False)
    + "\r\n\n  \n"
    + '{"id": "b", "premise": "x", "hypothesis": "y"}\r'
    + '{"id": "c"}\n[1]\n{"id": "d", "premise": NaN}\n{"id": ',
    "csv": 'id,premise,hypothesis\r\na,"two\nlines","quoted ""x"""\rb,p,h\n\nc,p,h,extra\r\nd,"e\r\nf",g',
    "farstail": 'premise\thypothesis\tlabel\n"a\tb"\th\te\r\np\th\tc\rp\th\tn\n\nq\th',
    "csv-open-quote": 'id,premise\na,"never closed\nb,c\n',
}


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("slice_bytes", [1, 3, 1 << 20])
def test_the_readers_give_the_same_records_from_the_upload_as_from_the_whole_text(name, slice_bytes, monkeypatch):
    from annotation import upload_text
    from annotation.upload_text import UploadText

    monkeypatch.setattr(upload_text, "READ_BYTES", slice_bytes)
    fmt = name.split("-")[0]
    text = FILES[name]
    data = text.encode()
    whole = _records(fmt, data.decode("utf-8").removeprefix("\ufeff"))
    assert whole  # every file gives records or a refusal
    for source in (data, memoryview(data), io.BytesIO(data)):
        assert _records(fmt, UploadText.checked(source)) == whole


class _ReadCounting(io.BytesIO):
    """An upload that notes how far the present pass over it has read."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.read_this_pass = 0
        self.size = len(data)

    def seek(self, offset, whence=0):
        self.read_this_pass = 0
        return super().seek(offset, whence)

    def read(self, size=-1):
        piece = super().read(size)
        self.read_this_pass += len(piece)
        return piece


def _counting_slices(counter: "_ReadCounting", reader):
    """A `_SliceReader` whose reads of a stored file are noted in `counter` (a pass starts
    with a new reader)."""

    class Counting(reader):
        def __init__(self, source):
            super().__init__(source)
            counter.read_this_pass = 0

        def readinto(self, buffer):
            size = super().readinto(buffer)
            counter.read_this_pass += size
            return size

    return Counting


@pytest.mark.django_db
@pytest.mark.parametrize("large", [False, True], ids=["in the request", "stored for the worker"])
def test_an_upload_is_read_a_slice_at_a_time_as_its_rows_are_stored(nli_project, monkeypatch, settings, large):
    """When the first batch is written, only the first slices of the file have been read
    for its rows (after the pass that checked its encoding): the upload in the request,
    and the job's stored input on the worker."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation import upload_text
    from annotation.models import Item, Job
    from annotation.services import imports, jobs

    monkeypatch.setattr(imports, "BATCH_SIZE", 5)
    monkeypatch.setattr(upload_text, "READ_BYTES", 256)
    settings.MASHOV_IMPORT_JOB_ROWS = 100 if large else 10**6
    rows = [{"id": f"r{i}", "premise": f"הנחה ארוכה למדי {i}", "hypothesis": f"השערה {i}"} for i in range(200)]
    upload = _ReadCounting("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode())
    read_when_written = []
    real_write = imports._RowWriter.write

    def noting_write(writer, rows, authors):
        read_when_written.append(upload.read_this_pass)
        return real_write(writer, rows, authors)

    monkeypatch.setattr(imports._RowWriter, "write", noting_write)
    result = imports.items_import(project=nli_project, data=upload, fmt="jsonl", filename="f.jsonl")
    if large:
        job = Job.objects.get(pk=result.job)
        assert bytes(job.input_data) == upload.getvalue()  # stored whole, for the worker
        # What the worker reads: the stored bytes, a slice of the database's value at a time
        # (1,000 bytes and more), never the whole value.
        stored = job.input_data
        monkeypatch.setattr(jobs, "INPUT_SLICE_BYTES", 1000)
        upload = _ReadCounting(b"")
        monkeypatch.setattr(upload_text, "_SliceReader", _counting_slices(upload, upload_text._SliceReader))
        job = Job.objects.defer("input_data").get(pk=job.pk)  # as job_claim gives it
        with CaptureQueriesContext(connection) as captured:
            outcome = imports.items_import_job(job)
        assert outcome["created"] == 200, outcome
        upload.size = len(stored)
        reads = [query["sql"] for query in captured if "input_data" in query["sql"]]
        assert all("octet_length" in sql or "substring" in sql for sql in reads), reads
        assert sum("substring" in sql for sql in reads) >= 2 * (len(stored) // 2500), len(reads)  # two passes
    else:
        assert result.created == 200
    assert Item.objects.filter(project=nli_project).count() == 200
    assert read_when_written[0] < upload.size // 4, (read_when_written[0], upload.size)
    assert read_when_written == sorted(read_when_written) and read_when_written[-1] <= upload.size


@pytest.mark.django_db
@pytest.mark.parametrize("through", ["request", "job"])
def test_bytes_that_are_not_utf8_late_in_a_large_file_are_one_error_naming_the_line_and_nothing_is_stored(
    nli_project, monkeypatch, settings, through
):
    """Past the first slices, past the first batches: the file is refused before any row is
    read, as the whole decode refused it (in the request, or in the job's result for a file
    stored as a job's input)."""
    from annotation import upload_text
    from annotation.models import Item, Job
    from annotation.services import imports
    from annotation.services.jobs import job_create

    monkeypatch.setattr(imports, "BATCH_SIZE", 5)
    monkeypatch.setattr(upload_text, "READ_BYTES", 64)
    settings.MASHOV_IMPORT_JOB_ROWS = 10**6
    lines = [
        json.dumps({"id": f"r{i}", "premise": "הנחה", "hypothesis": "השערה"}, ensure_ascii=False) for i in range(40)
    ]
    data = ("\n".join(lines[:37]) + "\n").encode() + "שלום".encode("cp1255") + ("\n" + "\n".join(lines[37:])).encode()
    byte = len(("\n".join(lines[:37]) + "\n").encode())
    message = f"the file is not valid UTF-8 (line 38, byte {byte})"
    if through == "request":
        with pytest.raises(InvalidInput) as caught:
            imports.items_import(project=nli_project, data=io.BytesIO(data), fmt="jsonl", filename="f.jsonl")
        (error,) = caught.value.errors
        assert error.field == "file" and error.message.startswith(message), error
    else:
        stored = job_create(kind="import", project=nli_project, params={"format": "jsonl"}, input_data=data)
        outcome = imports.items_import_job(Job.objects.get(pk=stored.pk))
        (error,) = outcome["errors"]
        assert error["field"] == "file" and error["message"].startswith(message), outcome
    assert not Item.objects.filter(project=nli_project).exists()
