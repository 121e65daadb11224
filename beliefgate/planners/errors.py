"""Planner-layer errors: the model misbehaved vs the caller misused the API vs no server."""

from beliefgate.errors import BeliefgateError


class PlannerError(BeliefgateError):
    """Base class of planner-layer errors."""


class ModelOutputError(PlannerError):
    """The model's reply could not be read as one of the allowed answers."""

    def __init__(self, message: str, reply: str = ""):
        super().__init__(message)
        self.reply = reply


class PlannerConfigError(PlannerError, ValueError):
    """The caller configured the planner or client wrongly (missing model, bad URL, bad template)."""


class LLMUnavailableError(PlannerError):
    """The LLM server could not be reached or kept failing after the bounded retries."""
