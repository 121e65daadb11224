"""GateParams, FitConfig and KappaParams raise beliefgate's own errors, never pydantic's.

Every way of building one (constructor, ``replace``, ``model_copy(update=...)``,
``model_validate``, ``model_validate_json``, ``from_json``, ``load``) raises the model's error
class (a :class:`~beliefgate.errors.BeliefgateError` and a ``ValueError``) with one line naming
the field and the bad value; the CLI turns it into one line and exit status 2, the HTTP
service into a 422 naming the field.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from beliefgate.beliefs.config import GateParamError, GateParams
from beliefgate.beliefs.errors import InvalidParameterError
from beliefgate.beliefs.kappa import KappaParamError, KappaParams
from beliefgate.errors import BeliefgateError, InputError
from beliefgate.models.fit import FitConfig, FitConfigError, FitError
from beliefgate.validation import ParamError


def _raises(error, build):
    """The error ``build()`` raises, checked to be ``error`` and never pydantic's."""
    with pytest.raises(error) as info:
        build()
    exc = info.value
    assert not isinstance(exc, ValidationError)
    assert isinstance(exc, BeliefgateError) and isinstance(exc, ValueError) and isinstance(exc, InputError)
    assert "\n" not in str(exc)
    return exc


def _check_field_error(model, error, also, values, field, value):
    """``model(**values)`` raises ``error`` (a ParamError and ``also``) naming ``field`` and ``value``."""
    exc = _raises(error, lambda: model(**values))
    assert isinstance(exc, ParamError) and isinstance(exc, also)
    assert exc.field == field
    assert str(exc).startswith(f"{field}: ") and str(exc).endswith(f", got {value}"), str(exc)


# --------------------------------------------------------------------------- GateParams


@pytest.mark.parametrize("values, field, value", [
    ({"hazard": 2}, "hazard", "2"),
    ({"hazard": -0.5}, "hazard", "-0.5"),
    ({"window": 0}, "window", "0"),
    ({"alpha": 0.0}, "alpha", "0.0"),
    ({"cooldown": -1}, "cooldown", "-1"),
    ({"model": "hmm"}, "model", "'hmm'"),
    ({"gate": "nope"}, "gate", "'nope'"),
    ({"likelihood_scale": float("nan")}, "likelihood_scale", "nan"),
    ({"bogus": 1}, "bogus", "1"),
])
def test_gate_params_bad_value_names_the_field_and_value(values, field, value):
    _check_field_error(GateParams, GateParamError, InvalidParameterError, values, field, value)


def test_gate_params_message_example():
    exc = _raises(GateParamError, lambda: GateParams(hazard=2))
    assert str(exc) == "hazard: Input should be less than or equal to 1, got 2"
    assert exc.reason == "Input should be less than or equal to 1"


def test_gate_params_joint_rule_is_named_after_the_model():
    """Flat keys: the rule of the whole, in the flat names; nested: the rule of its part."""
    exc = _raises(GateParamError, lambda: GateParams(cp_release=0.9, cp_threshold=0.5))
    assert exc.field is None
    assert str(exc) == "GateParams: cp_release (0.9) must not exceed cp_threshold (0.5)"
    nested = _raises(GateParamError, lambda: GateParams(gate={"changepoint": {"release": 0.9, "threshold": 0.5}}))
    assert nested.field == "gate.changepoint"
    assert str(nested) == "gate.changepoint: release (0.9) must not exceed threshold (0.5)"


def test_gate_params_several_errors_are_counted():
    exc = _raises(GateParamError, lambda: GateParams(hazard=2, window=0, cooldown=-1))
    assert str(exc).startswith("hazard: ") and str(exc).endswith("(and 2 more errors)")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize("how", ["replace", "model_copy", "model_validate", "model_validate_json",
                                 "from_json", "load"])
