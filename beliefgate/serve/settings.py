"""The configuration of one service instance (:class:`ServeSettings`) and the service's constants."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import ConfigDict, Field, field_validator

from beliefgate.validation import CheckedModel, ParamError

#: the prefix of every route
API_PREFIX = "/v1"
#: default request body limit (bytes)
DEFAULT_MAX_BODY_BYTES = 1 << 20
#: default time a request's whole body may take to arrive (408 beyond)
DEFAULT_BODY_TIMEOUT_S = 30.0
#: default time a connection may take to send a request's head (request line and headers) once it
#: opens or starts a request; beyond it the connection is closed (408 when part of a head came)
DEFAULT_HEADER_TIMEOUT_S = 10.0


class ServeSettingsError(ParamError):
    """A bad :class:`ServeSettings` value (one line naming the field and the value; a ``ValueError``)."""


class ServeSettings(CheckedModel):
    """Configuration of one service instance (frozen; a bad value raises :class:`ServeSettingsError`).

    ``token``: bearer token every ``/v1`` route but ``healthz`` requires (``None``:
    no auth; only sensible on a loopback host). ``max_sessions``: live sessions at
    most (429 beyond). ``ttl_s``: idle seconds before a session expires (``None``:
    never). ``max_body_bytes``: request body limit (413 beyond). ``body_timeout_s``: time
    the whole body may take to arrive once the headers are in (408 beyond). ``header_timeout_s``:
    time a connection may take to send a request's head, from its opening or its request's first
    byte (closed beyond: stalled connections cannot hold the server). ``snapshot_path``:
    file the sessions are snapshotted to after every change and restored from at
    start (``None``: in memory only). ``sweep_interval_s``: how often expired
    sessions are collected (default ``min(ttl/4, 30)`` seconds).
    """

    error_type = ServeSettingsError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    token: Optional[str] = None
    max_sessions: int = Field(1000, ge=1)
    ttl_s: Optional[float] = Field(3600.0, gt=0)
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024)
    snapshot_path: Optional[Path] = None
    sweep_interval_s: Optional[float] = Field(None, gt=0)
    body_timeout_s: float = Field(DEFAULT_BODY_TIMEOUT_S, gt=0)
    header_timeout_s: float = Field(DEFAULT_HEADER_TIMEOUT_S, gt=0)

    @field_validator("token")
    @classmethod
    def _token_not_blank(cls, token: Optional[str]) -> Optional[str]:
        if token is not None and not token.strip():
            raise ValueError("token must not be empty")
        return token

    def sweep_interval(self) -> Optional[float]:
        if self.ttl_s is None:
            return None
        if self.sweep_interval_s is not None:
            return self.sweep_interval_s
        return min(max(self.ttl_s / 4.0, 0.05), 30.0)


def needs_token(path: str) -> bool:
    """Whether a request for ``path`` needs the bearer token (when one is set): every ``/v1``
    route but ``healthz`` (the guard enforces it, the OpenAPI document declares it)."""
    return path.startswith(API_PREFIX + "/") and path != API_PREFIX + "/healthz"


__all__ = ["API_PREFIX", "DEFAULT_BODY_TIMEOUT_S", "DEFAULT_HEADER_TIMEOUT_S", "DEFAULT_MAX_BODY_BYTES", "ServeSettings", "ServeSettingsError", "needs_token"]
