"""The interface every chat model sits behind, and the one way planners and agents ask it.

Shaped like openai-agents' ``models/interface.py``: a :class:`ChatModel` answers one
request (system instructions, input messages, an optional output schema) with a
:class:`ModelResponse`. It is synchronous (an episode step waits for its answer) and takes a
``role`` (``planner``, ``judge``, ``hypothesis``) so its ledger can count per role.
:class:`~beliefgate.planners.client.LLMClient` is the implementation over an injected
``openai.OpenAI`` client; a test or another provider implements :meth:`ChatModel.get_response`.

:func:`ask` is the single path by which the LLM planner, the LLM judge and Hypothetical
Minds call a model: it renders nothing, it sends, parses, re-asks up to ``reasks`` times,
and returns an :class:`Asked` whose ``fallback`` says (role, reason, detail) why there is
no usable value. It never raises for a model or server fault, so no caller needs an
``except``; a caller counts the fallback (:class:`~beliefgate.planners.fallbacks.FallbackLog`)
and carries on with its offline rule.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, TypeVar, Union

from beliefgate.planners.errors import ModelOutputError, PlannerConfigError, PlannerError
from beliefgate.planners.fallbacks import Fallback

Message = Dict[str, str]
T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    """Tokens of one answer (0 when the server does not say, or for a cache hit)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ModelResponse:
    """One answer: its text, its usage, the structured-output form it was asked in, and whether it
    came from the cache."""

    text: str
    usage: Usage = field(default_factory=Usage)
    response_format: str = "text"
    cached: bool = False


class ChatModel(abc.ABC):
    """A chat model planners can ask.

    Implementations raise a :class:`~beliefgate.planners.errors.PlannerError` subclass for
    every fault (its ``reason`` names the fallback): :class:`ModelOutputError` for a reply
    that is not a chat completion, :class:`~beliefgate.planners.errors.LLMUnavailableError`
    (and its ``deadline``/``budget``/``breaker_open``/``rejected`` kinds) for a server that
    did not answer.
    """

    @abc.abstractmethod
    def get_response(self, system_instructions: Optional[str], input: Union[str, Sequence[Message]], *,
                     role: str = "planner", output_schema: Optional[Dict[str, Any]] = None) -> ModelResponse:
        """Answer ``input`` (a user message, or a list of chat messages) under ``system_instructions``.

        ``output_schema`` is a JSON schema the answer should follow (servers that honour one
        constrain decoding to it); ``role`` labels the call in the ledger.
        """

    def start_episode(self) -> None:
        """Called by the episode runner before the first step (resets per-episode budgets)."""

    def describe(self) -> Dict[str, Any]:
        """What the episode log's header records about this model (``llm_model`` at least)."""
        return {"llm_model": type(self).__name__}

    def usage_summary(self) -> Dict[str, Any]:
        """Counters for the episode summary's ``llm`` block (requests, failures...); none by default."""
        return {}

    def chat(self, messages: Sequence[Message], role: str = "planner",
             schema: Optional[Dict[str, Any]] = None) -> str:
        """The text of one answer to ``messages`` (convenience over :meth:`get_response`)."""
        return self.get_response(None, messages, role=role, output_schema=schema).text


def to_messages(system_instructions: Optional[str], input: Union[str, Sequence[Message]]) -> List[Message]:
    """The chat messages of a request: the system message (if any), then the input."""
    messages: List[Message] = [{"role": "system", "content": system_instructions}] if system_instructions else []
    if isinstance(input, str):
        messages.append({"role": "user", "content": input})
    else:
        messages.extend(dict(m) for m in input)
    return messages


@dataclass(frozen=True)
class Asked(Generic[T]):
    """What :func:`ask` got: the parsed ``value`` (None on a fallback), the last raw reply, how
    many model answers were spent, and the fallback when there is no value."""

    value: Optional[T]
    reply: str = ""
    answers: int = 0
    fallback: Optional[Fallback] = None

    @property
    def ok(self) -> bool:
        return self.fallback is None


def ask(model: ChatModel, messages: Sequence[Message], parse: Callable[[str], T], *, role: str,
        output_schema: Optional[Dict[str, Any]] = None, reasks: int = 0,
        reask: Optional[Callable[[str, ModelOutputError], str]] = None) -> Asked[T]:
    """Ask ``model``, parse the reply with ``parse``; on a :class:`ModelOutputError` re-ask up to
    ``reasks`` times (``reask(reply, error)`` is the follow-up user message); never raises for a
    model or server fault.

    A server fault ends the call at once (the client has already retried what is worth
    retrying) with the error's ``reason``; ``reasks + 1`` unusable replies end it with
    ``unusable_reply``.
    """
    if reasks < 0:
        raise PlannerConfigError(f"reasks must be >= 0, got {reasks}")
    history = list(messages)
    reply, answers = "", 0
    last: Optional[ModelOutputError] = None
    for _ in range(reasks + 1):
        try:
            reply = model.get_response(None, history, role=role, output_schema=output_schema).text
        except PlannerError as exc:
            return Asked(None, reply, answers, Fallback(role, exc.reason, _one_line(exc)))
        answers += 1
        try:
            return Asked(parse(reply), reply, answers)
        except ModelOutputError as exc:
            last = exc
            if reask is None:
                break
            history = history + [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": reask(reply, exc)}]
    detail = f"no usable answer after {answers} replies" + (f": {_one_line(last)}" if last is not None else "")
    return Asked(None, reply, answers, Fallback(role, "unusable_reply", detail))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300]
