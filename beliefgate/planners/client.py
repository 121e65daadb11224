"""A thin LLM client over the official ``openai`` SDK (any OpenAI-compatible server).

Injected, never global: build one :class:`LLMClient` from :class:`LLMSettings` (or pass your
own ``openai.OpenAI`` instance) and hand it to planners; it is the
:class:`~beliefgate.planners.model.ChatModel` implementation. Every request is recorded in
the ledger (role, tokens, latency, outcome, whether it reached the server).

Faults never escape as anything but a :class:`~beliefgate.planners.errors.PlannerError`
with a ``reason``:

* **Retries.** Rate limits, 5xx answers, timeouts and connection errors are retried
  ``max_retries`` times with exponential back-off, then :class:`LLMUnavailableError`;
  other 4xx answers are :class:`LLMRejectedError` at once.
* **Bad answers.** A 200 whose body is not JSON, or has no choices, is a
  :class:`ModelOutputError` with ``reason="bad_response"``.
* **Deadline.** One wall-clock deadline per call, ``deadline_s``, covers every attempt and
  back-off: each attempt's read timeout is cut to what is left, the request runs in a worker
  thread the caller stops waiting for at the deadline, and (with the client this class
  builds) the response body is abandoned at the first chunk after it, so a server that
  trickles bytes cannot hold a call open. :class:`LLMDeadlineError`.
* **Budget.** ``budget_s`` seconds of LLM wall time per episode
  (:meth:`LLMClient.start_episode` resets it); once spent, calls fail at once with
  :class:`LLMBudgetError`, and each call's deadline is cut to what is left.
* **Circuit breaker.** After ``breaker_failures`` consecutive failed calls the server is
  skipped for ``breaker_cooldown_s`` (:class:`CircuitOpenError`, reason ``breaker_open``);
  then one trial call is let through: a success closes the breaker, a failure reopens it.
* **Cache.** With ``cache_dir`` answers are stored one file per request key, written with
  :func:`beliefgate.fileio.atomic_write`; an unreadable entry is a cache miss with a warning.

Structured output: with ``response_format="auto"`` the client first asks for a JSON schema
(``json_schema``); a server that refuses that *form* (an HTTP 400/422/500 whose message
names the response format, the schema or the grammar -- llama.cpp's answer) is asked with
``json_object`` carrying the schema (llama.cpp then constrains decoding to it), then bare
``json_object``, then plain text. A failure that does not name the format (a transient 500)
is retried at the same step. After ``format_retry_after`` answers at a lower step the client
tries the step above again (the interval doubles each time that step is refused again).
Steps are ``format_downgrade`` / ``format_upgrade`` entries in the ledger.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Literal, NamedTuple, Optional, Sequence, Union

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from beliefgate.errors import RuntimeFailure
from beliefgate.fileio import atomic_write
from beliefgate.validation import param_error
from beliefgate.planners.errors import (CircuitOpenError, LLMBudgetError, LLMDeadlineError, LLMRejectedError,
                                        LLMUnavailableError, ModelOutputError, PlannerConfigError)
from beliefgate.planners.model import ChatModel, Message, ModelResponse, Usage, to_messages

log = logging.getLogger(__name__)

ResponseFormat = Literal["auto", "json_schema", "json_object_schema", "json_object", "text"]


class LLMSettings(BaseModel):
    """How to reach a model. Only the CLI reads environment variables to fill this.

    A bad value raises :class:`PlannerConfigError` naming it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str = Field(min_length=1)
    api_key: str = Field("not-needed", repr=False)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    timeout_s: float = Field(30.0, gt=0, description="read timeout of one attempt")
    deadline_s: float = Field(60.0, gt=0, description="wall clock of one call, every attempt and back-off included")
    budget_s: Optional[float] = Field(None, gt=0, description="LLM wall time per episode (None: no limit)")
    max_retries: int = Field(3, ge=0, le=20)
    backoff_s: float = Field(0.5, ge=0)
    max_tokens: int = Field(128, ge=1)
    response_format: ResponseFormat = "auto"
    format_retry_after: int = Field(20, ge=1, description="answers at a lower format before trying the one above")
    breaker_failures: int = Field(3, ge=0, description="consecutive failed calls that open the breaker (0: never)")
    breaker_cooldown_s: float = Field(30.0, ge=0)
    cache_dir: Optional[str] = None

    def __init__(self, *args: Any, **data: Any):
        fields = list(type(self).model_fields)
        if len(args) > len(fields):
            raise PlannerConfigError(f"LLMSettings takes at most {len(fields)} positional values, got {len(args)}")
        data.update(zip(fields, args))  # the former dataclass took (base_url, model, ...) positionally
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise param_error(exc, PlannerConfigError, "settings", model=type(self),
                              source="LLM setting") from None

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v or not v.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        return v


