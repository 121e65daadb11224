"""The distilled trees shipped with the package (``policy-tree:distilled:LAYOUT``): each is the file
its card names (sha256), passes the sandbox's checks on both seats' probe states, and plays its
layout through the agent table; a layout without one is one clear error."""

import pytest
from typer.testing import CliRunner

from beliefgate.cli import app
from beliefgate.policytree.distilled import HERE, NoDistilledTreeError, cards, digest, distilled_code, file_name


def test_every_shipped_tree_is_the_file_its_card_names():
    shipped = cards()
    assert len(shipped) >= 5, sorted(shipped)  # the five classic layouts of docs/results_policytree.md
    assert sorted(p.name for p in HERE.glob("*.py") if p.name != "__init__.py") == sorted(map(file_name, shipped))
    for layout, card in shipped.items():
        code = distilled_code(layout)
        assert digest(code) == card["sha256"], layout
        assert card["layout"] == layout and card["partners"] and card["teacher"] in ("overforge", "bayes-belief:full")
        assert f"Layout: {layout}" in code and f"Distilled from: {card['teacher']} " in code
    # the recipe kitchen's tree was distilled with the recipe hidden, and reads the recipe belief
    recipe = shipped["v2/cramped_room_v2"]
    assert recipe["settings"]["env_options"] == {"agent_view_size": 1, "sample_recipe_on_delivery": True}
    assert recipe["settings"]["belief"] and 'state["believed_' in distilled_code("v2/cramped_room_v2")


@pytest.mark.parametrize("layout", sorted(cards()))
def test_a_shipped_tree_is_accepted_by_the_sandbox_and_plays(layout):
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes
    from beliefgate.policytree.learn import check_tree

    code = distilled_code(layout)
    assert all(check_tree(code, layout, seat, 50, 256) is None for seat in (0, 1))
    partner = next(p for p in domain_for_layout(layout).partner_names() if p != "human")
    try:
        res = run_episode(layout, f"policy-tree:distilled:{layout}", partner, seed=1, horizon=30, seat=1)
    finally:
        close_sandboxes()
    infos = [r.info[1] for r in res.trajectory.steps]
    assert len(infos) == 30 and infos[-1]["tree_errors"] == 0 and all(i["tree_skill"] for i in infos)


def test_a_layout_without_a_shipped_tree_is_one_clear_error():
    with pytest.raises(NoDistilledTreeError, match="v2/grounded_coord_simple.*shipped: .*cramped_room"):
        distilled_code("v2/grounded_coord_simple")
    res = CliRunner().invoke(app, ["episode", "--layout", "v2/grounded_coord_simple",
                                   "--ego", "policy-tree:distilled:v2/grounded_coord_simple", "--partner", "v2-cook"])
    assert res.exit_code == 2 and res.output.strip().startswith("error:") and "\n" not in res.output.strip()
    assert "no distilled tree ships for layout 'v2/grounded_coord_simple'" in res.output
