"""Releases: frozen, versioned snapshots of a project's decided items (docs/api.md "Releases").

`release_request` checks the request and queues the `release` job; `release_build_job`, on
the worker, reads the project once (one REPEATABLE READ transaction on PostgreSQL, so every
file shows the same moment) and writes, per split (the kind's computed split where it
computes one, as the exports do: QA's articles):

- `data/<split>.jsonl` — the project's JSONL export of the split (annotation.services.exports),
- `data/<split>.parquet` — the same records as a Parquet table of typed columns, one
  schema for every split (annotation.release.parquet),
- `<format>/<split>.<ext>` — each of the kind's own export formats (FarsTail TSV, SQuAD JSON),
- the kind's files in the dataset's published shape (`Kind.release_files`: PhrasIS's
  files, LCHAIM's JSON and ConTRoL's JSONL, QA's questions in squad_v2's shape),

then `README.md` (the dataset card, annotation.release.card) and `SHA256SUMS`, and a zip of
them all. Files go to the release storage (`release_storage`) and are never written again:
a release is `ready` once, and later votes, decisions or edits do not reach it. The release
keeps a per-item manifest (split, label, a digest of the item, its effective decision), from
which `release_diff` compares two releases without reading the live project."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Iterable
from dataclasses import replace
from types import SimpleNamespace

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.db import connection, transaction
from django.utils.translation import gettext as _

from annotation.access import access_project_for_supervisor
from annotation.errors import FieldError, InvalidInput, NotFound
from annotation.kinds.registry import get_kind
from annotation.models import Item, Job, Project, Release
from annotation.release.parquet import records_parquet, records_shape
from annotation.rows import clean_comment
from annotation.services import exports
from annotation.services.audit import audit_record
from annotation.services.decisions import effective_decisions
from annotation.services.jobs import job_create, job_set_progress
from annotation.services.webhooks import webhook_event_send
from annotation.wording import join_list

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
LICENSE_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")
DEFAULT_LICENSE = "other"
MAX_DESCRIPTION_LENGTH = 5000
# Items without a split are released as one split of this name (the Hub's default split) in a
# project without splits, and under UNASSIGNED beside named splits, so that they never share
# a file with a split called "train".
UNSPLIT = "train"
UNASSIGNED = "unassigned"
DATA_DIR = "data"


def release_storage() -> Storage:
    """Where release files live: STORAGES["releases"] when configured (S3 or any Django
    backend), else files under MASHOV_RELEASE_ROOT."""
    if "releases" in settings.STORAGES:
        return storages["releases"]
    return FileSystemStorage(location=settings.MASHOV_RELEASE_ROOT)


def release_prefix(release: Release) -> str:
    """The release's folder in the storage: one per project and version."""
    return f"{release.project.slug}/{release.version}"


def zip_name(release: Release) -> str:
    return f"{release.project.slug}-{release.version}.zip"


# --- the request ---------------------------------------------------------------------------------


def _read_request(body) -> tuple[str, str, str]:
    if not isinstance(body, dict):
        raise InvalidInput(_("the body must be a JSON object"), field="body")
    unknown = set(body) - {"version", "license", "description"}
    if unknown:
        raise InvalidInput(
            _("unknown field(s): %(unknown)s; known: %(known)s")
            % {"unknown": join_list(sorted(unknown)), "known": "description, license, version"},
            field="body",
        )
    errors: list[FieldError] = []
    version = body.get("version")
    if not isinstance(version, str) or not VERSION_RE.match(version):
        errors.append(
            FieldError("version", _("must be 1-64 letters, digits, dots, dashes, pluses or underscores (e.g. 1.0)"))
        )
    license_ = body.get("license", DEFAULT_LICENSE)
    if not isinstance(license_, str) or not LICENSE_RE.match(license_):
        errors.append(FieldError("license", _("must be a license identifier as the Hub names them (e.g. cc-by-4.0)")))
    description = body.get("description", "")
    comment_errors: list[FieldError] = []
    clean_comment(description, comment_errors)
    if comment_errors or (isinstance(description, str) and len(description) > MAX_DESCRIPTION_LENGTH):
        message = (
            comment_errors[0].message
            if comment_errors
            else _("is longer than %(n)s characters") % {"n": MAX_DESCRIPTION_LENGTH}
        )
        errors.append(FieldError("description", message))
    if errors:
        raise InvalidInput(_("invalid release"), errors=errors)
    return version, license_, description or ""