def test_every_gate_params_path_raises_gate_param_error(how, nested, tmp_path):
    """A bad value is named as it was given: its flat key (an older file), or its path in the parts."""
    from beliefgate.beliefs.config import flat_values

    good = GateParams(filter={"hazard": 0.1})
    if nested:
        bad = good.model_dump()
        bad["filter"]["hazard"] = 3.0
    else:
        bad = {**flat_values(good), "hazard": 3.0}
    field = "filter.hazard" if nested else "hazard"
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    build = {
        "replace": lambda: good.replace(**({"filter": {"hazard": 3.0}} if nested else {"hazard": 3.0})),
        "model_copy": lambda: good.model_copy(update={"filter": {"hazard": 3.0}} if nested else {"hazard": 3.0}),
        "model_validate": lambda: GateParams.model_validate(bad),
        "model_validate_json": lambda: GateParams.model_validate_json(json.dumps(bad)),
        "from_json": lambda: GateParams.from_json(json.dumps(bad)),
        "load": lambda: GateParams.load(path),
    }[how]
    exc = _raises(GateParamError, build)
    assert exc.field == field and str(exc) == f"{field}: Input should be less than or equal to 1, got 3.0"


def test_gate_params_unreadable_json_is_a_gate_param_error():
    exc = _raises(GateParamError, lambda: GateParams.from_json("{"))
    assert str(exc).startswith("GateParams: Invalid JSON")


def test_gate_params_good_paths_still_work(tmp_path):
    p = GateParams(hazard=0.3, gate="either")
    assert p.replace(cooldown=2).cooldown == 2 and p.replace(cooldown=2).hazard == 0.3
    assert p.model_copy(update={"tau_obs": 0.4}).tau_obs == 0.4
    assert p.model_copy() == p
    assert GateParams.model_validate(p.model_dump()) == p == GateParams.from_json(p.to_json())
    assert GateParams.load(p.save(tmp_path / "p.json")) == p
    assert GateParams.model_validate(p) is p


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_nested_gate_params_keep_pydantic_field_errors():
    """A request body's ``params`` is validated by pydantic itself: per-field locations, named as
    the value was sent (its path in the parts, or its deprecated flat key)."""
    from beliefgate.serve.schemas import CreateSessionRequest

    for params, loc in (({"hazard": 2.0}, ("params", "hazard")), ({"filter": {"hazard": 2.0}}, ("params", "filter", "hazard"))):
        with pytest.raises(ValidationError) as info:
            CreateSessionRequest.model_validate({"num_skills": 2, "params": params})
        assert info.value.errors()[0]["loc"] == loc


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_http_bad_gate_params_is_422_naming_the_field():
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from beliefgate.serve.app import create_app

    with TestClient(create_app()) as client:
        r = client.post("/v1/sessions", json={"num_skills": 2, "params": {"hazard": 2.0}})
        assert r.status_code == 422, r.text
        assert "params.hazard" in r.text and "less than or equal to 1" in r.text
        r = client.post("/v1/sessions", json={"num_skills": 2, "params": {"filter": {"hazard": 2.0}}})
        assert r.status_code == 422 and "params.filter.hazard" in r.text
        r = client.post("/v1/sessions", json={"num_skills": 2, "params": {"bogus": 1}})
        assert r.status_code == 422 and "params.bogus" in r.text
        assert client.post("/v1/sessions", json={"num_skills": 2, "params": {"hazard": 0.2}}).status_code < 300


# --------------------------------------------------------------------------- FitConfig


@pytest.mark.parametrize("values, field, value", [
    ({"num_warmup": -1}, "num_warmup", "-1"),
    ({"warmup": -1}, "warmup", "-1"),
    ({"chains": 0}, "chains", "0"),
    ({"target_accept": 1.0}, "target_accept", "1.0"),
    ({"method": "mcmc"}, "method", "'mcmc'"),
])
def test_fit_config_bad_value_names_the_field_and_value(values, field, value):
    _check_field_error(FitConfig, FitConfigError, FitError, values, field, value)


def test_fit_config_rules_and_other_paths():
    exc = _raises(FitConfigError, lambda: FitConfig(fixed={"gamma": 1.0}))
    assert exc.field == "fixed" and "cannot fix unknown parameter" in str(exc)
    exc = _raises(FitConfigError, lambda: FitConfig(window=3))
    assert exc.field is None and str(exc) == "FitConfig: window applies to the windowed model only"
    good = FitConfig(draws=10)
    _raises(FitConfigError, lambda: good.replace(draws=0))
    _raises(FitConfigError, lambda: good.model_copy(update={"draws": 0}))
    _raises(FitConfigError, lambda: FitConfig.model_validate({"draws": 0}))
    _raises(FitConfigError, lambda: FitConfig.model_validate_json('{"draws": 0}'))
    assert FitConfig.model_validate(good.model_dump()) == good and good.replace(draws=20).draws == 20


