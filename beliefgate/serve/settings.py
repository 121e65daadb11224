"""The configuration of one service instance (:class:`ServeSettings`) and the service's constants."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

#: the prefix of every route
API_PREFIX = "/v1"
#: default request body limit (bytes)
DEFAULT_MAX_BODY_BYTES = 1 << 20
#: default time a request's whole body may take to arrive (408 beyond)
DEFAULT_BODY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ServeSettings:
    """Configuration of one service instance.

    ``token``: bearer token every ``/v1`` route but ``healthz`` requires (``None``:
    no auth; only sensible on a loopback host). ``max_sessions``: live sessions at
    most (429 beyond). ``ttl_s``: idle seconds before a session expires (``None``:
    never). ``max_body_bytes``: request body limit (413 beyond). ``body_timeout_s``: time
    the whole body may take to arrive once the headers are in (408 beyond). ``snapshot_path``:
    file the sessions are snapshotted to after every change and restored from at
    start (``None``: in memory only). ``sweep_interval_s``: how often expired
    sessions are collected (default ``min(ttl/4, 30)`` seconds).
    """

    token: Optional[str] = None
    max_sessions: int = 1000
    ttl_s: Optional[float] = 3600.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    snapshot_path: Optional[Path] = None
    sweep_interval_s: Optional[float] = None
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S

    def __post_init__(self):
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.ttl_s is not None and not (self.ttl_s > 0 and math.isfinite(self.ttl_s)):
            raise ValueError(f"ttl_s must be a positive number or None, got {self.ttl_s}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"max_body_bytes must be >= 1024, got {self.max_body_bytes}")
        if not (self.body_timeout_s > 0 and math.isfinite(self.body_timeout_s)):
            raise ValueError(f"body_timeout_s must be a positive number, got {self.body_timeout_s}")

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


__all__ = ["API_PREFIX", "DEFAULT_BODY_TIMEOUT_S", "DEFAULT_MAX_BODY_BYTES", "ServeSettings", "needs_token"]