def _released_queryset(project: Project):
    """The items a release holds: the kind's finished items (the export's default status),
    probes left out, in the project's order."""
    return exports.export_items_queryset(exports.export_prepare(project=project, fmt="jsonl"))


def release_request(*, user, slug: str, body) -> Release:
    """Check the request and queue the release job (supervisors). A version is used once per
    project (a failed build keeps its version); a project with no decided items is refused."""
    project = access_project_for_supervisor(user, slug)
    version, license_, description = _read_request(body)
    with transaction.atomic():
        # The project's row lock makes two requests for one version store one release.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        if Release.objects.filter(project=project, version=version).exists():
            raise InvalidInput(
                _("version %(version)s was already released; choose a new version") % {"version": version},
                field="version",
            )
        if not _released_queryset(project).exists():
            raise InvalidInput(_("the project has no decided items to release"), field="project")
        release = Release.objects.create(
            project=project, version=version, license=license_, description=description, created_by=user
        )
        job = job_create(kind="release", project=project, user=user, params={"release": release.pk})
        release.job = job
        release.save(update_fields=["job"])
        audit_record(
            actor=user, action="release_publish", project=project, target=f"release:{version}",
            after={"version": version, "license": license_, "job": job.pk},
        )  # fmt: skip
    return release


# --- reads ---------------------------------------------------------------------------------------


def releases_for_project(*, user, slug: str):
    project = access_project_for_supervisor(user, slug)
    return project, Release.objects.filter(project=project).select_related("project").order_by("-created_at", "-id")


def release_for_project(*, user, slug: str, version: str) -> Release:
    project = access_project_for_supervisor(user, slug)
    release = Release.objects.filter(project=project, version=version).select_related("project").first()
    if release is None:
        raise NotFound()
    return release


def release_zip(release: Release):
    """The release's zip, opened from the storage; NotFound while it is not ready."""
    if release.status != Release.Status.READY:
        raise NotFound(_("This release is not ready."))
    return release_storage().open(f"{release_prefix(release)}/{zip_name(release)}", "rb")


# --- the job -------------------------------------------------------------------------------------


def release_build_job(job: Job) -> dict:
    """Write the release's files once; safe to run again after a crash halfway (what an
    earlier run left is deleted first), and a no-op for a release that is ready."""
    release = Release.objects.select_related("project").get(pk=job.params["release"])
    if release.status == Release.Status.READY:
        return release_summary(release)
    storage = release_storage()
    prefix = release_prefix(release)
    _delete_folder(storage, prefix)
    # (Inside a caller's transaction, as in tests, the caller's snapshot rules.)
    own_snapshot = connection.vendor == "postgresql" and not connection.in_atomic_block
    try:
        with transaction.atomic():
            if own_snapshot:
                # One snapshot for every query of the build: the files agree with each other
                # and with the manifest, whatever is decided meanwhile.
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            files, manifest, counts, configs = _write_data(release, storage, prefix, job)
            from annotation.release.card import release_card

            card = release_card(release, manifest, counts, [f["name"] for f in files], configs)
        files.append(_save(storage, prefix, "README.md", card.encode("utf-8")))
        files.sort(key=lambda f: f["name"])
        sums = "".join(f"{f['sha256']}  {f['name']}\n" for f in files).encode("utf-8")
        files.append(_save(storage, prefix, "SHA256SUMS", sums))
        _write_zip(storage, prefix, release, files)
    except InvalidInput as exc:
        Release.objects.filter(pk=release.pk).update(status=Release.Status.FAILED, error=exc.errors[0].message)
        return {"errors": [error.as_dict() for error in exc.errors]}
    except Exception as exc:
        Release.objects.filter(pk=release.pk).update(status=Release.Status.FAILED, error=str(exc)[:500])
        raise
    with transaction.atomic():
        updated = Release.objects.filter(pk=release.pk, status=Release.Status.BUILDING).update(
            status=Release.Status.READY, card=card, files=files, manifest=manifest, counts=counts
        )
        release.refresh_from_db()
        if updated:
            summary = release_summary(release)
            transaction.on_commit(lambda: webhook_event_send(release.project_id, "release.made", summary))
    return release_summary(release)