# --------------------------------------------------------------------------- KappaParams (shared helper)


def test_kappa_params_use_the_same_message():
    exc = _raises(KappaParamError, lambda: KappaParams(theta=1.5))
    assert exc.field == "theta" and str(exc) == "theta: Input should be less than or equal to 1, got 1.5"
    _raises(KappaParamError, lambda: KappaParams.model_validate({"theta": 1.5}))
    _raises(KappaParamError, lambda: KappaParams().model_copy(update={"theta": 1.5}))


# --------------------------------------------------------------------------- the CLI: one line, exit 2


def _cli(*args):
    from beliefgate.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_exit_2(result, *words):
    assert result.exit_code == 2, (result.exit_code, result.output)
    text = result.output.strip()
    assert "Traceback" not in text and "validation error" not in text, text
    assert len(text.splitlines()) == 1, text
    for w in words:
        assert w in text, text
    return text


def test_cli_sensitivity_base_with_bad_gate_params(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"hazard": 2}), encoding="utf-8")
    result = _cli("sensitivity", "oat", tmp_path, "--base", base, "--param", "cooldown=0:10:3")
    _one_line_exit_2(result, "--base", "hazard: Input should be less than or equal to 1, got 2")


def test_cli_sensitivity_closed_loop_grid_gate_override(tmp_path):
    import yaml

    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "name": "g", "agents": ["bayes-belief:full"], "layouts": ["cramped_room"],
        "partners": ["switch-sourcer-to-plater"], "seeds": [0], "seats": [0], "horizon": 20,
        "gate": {"hazard": 2}}), encoding="utf-8")
    result = _cli("sensitivity", "oat", "--closed-loop", grid, "--param", "cooldown=0:10:2",
                  "--out", tmp_path / "out", "--workers", "1")
    _one_line_exit_2(result, "hazard", "less than or equal to 1", "got 2")
    assert not (tmp_path / "out").exists()


def test_cli_fit_bad_config_is_one_line(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_text("", encoding="utf-8")
    result = _cli("fit", log, "--out", tmp_path / "fit.nc", "--fix", "gamma=1")
    _one_line_exit_2(result, "fixed: cannot fix unknown parameter")
    result = _cli("fit", log, "--out", tmp_path / "fit.nc", "--window", "3")
    _one_line_exit_2(result, "window applies to the windowed model only")


def test_console_script_switches_params_is_one_line_without_traceback(tmp_path):
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"gate": {"stable_map": {"cooldown": -3}}}), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "beliefgate.cli", "switches", "--params", str(params)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "gate.stable_map.cooldown: Input should be greater than or equal to 0, got -3" in err



# --------------------------------------------------------------------------- every config/spec model: one base, one message


def _grid():
    return {"agents": ["periodic-10"], "layouts": ["cramped_room"], "partners": ["plater"], "seeds": [0],
            "seats": [0], "horizon": 10}


def _checked_models():
    """``(model, a valid mapping, the error an unknown field raises)`` for every configuration
    and specification model of the package."""
    from beliefgate.agents.hypothetical_minds import HypothesisConfig
    from beliefgate.agents.overforge.config import OverForgeConfig, OverForgeOptionError
    from beliefgate.agents.planning import AgentConfigError, JudgeConfig, PeriodicConfig
    from beliefgate.envs.overcooked.partners import PartnerSpec, PartnerStyle, SwitchSpec, UnknownPartnerFieldError
    from beliefgate.eval.grid import GridError, GridSpec, LLMConfig, PartnerEntry, SeedRange
    from beliefgate.models.kappa import KappaFitConfig, KappaFitConfigError
    from beliefgate.policytree.learn import LearnConfig, LearnConfigError
    from beliefgate.serve.settings import ServeSettings, ServeSettingsError
    from beliefgate.viewer.play import PlaySettings, PlaySettingsError

    return [
        (GateParams, {}, GateParamError),
        (KappaParams, {}, KappaParamError),
        (FitConfig, {}, FitConfigError),
        (KappaFitConfig, {}, KappaFitConfigError),
        (OverForgeConfig, {}, OverForgeOptionError),
        (GridSpec, _grid(), GridError),
        (SeedRange, {"count": 2}, GridError),
        (PartnerEntry, {"name": "plater"}, GridError),
        (LLMConfig, {"base_url": "http://x", "model": "m"}, GridError),
        (PartnerSpec, {"name": "p", "styles": {"a": {}}}, UnknownPartnerFieldError),
        (PartnerStyle, {}, UnknownPartnerFieldError),
        (SwitchSpec, {"window": [1, 2], "to": "a"}, UnknownPartnerFieldError),
        (ServeSettings, {}, ServeSettingsError),
        (PlaySettings, {"log": "logs/"}, PlaySettingsError),
        (LearnConfig, {"layout": "cramped_room", "partner": "balanced"}, LearnConfigError),
        (PeriodicConfig, {}, AgentConfigError),
        (JudgeConfig, {}, AgentConfigError),
        (HypothesisConfig, {}, AgentConfigError),
    ]


