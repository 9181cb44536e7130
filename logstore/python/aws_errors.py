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
    """``HTTP <status> <code>: <message>`` for service errors, ``<type>: <text>`` otherwise."""
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message", "")
        return f"HTTP {http_status(exc) or '?'} {error_code(exc) or '?'}: {message}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"
