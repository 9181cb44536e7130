"""Reading botocore errors: one place for error codes, HTTP statuses and messages."""

from __future__ import annotations

from botocore.exceptions import ClientError


def error_code(exc: Exception) -> str:
    """The AWS error code (``PreconditionFailed``, ``NoSuchKey``, ...), or "" if none."""
    return (
        str(exc.response.get("Error", {}).get("Code", "")) if isinstance(exc, ClientError) else ""
    )


def http_status(exc: Exception) -> int:
    """The HTTP status of a service error, or 0 if there was no HTTP answer."""
    if isinstance(exc, ClientError):
        return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return 0


def is_precondition_failed(exc: Exception) -> bool:
    """The one "create gets 412" check: a create-only PUT (``If-None-Match: *``) was refused
    because the key exists (HTTP 412 or code ``PreconditionFailed``)."""
    return http_status(exc) == 412 or error_code(exc) == "PreconditionFailed"


def describe(exc: Exception) -> str:
    """``HTTP <status> <code>: <message>`` for service errors (``HTTP 403 AccessDenied: Access
    Denied``), ``<type>: <text>`` otherwise. An answer without a body (HEAD: botocore makes the
    status its code and the reason its message) is ``HTTP 403 Forbidden``, one phrase."""
    if isinstance(exc, ClientError):
        status, code = http_status(exc), error_code(exc)
        message = str(exc.response.get("Error", {}).get("Message", ""))
        if code in ("", str(status)):
            return f"HTTP {status or '?'} {message}".rstrip()
        return f"HTTP {status or '?'} {code}: {message}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"
