"""A thin LLM client over the official ``openai`` SDK (any OpenAI-compatible server).

Injected, never global: build one :class:`LLMClient` from :class:`LLMSettings`
(or pass your own ``openai.OpenAI`` instance) and hand it to planners. Every
request is recorded in the ledger (role, tokens, latency, outcome). Rate limits,
server errors, timeouts and connection errors are retried a bounded number of
times with exponential backoff, then raise :class:`LLMUnavailableError`.

Structured output: with ``response_format="auto"`` the client first asks for a
JSON schema (``json_schema``); a server that rejects that form (llama.cpp answers
HTTP 500 or 400) is asked with ``json_object`` carrying the schema (llama.cpp then
constrains decoding to it), then with bare ``json_object``, and one that rejects
all of them gets plain text (the parser copes). Each step down happens once per
client and is recorded in the ledger as ``format_downgrade``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Literal, NamedTuple, Optional, Sequence

from beliefgate.planners.errors import LLMUnavailableError, PlannerConfigError


@dataclass(frozen=True)
class LLMSettings:
    """How to reach a model. Only the CLI reads environment variables to fill this."""

    base_url: str
    model: str
    api_key: str = "not-needed"
    temperature: float = 0.0
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 0.5
    max_tokens: int = 128
    response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "text"] = "auto"
    cache_dir: Optional[str] = None

    def __post_init__(self):
        if not self.base_url or not self.base_url.startswith(("http://", "https://")):
            raise PlannerConfigError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        if not self.model:
            raise PlannerConfigError("a model name is required")
        if self.timeout_s <= 0 or self.max_retries < 0 or self.backoff_s < 0:
            raise PlannerConfigError("timeout_s must be > 0, max_retries and backoff_s >= 0")


class LedgerEntry(NamedTuple):
    role: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    outcome: str          # "ok", "cached", "retry:<kind>", "failed:<kind>", "format_downgrade"
    response_format: str


@dataclass
class Ledger:
    entries: List[LedgerEntry] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Requests that reached (or tried to reach) the server (cache hits excluded)."""
        return sum(1 for e in self.entries if e.outcome != "cached")

    def calls(self, role: Optional[str] = None) -> int:
        """Completed model answers (including cache hits), optionally for one role."""
        return sum(1 for e in self.entries if e.outcome in ("ok", "cached") and (role is None or e.role == role))

    def summary(self) -> Dict[str, Any]:
        ok = [e for e in self.entries if e.outcome == "ok"]
        return {
            "requests": self.requests, "answers": self.calls(),
            "prompt_tokens": sum(e.prompt_tokens for e in ok), "completion_tokens": sum(e.completion_tokens for e in ok),
            "mean_latency_s": (sum(e.latency_s for e in ok) / len(ok)) if ok else 0.0,
            "failures": sum(1 for e in self.entries if e.outcome.startswith("failed")),
        }


_SCHEMAS = {
    "planner": {"type": "object", "properties": {"skill": {"type": "string"}, "why": {"type": "string"}},
                "required": ["skill"]},
    "judge": {"type": "object", "properties": {"replan": {"type": "boolean"}, "why": {"type": "string"}},
              "required": ["replan"]},
}


#: structured-output forms from most to least specific (``auto`` walks down this list)
_FORMAT_LADDER = ("json_schema", "json_object_schema", "json_object", "text")


def skill_schema(allowed: Sequence[str], extra: Optional[Dict[str, Any]] = None,
                 required_extra: Sequence[str] = ()) -> Dict[str, Any]:
    """A JSON schema for ``{"skill": one of allowed, ...}``: servers that honour schemas
    (OpenAI ``json_schema``, llama.cpp ``json_object`` + ``schema``) can then only answer
    an allowed skill, so the parser's re-asks are for servers that don't. ``extra`` adds
    properties; ``required_extra`` names those of them that must be present too."""
    if not allowed:
        raise PlannerConfigError("a skill schema needs at least one allowed skill")
    props: Dict[str, Any] = {"skill": {"type": "string", "enum": list(allowed)}}
    props.update(extra or {})
    return {"type": "object", "properties": props, "required": [*required_extra, "skill"]}