@pytest.mark.parametrize("index", range(18))
def test_every_config_model_is_checked_and_names_an_unknown_field(index):
    """One contract over every model: a CheckedModel, valid data builds it, and an unknown field
    is its own one-line error (never pydantic's) naming the field, the value and the fields it has,
    whichever way it is built."""
    from beliefgate.validation import CheckedModel

    model, good, error = _checked_models()[index]
    assert issubclass(model, CheckedModel)
    assert model.from_data(good) == model(**good) == model.model_validate(good)
    for build in (lambda: model(**good, bogus_field=7), lambda: model.model_validate({**good, "bogus_field": 7}),
                  lambda: model.from_data({**good, "bogus_field": 7})):
        exc = _raises(error, build)
        assert exc.field == "bogus_field", str(exc)
        assert f"bogus_field: unknown field (fields: {', '.join(model.model_fields)}), got 7" in str(exc)
    exc = _raises(error, lambda: model.from_data({**good, "bogus_field": 7}, "some.yaml"))
    assert str(exc).startswith("some.yaml: bogus_field: unknown field")


def _settings_cases():
    """``(model, values, the model's own error, field, value)``: one bad value of every settings and
    agent-option model that used to be a dataclass or a plain pydantic model with checks of its own."""
    from beliefgate.agents.hypothetical_minds import HypothesisConfig
    from beliefgate.agents.planning import AgentConfigError, JudgeConfig, PeriodicConfig
    from beliefgate.policytree.learn import LearnConfig, LearnConfigError
    from beliefgate.serve.settings import ServeSettings, ServeSettingsError
    from beliefgate.viewer.play import PlaySettings, PlaySettingsError

    learn = {"layout": "cramped_room", "partner": "balanced"}
    return [
        (ServeSettings, {"max_sessions": 0}, ServeSettingsError, "max_sessions", "0"),
        (ServeSettings, {"ttl_s": float("inf")}, ServeSettingsError, "ttl_s", "inf"),
        (ServeSettings, {"max_body_bytes": 10}, ServeSettingsError, "max_body_bytes", "10"),
        (ServeSettings, {"body_timeout_s": 0.0}, ServeSettingsError, "body_timeout_s", "0.0"),
        (ServeSettings, {"token": "  "}, ServeSettingsError, "token", "'  '"),
        (PlaySettings, {"tick_hz": 100}, PlaySettingsError, "tick_hz", "100"),
        (PlaySettings, {"human_seat": 2}, PlaySettingsError, "human_seat", "2"),
        (PlaySettings, {"queue": 0}, PlaySettingsError, "queue", "0"),
        (PlaySettings, {"log": ""}, PlaySettingsError, "log", "''"),
        (PlaySettings, {"third": "balanced"}, PlaySettingsError, "third", "'balanced'"),
        (LearnConfig, {**learn, "rollouts": 0}, LearnConfigError, "rollouts", "0"),
        (LearnConfig, {**learn, "start": "magic"}, LearnConfigError, "start", "'magic'"),
        (LearnConfig, {**learn, "repairs": 6}, LearnConfigError, "repairs", "6"),
        (PeriodicConfig, {"period": 0}, AgentConfigError, "period", "0"),
        (JudgeConfig, {"duplicate_confidence": 1.5}, AgentConfigError, "duplicate_confidence", "1.5"),
        (HypothesisConfig, {"top_m": 21}, AgentConfigError, "top_m", "21"),
    ]


