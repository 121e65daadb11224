"""GateParams in three parts (filter, controller, gate): the nested form round-trips, every flat
key of the earlier one-level form still loads (with one DeprecationWarning naming its new path) to
the same values as the nested form, one value given both ways is an error, an unknown key is
named, an older trajectory log's flat ``gate_params`` still matches its grid, and the service
accepts both request shapes."""

from __future__ import annotations

import json
import logging
import warnings

import pytest

from beliefgate.beliefs.config import (FLAT_KEY_LOADS, FLAT_KEYS, ChangePointPart, ControllerPart, CusumPart,
                                       FilterPart, GateParamError, GateParams, GatePart, StableMapPart, flat_path,
                                       flat_values, flatten)

#: a value other than the default for every flat key (so that a key mapped to the wrong field,
#: or dropped, shows)
OTHER = {
    "model": "windowed", "hazard": 0.2, "window": 3, "alpha": 2.5, "beta": 1.5, "epsilon": 0.2,
    "gate": "either", "tau_obs": 0.3, "likelihood_scale": 2.0, "confidence_floor": 0.6, "n_stable": 2,
    "cooldown": 3, "reference": "action", "cp_horizon": 9, "cp_threshold": 0.4, "cp_release": 0.1,
    "cp_cooldown": 2, "cusum_h": 2.5, "track_changepoint": True,
}


def _nested(values: dict) -> dict:
    """The nested mapping of flat ``values``, built from the documented paths."""
    out: dict = {}
    for key, value in values.items():
        *parts, leaf = flat_path(key).split(".")
        node = out
        for name in parts:
            node = node.setdefault(name, {})
        node[leaf] = value
    return out


def _no_deprecation(build):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = build()
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)], [str(w.message) for w in caught]
    return out


def test_other_values_cover_every_flat_key_and_differ_from_the_defaults():
    assert set(OTHER) == set(FLAT_KEYS)
    defaults = flat_values(GateParams())
    assert all(OTHER[k] != defaults[k] for k in FLAT_KEYS)


def test_nested_round_trip(tmp_path):
    p = GateParams(
        filter=FilterPart(model="windowed", hazard=0.2, window=3, alpha=2.5),
        controller=ControllerPart(beta=1.5, epsilon=0.2),
        gate=GatePart(kind="either", stable_map=StableMapPart(tau_obs=0.3, reference="action"),
                      changepoint=ChangePointPart(horizon=9, threshold=0.4, release=0.1, cooldown=2),
                      cusum=CusumPart(h=2.5), track_changepoint=True))
    data = json.loads(p.to_json())
    assert set(data) == {"filter", "controller", "gate"}
    assert data["gate"]["changepoint"] == {"horizon": 9, "threshold": 0.4, "release": 0.1, "cooldown": 2}
    assert _no_deprecation(lambda: GateParams.from_json(p.to_json())) == p
    assert _no_deprecation(lambda: GateParams.load(p.save(tmp_path / "p.json"))) == p
    assert _no_deprecation(lambda: GateParams.model_validate(p.model_dump())) == p
    assert _no_deprecation(lambda: GateParams(**json.loads(p.to_json()))) == p
    # parts given as mappings are the same parts
    assert GateParams(**data) == GateParams.model_validate(data) == p


@pytest.mark.parametrize("key", list(FLAT_KEYS))
def test_every_flat_key_loads_with_a_warning_to_the_nested_value(key, tmp_path):
    value = OTHER[key]  # valid with every other field at its default
    with pytest.warns(DeprecationWarning, match=f"{key} -> {flat_path(key)}"):
        flat = GateParams(**{key: value})
    nested = _no_deprecation(lambda: GateParams(**_nested({key: value})))
    assert flat == nested and flat_values(flat)[key] == value
    # the view under the flat name reads the part
    read = flat.gate.kind if key == "gate" else getattr(flat, key)
    assert read == value


