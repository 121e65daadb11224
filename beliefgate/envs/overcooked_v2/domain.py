"""OvercookedV2 (JaxMARL) as a :class:`~beliefgate.envs.domain.Domain` (``backend: v2``).

``DOMAIN`` is registered under the entry-point group ``beliefgate.domains`` as ``overcooked_v2``; it
plays the ``v2/`` layouts (:mod:`.layouts`) on JaxMARL's own dynamics (:mod:`.env`). Listing its
layouts imports nothing heavy; anything that needs geometry or dynamics imports JaxMARL once
(:func:`._jaxmarl.jaxmarl_v2`, which names the ``v2`` extra when it is missing).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from beliefgate.envs.domain import AgentKind, Domain


#: how much likelier a recipe-seeing partner newly chooses a skill that serves the recipe than one
#: that does not (``goal_skill_log_weights``' concentration; chosen on seeds >= 1000, docs/results_v2.md)
GOAL_CONCENTRATION = 8.0


class OvercookedV2Domain(Domain):
    """OvercookedV2 on JaxMARL (``backend: v2``)."""

    name = "overcooked_v2"
    backend = "v2"
    default_horizon = 400
    #: JaxMARL's action order (right, down, left, up, stay, interact) in the classic backend's words
    action_names = ("east", "south", "west", "north", "stay", "interact")
    delivery_events = ("deliver:correct", "deliver:wrong")
    interact_action = 5

    # ------------------------------------------------------------------ layouts
    def layouts(self) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked_v2.layouts import layout_names

        return layout_names()

    def resolve_layout(self, name: str) -> str:
        from beliefgate.envs.overcooked_v2.layouts import resolve_layout

        return resolve_layout(name)

    def layout_info(self, layout: str):
        from beliefgate.envs.overcooked_v2.layouts import layout_info

        return layout_info(layout)

    def players(self, layout: str) -> int:
        from beliefgate.envs.overcooked_v2.layouts import players

        return players(layout)

    def describe_layout(self, layout: str) -> Dict[str, Any]:
        return {**self.layout_info(layout).describe(), "backend": self.backend, "players": self.players(layout)}

    # ---------------------------------------------------------------- dynamics
    def options(self, layout: Optional[str] = None, **options):
        """The :class:`~.layouts.V2Options` of ``options`` (checked against ``layout`` when given)."""
        from beliefgate.envs.overcooked_v2.layouts import V2Options

        opts = V2Options(**options)
        return opts.checked_for(self.layout_info(layout)) if layout is not None else opts

    def make_env(self, layout: str, horizon: int, old_dynamics: bool = True, seed: int = 0, **options):
        from beliefgate.envs.overcooked_v2.env import V2Env

        # old_dynamics is the classic backend's option (the runner passes it to every domain)
        return V2Env(layout, horizon, self.options(layout, **options), seed=seed)

    def env_options(self, old_dynamics: bool = True, **options) -> Dict[str, Any]:
        import json

        return json.loads(self.options(**options).model_dump_json())

    def check_env_options(self, layout: str, old_dynamics: bool = True, **options) -> None:
        """Refuse bad options for ``layout`` before any episode (one line naming the field)."""
        self.options(layout, **options)

    def state_from_json(self, data: Any):
        from beliefgate.envs.overcooked_v2.state import V2State

        return data if isinstance(data, V2State) else V2State.from_json(data)

    def detect_events(self, prev, state) -> List[List[str]]:
        from beliefgate.envs.overcooked_v2.state import detect_events

        return detect_events(prev, state)

    def completed_skills(self, events: Sequence[str], library) -> List[int]:
        from beliefgate.envs.overcooked_v2.observer import completed_skills

        return completed_skills(events, library)

    def move_blocked(self, state, next_state, player: int, action: int) -> Optional[bool]:
        from beliefgate.envs.overcooked_v2.layouts import ACTION_DIR, DIR_VEC

        if action >= 4:
            return None
        pos = state.players[player].position
        d = DIR_VEC[ACTION_DIR[action]]
        return bool(self.layout_info(state.layout).is_floor((pos[0] + d[0], pos[1] + d[1]))
                    and next_state.players[player].position == pos)

    # ------------------------------------------------------------------ beliefs
    def make_observer(self, params=None, layout: Optional[str] = None, partner: int = 1, **options):
        from beliefgate.envs.overcooked_v2.observer import V2Observer

        return V2Observer(layout if layout is not None else "v2/cramped_room_v2", params, partner=partner, **options)

    # ------------------------------------------------------- skills and control
    def controller(self, layout: str):
        from beliefgate.envs.overcooked_v2.controller import controller_for

        return controller_for(self.resolve_layout(layout))

    def executor(self, controller, player: int, rng):
        from beliefgate.envs.overcooked_v2.executor import V2Executor

        return V2Executor(controller, player, rng)

    def idle_action(self, state, player: int, rng) -> int:
        from beliefgate.envs.overcooked_v2.executor import fidget

        return fidget(state, player, rng)

    def skill_needs(self, state, player: int, controller, feasible=None, goal: Optional[str] = None,
                    **options) -> Mapping[str, float]:
        """The kitchen's needs of ``player``'s skills; ``goal``: a recipe name of :meth:`goal_names`
        that ``player`` believes in (used only where it does not see the recipe)."""
        from beliefgate.envs.overcooked_v2.kitchen import parse_recipe, skill_needs

        recipe = parse_recipe(goal, state.layout) if goal is not None else None
        return skill_needs(state, player, controller, feasible, recipe)

    # ------------------------------------------------- planners, trees, metrics
    def scene_text(self, state, ego: int) -> str:
        from beliefgate.envs.overcooked_v2.kitchen import scene_text

        return scene_text(state, ego)

    def progress(self, state) -> float:
        from beliefgate.envs.overcooked_v2.kitchen import progress

        return progress(state)

    #: the policy trees' flat state (:mod:`.flat_state`, documented key by key there and in docs/policytree.md)
    flat_state_schema = "overcooked_v2/1"

    def flat_state(self, state, player: int, **options) -> Dict[str, Any]:
        from beliefgate.envs.overcooked_v2.flat_state import flat_state

        return flat_state(state, player, **options)

    def flat_state_text(self, flat: Mapping[str, Any]) -> str:
        from beliefgate.envs.overcooked_v2.flat_state import flat_state_text

        return flat_state_text(flat)

    def probe_states(self, layout: str, seat: int) -> List[Dict[str, Any]]:
        from beliefgate.envs.overcooked_v2.flat_state import probe_states

        return probe_states(self.resolve_layout(layout), seat)

    def seed_tree(self, layout: str) -> str:
        """One hand-written tree for every v2 layout (``seed_trees/v2_kitchen.py``): it reads the
        recipe where the seat sees it, else the candidate recipes, and fetches typed ingredients."""
        from importlib import resources

        self.resolve_layout(layout)   # an unknown v2 layout is refused by name
        return resources.files("beliefgate.envs.overcooked_v2").joinpath("seed_trees", "v2_kitchen.py").read_text()

    # ------------------------------------------------------------ recipes (for the recipe belief)
    def recipe_set(self, layout: str) -> Tuple[Tuple[int, ...], ...]:
        """The recipes ``layout`` draws from."""
        from beliefgate.envs.overcooked_v2.kitchen import recipe_set

        return recipe_set(self.resolve_layout(layout))

    def active_recipe(self, state) -> Tuple[int, ...]:
        """The recipe active in ``state``."""
        return tuple(state.recipe_ingredients)

    def goal_names(self, layout: str) -> Tuple[str, ...]:
        """The recipe belief's goals: ``layout``'s recipes by name (``0-0-1``)."""
        from beliefgate.envs.overcooked_v2.kitchen import recipe_names

        return tuple(recipe_names(self.resolve_layout(layout)))

    def goal_evidence(self, prev, state, partner: int, viewer: int, skill_names: Sequence[str],
                      concentration: float = GOAL_CONCENTRATION, use_view: bool = True):
        """The recipe belief's evidence about teammate ``partner`` for the step ``prev -> state`` as
        player ``viewer`` observes it: ``(log_weights [G, K], goal_change, goal_loglik [G] or None)``
        (:func:`~.kitchen.recipe_evidence`)."""
        from beliefgate.envs.overcooked_v2.kitchen import recipe_evidence

        return recipe_evidence(prev, state, partner, viewer, skill_names, concentration, use_view)

    def seen_goal(self, state, player: int) -> Optional[str]:
        """The recipe ``player`` sees now (:func:`~.kitchen.known_recipe`), by its goal name, else None."""
        from beliefgate.envs.overcooked_v2.kitchen import known_recipe, recipe_name

        seen = known_recipe(state, player)
        return None if seen is None else recipe_name(seen)

    def recipe_viewers(self, state) -> List[int]:
        """The players whose observation shows the recipe in ``state``."""
        from beliefgate.envs.overcooked_v2.kitchen import recipe_viewers

        return recipe_viewers(state)

    # ------------------------------------------------------------------ fitting
    def load_fit_data(self, paths, partner_side: Optional[int] = None, **options):
        """V2 trajectory logs -> the skill model's ``FitData`` (:func:`.fitdata.load_logs`; also the
        ``overcooked_v2`` entry point of ``beliefgate.fitdata``)."""
        from beliefgate.envs.overcooked_v2.fitdata import load_logs

        return load_logs(paths, partner_side, **options)

    def load_goal_fit_data(self, paths, partner_side: Optional[int] = None, **options):
        """V2 trajectory logs -> the goal (recipe) model's ``GoalFitData``
        (:func:`.fitdata.load_goal_fit_data`; ``beliefgate fit --model goal``)."""
        from beliefgate.envs.overcooked_v2.fitdata import load_goal_fit_data

        return load_goal_fit_data(paths, partner_side, **options)

    # ------------------------------------------------------------ forward models
    def batch_stepper(self, layout: str):
        """JaxMARL's step vmapped over many imagined states, jitted once per batch size
        (:class:`~.env.BatchStepper`)."""
        from beliefgate.envs.overcooked_v2.env import batch_stepper

        return batch_stepper(layout)

    def with_goal(self, state, goal: str):
        """``state`` with the recipe named ``goal`` (:meth:`goal_names`) active."""
        from beliefgate.envs.overcooked_v2.kitchen import parse_recipe
        from beliefgate.envs.overcooked_v2.layouts import recipe_code

        return state.model_copy(update={"recipe": recipe_code(parse_recipe(goal, state.layout))})

    def observable_goal(self, state, player: int) -> Optional[str]:
        """The recipe ``player`` sees, else the first recipe the open pots and the teammates' hands
        allow (:func:`~.kitchen.candidate_recipes`: what the no-belief agent cooks)."""
        from beliefgate.envs.overcooked_v2.kitchen import candidate_recipes, recipe_name

        found = candidate_recipes(state, player)
        return recipe_name(found[0]) if found else None

    def complements(self, state, player: int, skill: str, partner_skill: str, controller) -> bool:
        """By the kitchen's needs under the active (true) recipe, the teammate's skill counted
        (:func:`~.kitchen.serves_recipe`): fetching the recipe's ingredient is complementary to a
        teammate fetching the same one when the pot needs both, fetching another one is not."""
        from beliefgate.envs.overcooked_v2.kitchen import serves_recipe

        return serves_recipe(state, player, controller, skill, partner_skill, state.recipe_ingredients)

    def goal_in_making(self, state, weights) -> Optional[str]:
        """The recipe (of those weighted > 0) a held dish, a cooked or cooking pot, or the fullest
        started pot is making (:func:`~.kitchen.goal_in_making`)."""
        from beliefgate.envs.overcooked_v2.kitchen import goal_in_making

        return goal_in_making(state, weights)

    def rollout_value(self, state) -> float:
        """Progress toward the state's active recipe (:func:`~.kitchen.recipe_progress`)."""
        from beliefgate.envs.overcooked_v2.kitchen import recipe_progress

        return recipe_progress(state)

    # ---------------------------------------------------------------- rendering
    def render_layout(self, layout: str) -> Dict[str, Any]:
        from beliefgate.envs.overcooked_v2.render import layout_record

        return layout_record(layout)

    def render_frame(self, state) -> List[Any]:
        from beliefgate.envs.overcooked_v2.render import encode_frame

        return encode_frame(state)

    def render_view(self, state, player: int) -> List[Any]:
        """The frame as ``player`` sees it: the recipe only where ``player`` sees it (the play page)."""
        from beliefgate.envs.overcooked_v2.render import encode_view

        return encode_view(state, player)

    # -------------------------------------------------------- agents by name
    def agent_kinds(self) -> Tuple[AgentKind, ...]:
        return (
            AgentKind("ppo", "a trained PPO policy as the ego (ppo:<shipped name>, ppo:PATH to a policy.msgpack, "
                      "run folder or partner file; v2 layouts, and the classic kitchens of their v2 twins)"),
            AgentKind("fcp", "the shipped FCP ego of a v2 layout (fcp:<layout>)"),
        )

    def make_named_agent(self, prefix: str, option: Optional[str]):
        """``ppo:...`` / ``fcp:<layout>``: a trained policy as a player (another domain's layout plays
        it through that domain's ``jaxmarl_twin``; :class:`.trained_agents.TrainedPlayer`)."""
        from beliefgate.envs.overcooked_v2 import trained_agents

        if prefix == "ppo":
            return trained_agents.ppo_agent(option)
        if prefix == "fcp":
            return trained_agents.fcp_agent(option)
        return super().make_named_agent(prefix, option)

    def named_agent_digest(self, prefix: str, option: Optional[str]) -> Optional[str]:
        from beliefgate.envs.overcooked_v2 import trained_agents

        if prefix == "ppo":
            return trained_agents.ppo_digest(option)
        if prefix == "fcp":
            return trained_agents.fcp_digest(option)
        return super().named_agent_digest(prefix, option)

    # ------------------------------------------------------------------ partners
    def partner_names(self) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked_v2.partners import PARTNERS

        return tuple(PARTNERS)

    def partner_summaries(self) -> List[Dict[str, object]]:
        """The rows ``beliefgate partners --json`` lists for this backend."""
        from beliefgate.envs.overcooked_v2.partners import PARTNERS

        return [p.summary() for p in PARTNERS.values()]

    #: the switch benchmark's teammate: it only plates and serves, so the partner it scores fetches
    #: every ingredient (the choices a resampled recipe changes)
    switch_ego = "v2-server"

    def switching_partners(self) -> Tuple[str, ...]:
        """The shipped scripted partners that re-read the recipe every step: they change course (a
        hidden switch of ingredient) when the recipe is resampled on delivery."""
        from beliefgate.envs.overcooked_v2.partners import PARTNERS, V2PartnerSpec

        return tuple(n for n, s in PARTNERS.items() if isinstance(s, V2PartnerSpec) and s.adaptive
                     and s.role != "server")

    def switch_env_options(self, layout: str) -> Dict[str, Any]:
        """The recipe is resampled after each correct delivery (else a recipe-seeing partner never
        changes course)."""
        return {"sample_recipe_on_delivery": True}

    def partner_group(self, name: str) -> Optional[str]:
        from beliefgate.envs.overcooked_v2.partners import PARTNERS

        spec = PARTNERS.get(name)
        return spec.role if spec is not None else None

    def partner_fingerprint(self, name: str) -> str:
        import json

        from beliefgate.envs.overcooked_v2.partners import PARTNERS

        spec = PARTNERS.get(name)
        return json.dumps(spec.model_dump(mode="json"), sort_keys=True) if spec is not None else name

    def make_partner(self, name: str):
        from beliefgate.envs.overcooked_v2.partners import make_scripted

        return make_scripted(name)

    def is_partner(self, name: str) -> bool:
        from beliefgate.envs.overcooked_v2.partners import PARTNERS, is_partner_file

        return name in PARTNERS or is_partner_file(name)

    def check_partners(self, names: Sequence[str], horizon: Optional[int] = None) -> None:
        from beliefgate.envs.overcooked_v2.partners import check_partner

        for name in names:   # an unknown name, a bad file or a checkpoint that does not load: before any episode
            check_partner(name)

    def partner_file_digest(self, name: str) -> Optional[str]:
        from beliefgate.envs.overcooked_v2.partners import file_digest

        return file_digest(name)

    def partner_restriction(self, name: str, layout: str) -> Optional[str]:
        from beliefgate.envs.overcooked_v2.partners import layout_restriction

        return layout_restriction(name, layout)


#: the registered instance (entry point ``beliefgate.domains: overcooked_v2``)
DOMAIN = OvercookedV2Domain()

__all__ = ["DOMAIN", "OvercookedV2Domain"]