@pytest.mark.parametrize("index", range(16))
def test_every_settings_model_raises_its_own_error_naming_the_field_and_value(index):
    """The service's, the play page's, the policy-tree run's and the agents' options: a bad value is
    the model's own error class (an InputError, so ``except ValueError`` callers still catch it) in
    one line from the one formatter, whichever way the model is built, and a frozen model stays frozen."""
    model, values, error, field, value = _settings_cases()[index]
    for build in (lambda: model(**values), lambda: model.model_validate(values), lambda: model.from_data(values)):
        exc = _raises(error, build)
        assert type(exc) is error and exc.field == field, (type(exc), str(exc))
        assert str(exc).startswith(f"{field}: ") and str(exc).endswith(f", got {value}"), str(exc)
    good = model(**{k: v for k, v in values.items() if k != field})
    _raises(error, lambda: good.replace(**{field: values[field]}))
    with pytest.raises(error):
        setattr(good, field, values[field])


def test_settings_models_keep_their_derived_fields_and_call_shapes(tmp_path):
    from beliefgate.agents.planning import LLMJudgeAgent, PeriodicAgent
    from beliefgate.policytree.learn import LearnConfig
    from beliefgate.serve.settings import ServeSettings
    from beliefgate.viewer.play import PlaySettings

    assert PlaySettings().log_is_dir and PlaySettings(log=f"{tmp_path}/new/").log_is_dir  # a trailing slash
    assert PlaySettings(log=tmp_path).log_is_dir and not PlaySettings(log=tmp_path / "g.jsonl").log_is_dir
    assert PlaySettings(log=f"{tmp_path}/new/").log == tmp_path / "new"
    assert PlaySettings(log=f"{tmp_path}/new/").model_copy().log_is_dir
    assert PlaySettings(layout="cramped_room").agent_seat == 0
    cfg = LearnConfig("cramped_room", "balanced", rollouts=3)
    assert cfg == LearnConfig(layout="cramped_room", partner="balanced", rollouts=3)
    assert cfg.to_dict()["rollouts"] == 3 and LearnConfig.model_validate(cfg.to_dict()) == cfg
    with pytest.raises(TypeError):
        LearnConfig("cramped_room", "balanced", partner="plater")
    assert ServeSettings(ttl_s=None).sweep_interval() is None and ServeSettings(ttl_s=8.0).sweep_interval() == 2.0
    assert PeriodicAgent(period=7).config.period == 7 and LLMJudgeAgent(every=3).every == 3


def test_kappa_fit_config_lists_every_bad_field():
    from beliefgate.models.kappa import KappaFitConfig, KappaFitConfigError, KappaFitError

    exc = _raises(KappaFitConfigError, lambda: KappaFitConfig(fixed={"gamma": 1.0}, chains=0))
    assert isinstance(exc, KappaFitError) and isinstance(exc, ParamError) and exc.field == "fixed"
    assert str(exc) == ("fixed: cannot fix unknown kappa parameter(s) ['gamma']; known: ['mu0', 'sigma0', 'tau', "
                        "'sigma_r'], got {'gamma': 1.0}; chains: Input should be greater than or equal to 1, got 0")
    exc = _raises(KappaFitConfigError, lambda: KappaFitConfig(fixed={"tau": 1e9}))
    assert "fixed tau must lie in [1e-06, 1e+06]" in str(exc)
    _raises(KappaFitConfigError, lambda: KappaFitConfig().replace(method="mcmc"))
    _raises(KappaFitConfigError, lambda: KappaFitConfig.model_validate_json('{"draws": 0}'))


def test_a_kappa_fit_with_a_damaged_config_is_a_kappa_fit_error():
    import arviz as az

    from beliefgate.models.kappa import KAPPA_FIT_FILE, KappaFitError, kappa_fit_config

    idata = az.from_dict(posterior={"tau": [[0.5, 0.6]]})
    KAPPA_FIT_FILE.stamp(idata, {"format": "beliefgate.kappa_fit/1", "model": "kappa", "config": {"chains": -1}})
    exc = _raises(KappaFitError, lambda: kappa_fit_config(idata))
    assert str(exc) == "chains: Input should be greater than or equal to 1, got -1"