def release_summary(release: Release) -> dict:
    """What the job's result, the list and the `release.made` event say of a release."""
    return {
        "version": release.version,
        "status": release.status,
        "license": release.license,
        "created_at": release.created_at.isoformat(),
        "files": release.files,
        "counts": release.counts,
    }


def _delete_folder(storage: Storage, prefix: str) -> None:
    try:
        folders, names = storage.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        storage.delete(f"{prefix}/{name}")
    for folder in folders:
        _delete_folder(storage, f"{prefix}/{folder}")


def _save(storage: Storage, prefix: str, name: str, data: bytes) -> dict:
    stored = storage.save(f"{prefix}/{name}", ContentFile(data))
    if stored != f"{prefix}/{name}":  # a storage that renamed it: the folder was not empty
        raise RuntimeError(f"release file {name} exists already in the storage")
    return {"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _write_zip(storage: Storage, prefix: str, release: Release, files: list[dict]) -> None:
    buffer = io.BytesIO()
    folder = f"{release.project.slug}-{release.version}"
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for entry in files:
            with storage.open(f"{prefix}/{entry['name']}", "rb") as handle:
                archive.writestr(f"{folder}/{entry['name']}", handle.read())
    storage.save(f"{prefix}/{zip_name(release)}", ContentFile(buffer.getvalue()))


def split_namer(splits: Iterable[str]):
    """A function from a split to its name as a file name and a Hub split name (word
    characters only), for a release of `splits` (the no-split "" among them or not)."""
    unsplit = UNSPLIT if set(splits) <= {""} else UNASSIGNED
    return lambda split: re.sub(r"\W", "_", split or unsplit)


def _write_data(release: Release, storage: Storage, prefix: str, job: Job) -> tuple[list[dict], dict, dict, dict]:
    """The data files of every split; returns the file entries, the manifest, the counts
    per split and label, and the Hub configs of the kind's own files ({config: {split:
    path}})."""
    project = release.project
    kind = get_kind(project.kind)
    base = exports.export_prepare(project=project, fmt="jsonl")
    items = exports.export_items_queryset(base)
    split_of = _split_reader(base)
    splits = sorted({split_of(split, group, external_id) for split, group, external_id in _split_keys(items)})
    if not splits:
        raise InvalidInput(_("the project has no decided items to release"), field="project")
    own_formats = [*kind.export_extra_formats, *kind.streamed_formats]
    files: list[dict] = []
    configs: dict[str, dict[str, str]] = {}
    names: list[str] = []
    split_file_name = split_namer(splits)
    for index, split in enumerate(splits):
        # Items of no split, in a project of no splits: the whole export.
        split_filter = None if splits == [""] else split
        name = split_file_name(split)
        spec = replace(base, split=split_filter)
        names.append(name)
        files.append(_save(storage, prefix, f"{DATA_DIR}/{name}.jsonl", b"".join(exports.export_stream(spec))))
        for fmt in own_formats:
            own = exports.export_prepare(project=project, fmt=fmt)
            data = b"".join(exports.export_stream(replace(own, split=split_filter)))
            extension = own.filename.rsplit(".", 1)[-1]
            files.append(_save(storage, prefix, f"{fmt}/{name}.{extension}", data))
        for own_file in kind.release_files(project, name, exports.export_items_queryset(spec)):
            files.append(_save(storage, prefix, own_file.path, own_file.data))
            if own_file.config:
                configs.setdefault(own_file.config, {})[name] = own_file.path
        job_set_progress(job.pk, 0.7 * (index + 1) / len(splits))
    # One schema for every split's Parquet file, inferred from all their records, read back
    # one record at a time (a split's records are in memory only while its file is written).
    shape = records_shape(record for name in names for record in _records(storage, f"{prefix}/{DATA_DIR}/{name}.jsonl"))
    for name in names:
        records = list(_records(storage, f"{prefix}/{DATA_DIR}/{name}.jsonl"))
        files.append(_save(storage, prefix, f"{DATA_DIR}/{name}.parquet", records_parquet(records, shape)))
    job_set_progress(job.pk, 0.8)
    manifest, counts = _manifest(items, lambda *key: split_file_name(split_of(*key)))
    return files, manifest, counts, configs


def _split_reader(spec):
    """(stored split, group, external id) → the split an item is released in: the kind's
    computed split where it computes one (QA's articles), else the stored one."""
    if spec.splits is None:
        return lambda split, _group, _external_id: split
    return lambda split, group, external_id: spec.splits.of(
        SimpleNamespace(split=split, group=group, external_id=external_id)
    )


def _split_keys(items):
    return items.values_list("split", "group", "external_id").iterator(chunk_size=5000)


def _records(storage: Storage, path: str):
    """The records of a stored JSONL file, one line at a time (the export escapes every
    character other than LF that would break a line)."""
    with storage.open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def item_digest(payload, gold_label: str, reference_label: str, status: str) -> str:
    """A digest of what a release says of an item: its content, gold, reference and status."""
    text = json.dumps([payload, gold_label, reference_label, status], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _manifest(items, split_name_of) -> tuple[dict, dict]:
    """{external id: split, label, digest, effective decision} and the counts per split and
    label, from the released items (`split_name_of`: (split, group, external id) → the name
    of the split the item is released in)."""
    rows = list(
        items.values_list(
            "pk", "round", "external_id", "split", "group", "gold_label", "reference_label", "status", "payload"
        )
    )
    decisions = effective_decisions((pk, round_) for pk, round_, *_rest in rows)
    manifest: dict[str, dict] = {}
    counts: dict[str, dict[str, int]] = {}
    for pk, _round, external_id, split, group, gold, reference, status, payload in rows:
        decision = decisions.get(pk)
        split_name = split_name_of(split, group, external_id)
        manifest[external_id] = {
            "split": split_name,
            "label": gold or None,
            "digest": item_digest(payload, gold, reference, status),
            "decision": (
                {"id": decision.pk, "method": decision.method, "round": decision.round}
                if decision is not None
                else None
            ),
        }
        per_label = counts.setdefault(split_name, {})
        per_label[gold or ""] = per_label.get(gold or "", 0) + 1
    return manifest, counts


# --- the diff ------------------------------------------------------------------------------------


def release_diff(*, user, slug: str, a: str, b: str) -> dict:
    """What changed from release `a` to release `b`, per split of `b` (and of `a` for removed
    items): items added, removed, moved between splits, relabelled (with the decisions that
    stood in each release) and edited (same label, other content). From the manifests only."""
    old = release_for_project(user=user, slug=slug, version=a)
    new = release_for_project(user=user, slug=slug, version=b)
    for name, release in (("a", old), ("b", new)):
        if release.status != Release.Status.READY:
            raise InvalidInput(_("release %(version)s is not ready") % {"version": release.version}, field=name)
    before, after = old.manifest, new.manifest
    splits: dict[str, dict[str, list]] = {}

    def bucket(split: str) -> dict[str, list]:
        return splits.setdefault(split, {"added": [], "removed": [], "relabelled": [], "moved": [], "edited": []})

    for external_id in sorted(set(after) - set(before)):
        entry = after[external_id]
        bucket(entry["split"])["added"].append({"external_id": external_id, "label": entry["label"]})
    for external_id in sorted(set(before) - set(after)):
        entry = before[external_id]
        bucket(entry["split"])["removed"].append({"external_id": external_id, "label": entry["label"]})
    for external_id in sorted(set(before) & set(after)):
        was, now = before[external_id], after[external_id]
        if was["split"] != now["split"]:
            bucket(now["split"])["moved"].append({"external_id": external_id, "from": was["split"], "to": now["split"]})
        if was["label"] != now["label"]:
            bucket(now["split"])["relabelled"].append(
                {
                    "external_id": external_id,
                    "from": was["label"],
                    "to": now["label"],
                    "decisions": {"a": was["decision"], "b": now["decision"]},
                }
            )
        elif was["digest"] != now["digest"]:
            bucket(now["split"])["edited"].append({"external_id": external_id})
    totals = {
        key: sum(len(s[key]) for s in splits.values()) for key in ("added", "removed", "relabelled", "moved", "edited")
    }
    return {"a": old.version, "b": new.version, "totals": totals, "splits": dict(sorted(splits.items()))}


def item_status_counts(project: Project) -> dict[str, int]:
    """Items per status (probes left out), for the card's removals."""
    from django.db.models import Count

    rows = Item.objects.filter(project=project, probe_of__isnull=True).values_list("status").annotate(n=Count("id"))
    return dict(rows)
