"""The model string is dispatched on through the transition components (``models/transitions``):
no module outside them branches on ``"hazard"``/``"windowed"``, and what a component says
(``params``, ``options``, ``filter_fields``, ``summary``) drives the fit, diagnose, CLI and
sensitivity code, so a third transition is one new module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beliefgate.models import transitions as T

ROOT = Path(__file__).resolve().parents[1] / "beliefgate"
DISPATCHED = ("models/skill_model.py", "models/fit.py", "models/diagnose.py", "models/cli.py",
              "eval/sensitivity/ranges.py")
BRANCH = re.compile(r"""(==|!=)\s*["'](hazard|windowed)["']|["'](hazard|windowed)["']\s*(==|!=|in\b)"""
                    r"""|Literal\[\s*["'](hazard|windowed)""")


@pytest.mark.parametrize("rel", DISPATCHED)
def test_no_model_string_branches_left(rel):
    text = (ROOT / rel).read_text()
    assert not BRANCH.findall(text), BRANCH.findall(text)


def test_branch_pattern_catches_the_old_forms():
    for old in ('if model == "windowed":', "if self.model == 'hazard' and", 'Literal["hazard", "windowed"]',
                '"windowed" in models'):
        assert BRANCH.search(old), old


def test_components_say_what_applies_to_them():
    assert T.TRANSITION_PARAMS == ("hazard", "alpha")
    assert T.unused_params("hazard") == () and T.unused_params("windowed") == ("hazard",)
    assert T.models_with_option("window") == ("windowed",)
    assert T.models_with_option("hazard") == ()
    with pytest.raises(T.InvalidParameterError, match="unknown filter model 'kappa'"):
        T.unused_params("kappa")


class _Third:
    """A stand-in third transition: registering it is all the fit configuration needs."""

    name = "third"
    summary = "a test transition"
    params = ("alpha", "rho")
    options = ("window",)


def test_a_third_transition_is_picked_up_without_edits(monkeypatch):
    monkeypatch.setitem(T.TRANSITIONS, "third", _Third())
    monkeypatch.setattr(T, "TRANSITION_PARAMS", ("hazard", "alpha", "rho"))
    assert T.unused_params("third") == ("hazard",)
    assert T.unused_params("windowed") == ("hazard", "rho")
    assert T.models_with_option("window") == ("windowed", "third")


def test_filter_params_come_from_the_component():
    import jax.numpy as jnp

    from beliefgate.models.errors import InvalidParameterError
    from beliefgate.models.skill_model import MIN_HAZARD, filter_params

    hz = filter_params("hazard", {"hazard": jnp.asarray(0.0), "alpha": 2.0}, None)
    assert hz.model == "hazard" and float(hz.hazard) == pytest.approx(MIN_HAZARD, rel=1e-6) and hz.alpha == 2.0 and hz.window is None
    wd = filter_params("windowed", {"alpha": 1.0}, 5)
    assert (wd.model, wd.hazard, wd.window) == ("windowed", 0.0, 5)
    with pytest.raises(InvalidParameterError, match="model must be 'hazard' or 'windowed', got 'x'"):
        filter_params("x", {"alpha": 1.0})


def test_fit_config_and_cli_follow_the_components():
    from beliefgate.models.cli import _MODEL_HELP, ModelChoice
    from beliefgate.models.fit import FitConfig, FitConfigError

    assert [m.value for m in ModelChoice] == [*T.MODELS, "kappa", "goal"]
    assert _MODEL_HELP.startswith("hazard (sticky switching) or windowed (paper-faithful segment window) skill")
    with pytest.raises(FitConfigError, match="window applies to the windowed model only"):
        FitConfig(model="hazard", window=3)
    with pytest.raises(FitConfigError, match="the windowed model has no hazard to fix"):
        FitConfig(model="windowed", fixed={"hazard": 0.1})
    with pytest.raises(FitConfigError, match="Input should be 'hazard' or 'windowed'"):
        FitConfig(model="third")
    assert FitConfig(model="windowed", window=4, fixed={"alpha": 1.0}).window == 4
