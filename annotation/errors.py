"""One error shape for services, mapped by api.exception_handlers to the error body of docs/api.md "General rules":
`{"errors": [{"field": ..., "message": ..., "row": N?}]}`."""

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    field: str | None
    message: str
    row: int | None = None

    def as_dict(self) -> dict:
        body = {"field": self.field, "message": self.message}
        if self.row is not None:
            body["row"] = self.row
        return body


class ApplicationError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, errors: list[FieldError] | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors if errors else [FieldError(field, message)]


class InvalidInput(ApplicationError):
    status_code = 400
    code = "invalid"


class PermissionDenied(ApplicationError):
    status_code = 403
    code = "forbidden"


class NotFound(ApplicationError):
    """Raised alike for "does not exist" and "exists but not yours" so that neither leaks."""

    status_code = 404
    code = "not_found"

    def __init__(self, message: str | None = None):
        from django.utils.translation import gettext

        super().__init__(message if message is not None else gettext("Not found."))


class Conflict(ApplicationError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(ApplicationError):
    status_code = 413
    code = "too_large"


class KindNotInstalled(Conflict, KeyError):
    """A project's kind is not among the installed ones (`MASHOV_KINDS`): the project is
    kept, but nothing that needs its kind can run (docs/kinds.md "A project whose kind is
    not installed"). 409: the request is sound, the site's configuration conflicts with the
    project. Also a KeyError, which is what `get_kind` raised for an unknown name before."""

    code = "kind_not_installed"

    def __init__(self, kind: str):
        from django.utils.translation import gettext

        self.kind = kind
        super().__init__(
            gettext("This project's kind, %(kind)s, is not installed on this site.") % {"kind": kind}, field="kind"
        )

    def __str__(self) -> str:
        return self.message