def test_all_flat_keys_at_once_by_every_load_path(tmp_path, caplog, monkeypatch):
    from beliefgate.beliefs import config

    monkeypatch.setattr(config, "_LOGGED", set())
    nested = GateParams(**_nested(OTHER))
    text = json.dumps(OTHER)
    path = tmp_path / "old.json"
    path.write_text(text, encoding="utf-8")
    before = FLAT_KEY_LOADS["cusum_h"]
    for build in (lambda: GateParams(**OTHER), lambda: GateParams.model_validate(OTHER),
                  lambda: GateParams.from_json(text), lambda: GateParams.load(path),
                  lambda: GateParams.model_validate_json(text)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with caplog.at_level(logging.WARNING, logger="beliefgate.beliefs.config"):
                got = build()
        found = [w for w in caught if issubclass(w.category, DeprecationWarning)]
        assert len(found) == 1, [str(w.message) for w in found]  # one warning naming every key
        assert all(f"{k} -> {flat_path(k)}" in str(found[0].message) for k in FLAT_KEYS)
        assert got == nested
    assert FLAT_KEY_LOADS["cusum_h"] == before + 5  # every load counted
    # the log line names the keys too, once per set of keys and process
    logged = [r for r in caplog.records if r.name == "beliefgate.beliefs.config"]
    assert len(logged) == 1 and all(f"{k} -> {flat_path(k)}" in logged[0].getMessage() for k in FLAT_KEYS)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_flat_and_nested_mix_for_different_values_but_not_for_one():
    both = GateParams(hazard=0.1, filter={"alpha": 2.0}, gate={"kind": "cusum"}, cusum_h=3.0)
    assert (both.filter.hazard, both.filter.alpha, both.gate.kind, both.gate.cusum.h) == (0.1, 2.0, "cusum", 3.0)
    for build in (lambda: GateParams(hazard=0.1, filter={"hazard": 0.2}),
                  lambda: GateParams(cusum_h=3.0, gate={"cusum": {"h": 2.0}}),
                  lambda: GateParams(tau_obs=0.3, gate=GatePart(stable_map=StableMapPart(tau_obs=0.4))),
                  lambda: GateParams.from_json('{"cp_horizon": 3, "gate": {"changepoint": {"horizon": 4}}}'),
                  lambda: GateParams().replace(hazard=0.1, filter={"hazard": 0.2})):
        with pytest.raises(GateParamError) as info:
            build()
        message = str(info.value)
        assert "\n" not in message and "given twice" in message, message
    # a part model's *default* is not "given": flat keys may set it (several into one part too)
    assert GateParams(tau_obs=0.3, gate=GatePart(kind="either")).gate.stable_map.tau_obs == 0.3
    mixed = GateParams(filter=FilterPart(alpha=2.0), hazard=0.1, window=3)
    assert (mixed.filter.alpha, mixed.filter.hazard, mixed.filter.window) == (2.0, 0.1, 3)


def test_unknown_keys_are_named():
    with pytest.raises(GateParamError) as info:
        GateParams(hazzard=0.1)
    assert str(info.value).startswith("hazzard: unknown field (fields: filter, controller, gate)")
    with pytest.raises(GateParamError) as info:
        GateParams(filter={"hazzard": 0.1})
    assert str(info.value).startswith("filter.hazzard: unknown field (fields: model, hazard, window, alpha)")
    with pytest.raises(GateParamError) as info:
        GateParams().replace(cusum_hh=1.0)
    assert info.value.field == "cusum_hh"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_bad_values_are_named_as_given():
    with pytest.raises(GateParamError, match=r"^cp_horizon: Input should be greater than or equal to 1, got 0$"):
        GateParams(cp_horizon=0)
    with pytest.raises(GateParamError, match=r"^gate\.changepoint\.horizon: Input should be greater"):
        GateParams(gate={"changepoint": {"horizon": 0}})
    with pytest.raises(GateParamError, match=r"^gate: kind='changepoint' needs the change-point statistic"):
        GateParams(gate={"kind": "changepoint", "track_changepoint": False})


def test_replace_takes_parts_and_flat_names_without_a_warning():
    p = GateParams(filter={"alpha": 2.0})
    q = _no_deprecation(lambda: p.replace(hazard=0.3, gate="cusum", cusum_h=2.0))
    assert (q.filter.hazard, q.filter.alpha, q.gate.kind, q.gate.cusum.h) == (0.3, 2.0, "cusum", 2.0)
    r = _no_deprecation(lambda: p.replace(filter={"window": 4}))  # a mapping changes the fields named
    assert (r.filter.alpha, r.filter.window) == (2.0, 4)
    s = p.replace(filter=FilterPart(window=4))  # a part replaces the part
    assert (s.filter.alpha, s.filter.window) == (1.0, 4)
    assert p.model_copy(update={"tau_obs": 0.5}).gate.stable_map.tau_obs == 0.5
    with pytest.raises(GateParamError, match=r"^cp_release: Input should be less than or equal to 1"):
        p.replace(cp_release=2.0)
    with pytest.raises(GateParamError, match="Instance is frozen"):
        p.hazard = 0.2  # a view, not a field to assign


def test_parts_build_the_gate_configs():
    p = GateParams(**_nested(OTHER))
    fp = p.filter_params()
    assert (fp.model, fp.hazard, fp.alpha, fp.window) == ("windowed", 0.2, 2.5, 3)
    cp = p.changepoint_config()
    assert (cp.hazard, cp.horizon, cp.threshold, cp.release, cp.cooldown) == (0.2, 9, 0.4, 0.1, 2)
    assert p.cusum_config().h == 2.5
    sm = p.stable_map_config()
    assert (sm.confidence_floor, sm.n_stable, sm.cooldown) == (0.6, 2, 3)
    for part in (FilterPart, ControllerPart, GatePart, StableMapPart, ChangePointPart, CusumPart):
        assert part.__doc__ and part.model_config.get("frozen") and part.model_config.get("extra") == "forbid"


def test_field_info_and_flatten():
    assert GateParams.field_info("cp_horizon") is GateParams.field_info("gate.changepoint.horizon")
    assert GateParams.field_info("hazard").default == 0.05
    with pytest.raises(GateParamError):
        GateParams.field_info("nope")
    assert flatten({"filter": {"hazard": 0.1}, "gate": {"kind": "cusum", "cusum": {"h": 3}}, "cooldown": 2}) == \
        {"hazard": 0.1, "gate": "cusum", "cusum_h": 3, "cooldown": 2}


def test_grid_overrides_are_canonical_whichever_form():
    from beliefgate.eval.grid import normalise_gate

    flat = normalise_gate({"hazard": 0.1, "gate": "cusum", "cooldown": 5.0})
    nested = normalise_gate({"filter": {"hazard": 0.1}, "gate": {"kind": "cusum", "stable_map": {"cooldown": 5}}})
    assert flat == nested == {"cooldown": 5, "gate": "cusum", "hazard": 0.1}
    with pytest.raises(GateParamError, match="hazzard"):
        normalise_gate({"hazzard": 0.1})


def test_an_older_log_with_flat_gate_params_still_matches_its_grid(tmp_path):
    """A trajectory log written before the parts carries the flat ``gate_params``: it still reads,
    and the runner takes it as the grid's episode (rescored, not replayed); other values do not."""
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval.grid import parse_grid, resolve_grid
    from beliefgate.eval.runner import inspect_episode, run_grid

    grid = parse_grid({"agents": ["bayes-belief:full"], "layouts": ["cramped_room"], "partners": ["plater"],
                       "seeds": [0], "seats": [0], "horizon": 8, "gate": {"cooldown": 3, "tau_obs": 0.3}})
    resolved = resolve_grid(grid)
    out = tmp_path / "run"
    run_grid(resolved, out)
    spec = resolved.episodes[0]
    log = out / spec.log_name
    lines = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["config"]["gate_params"] == spec.gate_params().model_dump(mode="json")  # nested now
    assert inspect_episode(out, spec).status == "done"

    def rewrite(gate_params: dict) -> None:
        header["config"]["gate_params"] = gate_params
        log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")

    old = json.loads(json.dumps(flat_values(spec.gate_params())))  # the old writer's model_dump
    rewrite(old)
    assert read_log(log).header.config["gate_params"]["cooldown"] == 3
    state = inspect_episode(out, spec)
    assert state.status == "rescore", state.reason
    rewrite({**old, "cooldown": 4})
    state = inspect_episode(out, spec)
    assert state.status == "run" and "other gate parameters" in state.reason


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_service_accepts_flat_and_nested_params():
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from beliefgate.serve.app import create_app

    flat = {"hazard": 0.1, "gate": "either", "cp_horizon": 4, "tau_obs": 0.3, "beta": 1.0}
    step = {"action_logprobs": [[-0.223, -2.303, -2.303], [-2.303, -0.223, -2.303]], "action": 1}
    with TestClient(create_app()) as client:
        answers = []
        for params in (flat, _nested(flat)):
            r = client.post("/v1/sessions", json={"skill_names": ["onion", "dish"], "params": params})
            assert r.status_code == 201, r.text
            body = r.json()
            assert body["params"] == GateParams(**_nested(flat)).model_dump(mode="json")  # nested answer
            for _ in range(3):
                s = client.post(f"/v1/sessions/{body['session_id']}/step", json=step)
                assert s.status_code == 200, s.text
            answers.append((s.json()["posterior"], s.json()["changepoint_prob"],
                            client.get(f"/v1/sessions/{body['session_id']}").json()["state_digest"]))
        assert answers[0] == answers[1]
        r = client.post("/v1/sessions", json={"num_skills": 2, "params": {"hazard": 0.1, "filter": {"hazard": 0.2}}})
        assert r.status_code == 422 and "given twice" in r.text
        r = client.post("/v1/sessions", json={"num_skills": 2, "params": {"cp_horizon": 0}})
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "params", "cp_horizon"]