class LedgerEntry(NamedTuple):
    role: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    #: "ok", "cached", "retry:<kind>", "failed:<kind>", "skipped:<reason>", "format_downgrade",
    #: "format_upgrade", "cache_corrupt"
    outcome: str
    response_format: str
    sent: bool = True  # the request reached (or was sent towards) the server


@dataclass
class Ledger:
    entries: List[LedgerEntry] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Requests sent to the server (cache hits, skipped calls and bookkeeping excluded)."""
        return sum(1 for e in self.entries if e.sent)

    def calls(self, role: Optional[str] = None) -> int:
        """Completed model answers (including cache hits), optionally for one role."""
        return sum(1 for e in self.entries if e.outcome in ("ok", "cached") and (role is None or e.role == role))

    def failures_by_kind(self) -> Dict[str, int]:
        """Failed and skipped calls per kind (``deadline``, ``connection``, ``breaker_open``...)."""
        out: Dict[str, int] = {}
        for e in self.entries:
            if e.outcome.startswith(("failed:", "skipped:")):
                kind = e.outcome.split(":", 1)[1]
                out[kind] = out.get(kind, 0) + 1
        return out

    def summary(self) -> Dict[str, Any]:
        ok = [e for e in self.entries if e.outcome == "ok"]
        kinds = self.failures_by_kind()
        return {
            "requests": self.requests, "answers": self.calls(),
            "prompt_tokens": sum(e.prompt_tokens for e in ok), "completion_tokens": sum(e.completion_tokens for e in ok),
            "mean_latency_s": (sum(e.latency_s for e in ok) / len(ok)) if ok else 0.0,
            "failures": sum(1 for e in self.entries if e.outcome.startswith("failed")),
            "failures_by_kind": kinds, "breaker_open": kinds.get("breaker_open", 0),
            "format_changes": sum(1 for e in self.entries if e.outcome.startswith("format_")),
            "cache_corrupt": sum(1 for e in self.entries if e.outcome == "cache_corrupt"),
        }


_SCHEMAS = {
    "planner": {"type": "object", "properties": {"skill": {"type": "string"}, "why": {"type": "string"}},
                "required": ["skill"]},
    "judge": {"type": "object", "properties": {"replan": {"type": "boolean"}, "why": {"type": "string"}},
              "required": ["replan"]},
}


#: structured-output forms from most to least specific (``auto`` walks down this list)
_FORMAT_LADDER = ("json_schema", "json_object_schema", "json_object", "text")
#: words by which a refusal names the structured-output form (llama.cpp, vLLM, OpenAI)
_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "schema", "grammar", "json_object")
#: statuses a format refusal comes with
_FORMAT_STATUSES = (400, 422, 500, 501)
#: statuses worth retrying
_RETRY_STATUSES = (408, 409, 425, 429)
#: how long past its deadline the caller waits for an attempt's thread to report
_GRACE_S = 0.05


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


# ------------------------------------------------------------------ deadline-aware transport
_CALL_DEADLINE: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar("beliefgate_llm_deadline",
                                                                                 default=None)


class _DeadlineStream(httpx.SyncByteStream):
    """A response body that stops at the first chunk arriving after the call's deadline."""

    def __init__(self, inner, deadline: float, request: httpx.Request):
        self._inner, self._deadline, self._request = inner, deadline, request

    def __iter__(self):
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise httpx.ReadTimeout("the call's deadline passed while the body was arriving",
                                        request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class DeadlineTransport(httpx.BaseTransport):
    """An ``httpx`` transport that enforces the current call's deadline on the response body."""

    def __init__(self, inner: Optional[httpx.BaseTransport] = None):
        self._inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = _CALL_DEADLINE.get()
        response = self._inner.handle_request(request)
        if deadline is None:
            return response
        return httpx.Response(response.status_code, headers=response.headers, request=request,
                              stream=_DeadlineStream(response.stream, deadline, request), extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


class _DeadlinePassed(RuntimeFailure):
    """Internal: the caller stopped waiting for an attempt (never leaves this module)."""


def _is_format_refusal(exc) -> bool:
    status = getattr(exc, "status_code", None)
    if status not in _FORMAT_STATUSES:
        return False
    text = f"{getattr(exc, 'message', '')} {json.dumps(getattr(exc, 'body', None), default=str)}".lower()
    return any(w in text for w in _FORMAT_WORDS)


class LLMClient(ChatModel):
    """Chat completions with a deadline, retries, a circuit breaker, a ledger and an optional cache.

    ``openai_client`` replaces the SDK client the settings would build (its own timeouts
    then apply per attempt; the deadline still bounds the call). ``sleep`` (back-off) and
    ``clock`` (monotonic seconds of the breaker's cool-down) are injectable for tests; the
    deadline and the budget always run on ``time.monotonic``.
    """

    def __init__(self, settings: LLMSettings, openai_client=None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        if openai_client is None:
            import openai

            openai_client = openai.OpenAI(
                base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout_s, max_retries=0,
                http_client=httpx.Client(transport=DeadlineTransport(), timeout=settings.timeout_s))
        self._client = openai_client
        self._sleep = sleep
        self._clock = clock
        self._format = "json_schema" if settings.response_format == "auto" else settings.response_format
        self._refusals: Dict[str, int] = {}
        self._until_probe: Optional[int] = None
        self._consecutive_failures = 0
        self._open_until: Optional[float] = None
        self._spent_s = 0.0
        self.ledger = Ledger()
        self._cache = Path(settings.cache_dir) if settings.cache_dir else None
        if self._cache is not None:
            self._cache.mkdir(parents=True, exist_ok=True)

    @property
    def calls(self) -> int:
        return self.ledger.calls()

    @property
    def response_format(self) -> str:
        """The structured-output form the next request will use."""
        return self._format

    @property
    def breaker_open(self) -> bool:
        return self._open_until is not None and self._clock() < self._open_until

    def start_episode(self) -> None:
        """A new episode: its LLM budget starts full (the breaker and the format step carry over)."""
        self._spent_s = 0.0

    def describe(self) -> Dict[str, Any]:
        s = self.settings
        return {"llm_model": s.model, "llm_base_url": s.base_url, "llm_timeout_s": s.timeout_s,
                "llm_deadline_s": s.deadline_s, "llm_budget_s": s.budget_s, "llm_max_retries": s.max_retries,
                "llm_breaker_failures": s.breaker_failures, "llm_breaker_cooldown_s": s.breaker_cooldown_s}

    def usage_summary(self) -> Dict[str, Any]:
        return {**self.ledger.summary(), "model": self.settings.model, "llm_spent_s": round(self._spent_s, 4)}

    # ----------------------------------------------------------------------------- cache
    def _key(self, messages, role) -> str:
        blob = json.dumps([self.settings.model, self.settings.temperature, role, messages], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cache_get(self, key: str, role: str) -> Optional[str]:
        if self._cache is None:
            return None
        path = self._cache / f"{key}.json"
        if not path.exists():
            return None
        try:
            content = json.loads(path.read_text(encoding="utf-8"))["content"]
            if not isinstance(content, str):
                raise TypeError(f"content is a {type(content).__name__}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            log.warning("LLM cache entry %s is unreadable (%s: %s); asking the server instead",
                        path, type(exc).__name__, exc)
            self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "cache_corrupt", self._format, sent=False))
            return None
        return content

    def _cache_put(self, key: str, content: str) -> None:
        if self._cache is not None:
            atomic_write(self._cache / f"{key}.json", json.dumps({"content": content}).encode("utf-8"))

    # -------------------------------------------------------------------------- request
    def _format_arg(self, role: str, schema: Optional[Dict[str, Any]]) -> Optional[dict]:
        schema = schema if schema is not None else _SCHEMAS.get(role, _SCHEMAS["planner"])
        if self._format == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": role, "schema": schema}}
        if self._format == "json_object_schema":  # llama.cpp-style servers decode under the schema
            return {"type": "json_object", "schema": schema}
        if self._format == "json_object":
            return {"type": "json_object"}
        return None

    def _send(self, kwargs: Dict[str, Any], deadline: float):
        """One attempt in a worker thread; the caller waits until the deadline (plus a grace) at most."""
        box: Dict[str, Any] = {}
        done = threading.Event()
        context = contextvars.copy_context()

        def attempt():
            _CALL_DEADLINE.set(deadline)
            return self._client.chat.completions.create(**kwargs)

        def work():
            try:
                box["value"] = context.run(attempt)
            except BaseException as exc:  # handed to the waiting caller, who re-raises it
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="beliefgate-llm-call", daemon=True).start()
        if not done.wait(max(deadline - time.monotonic(), 0.0) + _GRACE_S):
            raise _DeadlinePassed()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def get_response(self, system_instructions: Optional[str], input: Union[str, Sequence[Message]], *,
                     role: str = "planner", output_schema: Optional[Dict[str, Any]] = None) -> ModelResponse:
        """One answer. Raises a :class:`~beliefgate.planners.errors.PlannerError` whose ``reason`` names
        the fault (see the module docstring); the client's state is only its counters afterwards."""
        messages = to_messages(system_instructions, input)
        key = self._key(messages, role if output_schema is None else [role, output_schema])
        cached = self._cache_get(key, role)
        if cached is not None:
            self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "cached", self._format, sent=False))
            return ModelResponse(cached, Usage(), self._format, cached=True)
        s = self.settings
        if s.budget_s is not None and self._spent_s >= s.budget_s:
            self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "skipped:budget", self._format, sent=False))
            raise LLMBudgetError(f"the episode's LLM budget of {s.budget_s:g} s is spent")
        if self._open_until is not None:
            if self._clock() < self._open_until:
                self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "skipped:breaker_open", self._format,
                                                       sent=False))
                raise CircuitOpenError(f"LLM server at {s.base_url} skipped after {self._consecutive_failures} "
                                       f"consecutive failures (circuit open for "
                                       f"{self._open_until - self._clock():.1f} s more)")
            # cool-down over: this call is the trial (a failure reopens the breaker at once)
        started = time.monotonic()
        allowed = s.deadline_s if s.budget_s is None else min(s.deadline_s, s.budget_s - self._spent_s)
        try:
            text, usage = self._attempts(messages, role, output_schema, started + allowed, key)
        except (LLMUnavailableError, ModelOutputError):
            self._consecutive_failures += 1
            if s.breaker_failures and self._consecutive_failures >= s.breaker_failures:
                self._open_until = self._clock() + s.breaker_cooldown_s
            raise
        finally:
            self._spent_s += time.monotonic() - started
        self._consecutive_failures = 0
        self._open_until = None
        return ModelResponse(text, usage, self._format)

    def _attempts(self, messages: List[Message], role: str, schema, deadline: float, key: str):
        import openai

        s = self.settings
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "failed:deadline", self._format, sent=False))
                raise LLMDeadlineError(f"LLM call to {s.base_url} passed its {s.deadline_s:g} s deadline "
                                       f"after {attempt} attempt(s)")
            kwargs = dict(model=s.model, messages=messages, temperature=s.temperature, max_tokens=s.max_tokens,
                          timeout=min(s.timeout_s, remaining))
            fmt = self._format_arg(role, schema)
            if fmt is not None:
                kwargs["response_format"] = fmt
            started = time.perf_counter()
            try:
                response = self._send(kwargs, deadline)
            except _DeadlinePassed:
                self.ledger.entries.append(LedgerEntry(role, 0, 0, time.perf_counter() - started, "failed:deadline",
                                                       self._format))
                raise LLMDeadlineError(f"LLM call to {s.base_url} passed its {s.deadline_s:g} s deadline "
                                       f"during attempt {attempt + 1}") from None
            except openai.APIStatusError as exc:
                latency = time.perf_counter() - started
                if s.response_format == "auto" and self._format != "text" and _is_format_refusal(exc):
                    self._step_down(role, latency)
                    continue
                status = exc.status_code
                if status >= 500 or status in _RETRY_STATUSES:
                    kind = "rate_limit" if status == 429 else "server_error"
                    attempt = self._retry_or_raise(role, kind, attempt, latency, exc, deadline)
                    continue
                self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, f"failed:rejected_{status}",
                                                       self._format))
                raise LLMRejectedError(f"LLM server at {s.base_url} rejected the request "
                                       f"(HTTP {status}): {_brief(exc)}") from exc
            except openai.APITimeoutError as exc:
                attempt = self._retry_or_raise(role, "timeout", attempt, time.perf_counter() - started, exc, deadline)
                continue
            except openai.APIConnectionError as exc:
                attempt = self._retry_or_raise(role, "connection", attempt, time.perf_counter() - started, exc,
                                               deadline)
                continue
            except json.JSONDecodeError as exc:
                self.ledger.entries.append(LedgerEntry(role, 0, 0, time.perf_counter() - started,
                                                       "failed:bad_response", self._format))
                raise ModelOutputError(f"LLM server at {s.base_url} answered 200 with a body that is not JSON "
                                       f"({exc.msg} at char {exc.pos})", reason="bad_response") from None
            latency = time.perf_counter() - started
            content = self._content(response, role, latency)
            usage = getattr(response, "usage", None)
            tokens = Usage(int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
            self.ledger.entries.append(LedgerEntry(role, tokens.prompt_tokens, tokens.completion_tokens, latency, "ok",
                                                   self._format))
            self._answered(role)
            self._cache_put(key, content)
            return content, tokens

    def _content(self, response, role: str, latency: float) -> str:
        choices = getattr(response, "choices", None)
        message = getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
        if message is None:
            what = ("no choices" if isinstance(choices, list) else f"a {type(response).__name__}, not a chat completion")
            self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, "failed:bad_response", self._format))
            raise ModelOutputError(f"LLM server at {self.settings.base_url} answered 200 with {what}",
                                   reason="bad_response")
        content = getattr(message, "content", None)
        return content if isinstance(content, str) else ""

    # ------------------------------------------------------------------- format ladder
    def _step_down(self, role: str, latency: float) -> None:
        refused = self._format
        self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, "format_downgrade", refused))
        self._refusals[refused] = self._refusals.get(refused, 0) + 1
        self._format = _FORMAT_LADDER[_FORMAT_LADDER.index(refused) + 1]
        self._until_probe = self.settings.format_retry_after * 2 ** (self._refusals[refused] - 1)
        log.info("LLM server refused response_format %s; using %s", refused, self._format)

    def _answered(self, role: str) -> None:
        if self._until_probe is None:
            return
        self._until_probe -= 1
        if self._until_probe > 0:
            return
        index = _FORMAT_LADDER.index(self._format)
        if index == 0 or self.settings.response_format != "auto":
            self._until_probe = None
            return
        self._format = _FORMAT_LADDER[index - 1]
        self._until_probe = None if index - 1 == 0 else self.settings.format_retry_after
        self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "format_upgrade", self._format, sent=False))

    def _retry_or_raise(self, role, kind, attempt, latency, exc, deadline) -> int:
        s = self.settings
        if attempt >= s.max_retries:
            self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, f"failed:{kind}", self._format))
            raise LLMUnavailableError(
                f"LLM server at {s.base_url} failed ({kind}) after {attempt + 1} attempts: {_brief(exc)}") from exc
        self.ledger.entries.append(LedgerEntry(role, 0, 0, latency, f"retry:{kind}", self._format))
        pause = s.backoff_s * (2 ** attempt)
        remaining = deadline - time.monotonic()
        if pause >= remaining:  # sleeping past the deadline would only delay the same answer
            self.ledger.entries.append(LedgerEntry(role, 0, 0, 0.0, "failed:deadline", self._format, sent=False))
            raise LLMDeadlineError(f"LLM call to {s.base_url} cannot retry ({kind}) within its "
                                   f"{s.deadline_s:g} s deadline after {attempt + 1} attempt(s)") from exc
        self._sleep(pause)
        return attempt + 1


def _brief(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