def test_overforge_options_through_the_same_message():
    from beliefgate.agents.overforge.config import OverForgeConfig, OverForgeOptionError, parse_option

    exc = _raises(OverForgeOptionError, lambda: parse_option("k=0,-belief"))
    assert exc.field == "k"
    assert str(exc) == "overforge option 'k=0,-belief': k: Input should be greater than or equal to 1, got 0"
    exc = _raises(OverForgeOptionError, lambda: OverForgeConfig(theta=0.0))
    assert str(exc) == "theta: Input should be greater than 0, got 0.0"
    _raises(OverForgeOptionError, lambda: OverForgeConfig().replace(rounds=11))


def test_grid_and_partner_files_list_every_error_after_the_source():
    from beliefgate.envs.overcooked.partners import PartnerWeightError, parse_partner
    from beliefgate.eval.grid import GridError, parse_grid

    exc = _raises(GridError, lambda: parse_grid({**_grid(), "seats": [9], "horizon": 0}, "g.yaml"))
    assert str(exc) == ("g.yaml: seats: seats must be player slots in 0..8 (the ego's seat), got [9]; "
                        "horizon: Input should be greater than or equal to 1, got 0")
    exc = _raises(GridError, lambda: parse_grid({"agents": ["periodic-10"]}, "g.yaml"))
    assert str(exc) == ("g.yaml: layouts: Field required; partners: Field required; seeds: Field required; "
                        "seats: Field required; horizon: Field required")
    exc = _raises(GridError, lambda: parse_grid({**_grid(), "llm": {"base_url": "http://x", "model": "m", "key": 1}}))
    assert "llm.key: unknown field (fields: base_url, model," in str(exc)
    exc = _raises(PartnerWeightError, lambda: parse_partner(
        {"name": "p", "styles": {"a": {"weights": {"pickup_dish": -1}}}, "noise": 2}, "p.yaml"))
    assert str(exc).startswith("p.yaml: styles.a.weights: pickup_dish: weight -1 is outside [0, 100], got ")
    assert "; noise: Input should be less than or equal to 1, got 2" in str(exc)


# --------------------------------------------------------------------------- the one formatter itself


def test_describe_finds_the_model_of_an_unknown_field_through_containers():
    from typing import Dict, List, Optional, Union

    from pydantic import BaseModel, ConfigDict

    from beliefgate.validation import describe, fields_at, param_error

    class Leaf(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str
        size: int = 0

    class Root(BaseModel):
        model_config = ConfigDict(extra="forbid")
        items: List[Union[str, Leaf]] = []
        table: Dict[str, Leaf] = {}
        one: Optional[Leaf] = None

    assert fields_at(Root, ("items", 0, "Leaf", "x")) == ["name", "size"]
    assert fields_at(Root, ("table", "items", "x")) == ["name", "size"]  # a key that is also a field name
    assert fields_at(Root, ("one", "x")) == ["name", "size"]
    assert fields_at(Root, ("x",)) == ["items", "table", "one"]
    assert fields_at(Root, ("one", "name", "x")) == [] and fields_at(None, ("x",)) == []
    with pytest.raises(ValidationError) as info:
        Root.model_validate({"one": {"name": "a", "colour": 1}, "table": {"t": {"size": 2.5}}})
    exc = info.value
    first = describe(exc, "Root", model=Root)
    assert first.field == "table.t.name" and first.message == "table.t.name: Field required (and 2 more errors)"
    every = describe(exc, "Root", model=Root, all_errors=True, source="f.json")
    assert every.message == ("f.json: table.t.name: Field required; table.t.size: Input should be a valid integer, "
                             "got a number with a fractional part (2.5); "  # pydantic's "got": the value after it
                             "one.colour: unknown field (fields: name, size), got 1")

    class Unknown(ParamError):
        pass

    err = param_error(exc, ParamError, "Root", model=Root, kinds={"extra_forbidden": Unknown})
    assert type(err) is Unknown and err.field == "table.t.name" and err.reason == "Field required"
    assert type(param_error(exc, ParamError, "Root")) is ParamError