class LLMClient:
    """Chat completions with retries, a ledger and an optional on-disk cache."""

    def __init__(self, settings: LLMSettings, openai_client=None, sleep=time.sleep):
        self.settings = settings
        if openai_client is None:
            import openai

            openai_client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                          timeout=settings.timeout_s, max_retries=0)
        self._client = openai_client
        self._sleep = sleep
        self._format = "json_schema" if settings.response_format == "auto" else settings.response_format
        self.ledger = Ledger()
        self._cache = Path(settings.cache_dir) if settings.cache_dir else None
        if self._cache is not None:
            self._cache.mkdir(parents=True, exist_ok=True)

    @property
    def calls(self) -> int:
        return self.ledger.calls()

    def _key(self, messages, role) -> str:
        blob = json.dumps([self.settings.model, self.settings.temperature, role, messages], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _format_arg(self, role: str, schema: Optional[Dict[str, Any]]) -> Optional[dict]:
        schema = schema if schema is not None else _SCHEMAS.get(role, _SCHEMAS["planner"])
        if self._format == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": role, "schema": schema}}
        if self._format == "json_object_schema":  # llama.cpp-style servers decode under the schema
            return {"type": "json_object", "schema": schema}
        if self._format == "json_object":
            return {"type": "json_object"}
        return None

    def chat(self, messages: List[Dict[str, str]], role: str = "planner",
             schema: Optional[Dict[str, Any]] = None) -> str:
        """One completion's text. Raises :class:`LLMUnavailableError` after the bounded retries.

        ``schema`` (a JSON schema, e.g. :func:`skill_schema`) replaces the role's default
        structured-output schema for this call.
        """
        import openai

        key = self._key(messages, role if schema is None else [role, schema])
        if self._cache is not None and (self._cache / f"{key}.json").exists():
            self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "cached", self._format))
            return json.loads((self._cache / f"{key}.json").read_text())["content"]
        s = self.settings
        attempt = 0
        while True:
            kwargs = dict(model=s.model, messages=messages, temperature=s.temperature, max_tokens=s.max_tokens)
            fmt = self._format_arg(role, schema)
            if fmt is not None:
                kwargs["response_format"] = fmt
            started = time.perf_counter()
            try:
                response = self._client.chat.completions.create(**kwargs)
            except (openai.InternalServerError, openai.BadRequestError) as exc:
                latency = time.perf_counter() - started
                if self._format != "text" and s.response_format == "auto":
                    # the server rejects this structured-output form: step down and ask again
                    self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, "format_downgrade", self._format))
                    self._format = _FORMAT_LADDER[_FORMAT_LADDER.index(self._format) + 1]
                    continue
                if isinstance(exc, openai.BadRequestError):
                    self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, "failed:bad_request", self._format))
                    raise PlannerConfigError(f"the server rejected the request: {exc}") from exc
                attempt = self._retry_or_raise(role, "server_error", attempt, latency, exc)
                continue
            except (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError) as exc:
                kind = {openai.RateLimitError: "rate_limit", openai.APITimeoutError: "timeout"}.get(type(exc), "connection")
                attempt = self._retry_or_raise(role, kind, attempt, time.perf_counter() - started, exc)
                continue
            latency = time.perf_counter() - started
            content = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
            self.ledger.entries.append(LedgerEntry(
                role, int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0),
                latency, "ok", self._format))
            if self._cache is not None:
                tmp = self._cache / f"{key}.tmp"
                tmp.write_text(json.dumps({"content": content}))
                tmp.replace(self._cache / f"{key}.json")
            return content

    def _retry_or_raise(self, role, kind, attempt, latency, exc) -> int:
        if attempt >= self.settings.max_retries:
            self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, f"failed:{kind}", self._format))
            raise LLMUnavailableError(
                f"LLM server at {self.settings.base_url} failed ({kind}) after {attempt + 1} attempts: {exc}") from exc
        self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, f"retry:{kind}", self._format))
        self._sleep(self.settings.backoff_s * (2 ** attempt))
        return attempt + 1
