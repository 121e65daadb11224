"""Planner-layer errors: the model misbehaved vs the caller misused the API vs no server.

Every error a model call can end in carries a ``reason``: the name under which the
fallback it causes is counted (:data:`FALLBACK_REASONS`), in the episode log, the metrics
and ``beliefgate eval report``.
"""

from __future__ import annotations

from beliefgate.errors import BeliefgateError, InputError, RuntimeFailure

#: every reason a model call can fall back for, in report order
FALLBACK_REASONS = ("unusable_reply", "bad_response", "unavailable", "rejected", "deadline", "budget",
                    "breaker_open", "other")


class PlannerError(BeliefgateError):
    """Base class of planner-layer errors."""

    reason = "unavailable"


class ModelOutputError(PlannerError, RuntimeFailure):
    """The model's reply could not be read as one of the allowed answers (``reason="unusable_reply"``),
    or the server's 200 answer was not a chat completion at all (``reason="bad_response"``)."""

    def __init__(self, message: str, reply: str = "", reason: str = "unusable_reply"):
        super().__init__(message)
        self.reply = reply
        self.reason = reason


class PlannerConfigError(PlannerError, InputError):
    """The caller configured the planner or client wrongly (missing model, bad URL, bad template)."""

    reason = "rejected"


class LLMUnavailableError(PlannerError, RuntimeFailure):
    """The LLM server could not be reached or kept failing after the bounded retries."""

    reason = "unavailable"


class LLMRejectedError(LLMUnavailableError):
    """The server refused the request for good (HTTP 4xx other than a rate limit); not retried."""

    reason = "rejected"


class LLMDeadlineError(LLMUnavailableError):
    """The call's wall-clock deadline (all attempts and back-off included) passed."""

    reason = "deadline"


class LLMBudgetError(LLMUnavailableError):
    """The episode's LLM time budget is spent; the call was not sent."""

    reason = "budget"


class CircuitOpenError(LLMUnavailableError):
    """The circuit breaker is open after consecutive failures; the call was not sent."""

    reason = "breaker_open"
