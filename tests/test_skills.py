import json

import pytest

from beliefgate.skills import SkillLibrary, SkillLibraryError, UnknownSkillError, load_builtin

SPEC_COMPLEMENTARY = {
    "ingredient": {"plating", "serving"},
    "plating": {"ingredient", "serving"},
    "serving": {"ingredient", "plating"},
    "staging": {"ingredient", "plating", "serving"},
}


def test_builtin_library_matches_spec():
    lib = load_builtin("overcooked")
    assert lib.names == ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup",
                         "deliver_soup", "place_obj_on_counter")
    roles = {s.name: s.role for s in lib.skills}
    assert roles["pickup_onion"] == roles["put_onion_in_pot"] == "ingredient"
    assert roles["pickup_dish"] == roles["fill_dish_with_soup"] == "plating"
    assert roles["deliver_soup"] == "serving" and roles["place_obj_on_counter"] == "staging"
    for partner in lib.names:
        for ego in lib.names:
            expected = roles[ego] != roles[partner] and roles[ego] in SPEC_COMPLEMENTARY[roles[partner]]
            assert lib.is_complementary(ego, partner) == expected, (ego, partner)
    # a skill in the partner's own role is never complementary
    assert not lib.is_complementary("pickup_onion", "put_onion_in_pot")
    assert lib.complementary_skills("pickup_onion") == ("pickup_dish", "fill_dish_with_soup", "deliver_soup")


def test_requirements():
    lib = load_builtin()
    assert lib.requirement_met("pickup_onion", None) and not lib.requirement_met("pickup_onion", "dish")
    assert lib.requirement_met("put_onion_in_pot", "onion")
    assert lib.requirement_met("place_obj_on_counter", "soup") and not lib.requirement_met("place_obj_on_counter", None)


def test_lookup_errors():
    lib = load_builtin()
    with pytest.raises(UnknownSkillError, match="chop_tomato"):
        lib.index("chop_tomato")
    with pytest.raises(UnknownSkillError, match="out of range"):
        lib.index(6)
    assert lib.index(2) == 2 and lib.index("deliver_soup") == 4


def _data():
    return json.loads(load_builtin().to_json())


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["skills"][0].update(colour="red"), "colour"),
        (lambda d: d["skills"].append(dict(d["skills"][0])), "duplicate skill"),
        (lambda d: d["skills"][0].update(role="chef"), "unknown role"),
        (lambda d: d["complementary"].update(cooking=["plating"]), "unknown role"),
        (lambda d: d["complementary"]["plating"].append("plating"), "complementary to itself"),
        (lambda d: d["skills"][0].update(requires="banana"), "unknown held object"),
        (lambda d: d.update(extra_key=1), "extra_key"),
    ],
)
def test_schema_validation(mutate, message):
    data = _data()
    mutate(data)
    with pytest.raises(SkillLibraryError, match=message):
        SkillLibrary.from_dict(data)


def test_load_from_json_and_yaml(tmp_path):
    yaml = pytest.importorskip("yaml")
    data = {
        "domain": "toy",
        "roles": ["a", "b"],
        "skills": [{"name": "go_left", "role": "a"}, {"name": "go_right", "role": "b"}],
        "complementary": {"a": ["b"], "b": ["a"]},
    }
    (tmp_path / "lib.json").write_text(json.dumps(data))
    (tmp_path / "lib.yaml").write_text(yaml.safe_dump(data))
    a = SkillLibrary.from_file(tmp_path / "lib.json")
    b = SkillLibrary.from_file(tmp_path / "lib.yaml")
    assert a == b and a.names == ("go_left", "go_right")
    assert a.requirement_met("go_left", "anything")  # no requirement declared
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SkillLibraryError, match="not valid JSON"):
        SkillLibrary.from_file(tmp_path / "bad.json")
    with pytest.raises(SkillLibraryError, match="cannot read"):
        SkillLibrary.from_file(tmp_path / "missing.json")
