"""Classic Overcooked-AI as a :class:`~beliefgate.envs.domain.Domain`.

``DOMAIN`` is registered under the entry-point group ``beliefgate.domains`` as ``overcooked``; it
plays the five classic two-player layouts (and the 2019 study's names for them) and two
three-player kitchens (``cramped_room_3p``, ``asymmetric_advantages_3p``) on the ``overcooked``
package's dynamics. Every method delegates to the module that implements it; heavy modules are
imported on first use so that listing domains stays cheap.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from beliefgate.envs.domain import AgentKind, Domain


class OvercookedDomain(Domain):
    """The classic game (``backend: classic``)."""

    name = "overcooked"
    backend = "classic"
    default_horizon = 400
    action_names = ("north", "south", "east", "west", "stay", "interact")
    delivery_events = ("deliver:soup",)
    interact_action = 5

    # ------------------------------------------------------------------ layouts
    def layouts(self) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked.layouts import ALL_LAYOUTS

        return ALL_LAYOUTS

    def resolve_layout(self, name: str) -> str:
        from beliefgate.envs.overcooked.layouts import resolve_layout

        return resolve_layout(name)

    def layout_info(self, layout: str):
        from beliefgate.envs.overcooked.layouts import layout_info

        return layout_info(layout)

    def players(self, layout: str) -> int:
        return len(self.layout_info(layout).start_positions)

    def describe_layout(self, layout: str) -> Dict[str, Any]:
        return {**self.layout_info(layout).describe(), "backend": self.backend, "players": self.players(layout)}

    # ---------------------------------------------------------------- dynamics
    def make_env(self, layout: str, horizon: int, old_dynamics: bool = True, **options):
        from beliefgate.envs.overcooked.adapter import OvercookedAdapter

        if options:
            from beliefgate.errors import InputError

            raise InputError(f"the overcooked domain has no option {sorted(options)[0]!r} (it has old_dynamics)")
        return OvercookedAdapter(layout, horizon=horizon, old_dynamics=old_dynamics)

    def env_options(self, old_dynamics: bool = True, **options) -> Dict[str, Any]:
        return {"old_dynamics": old_dynamics, **options}

    def state_from_json(self, data: Any):
        from beliefgate.envs.overcooked.state import SymbolicState

        if isinstance(data, SymbolicState):
            return data
        # a dict is validated as such, so a log's bad state is pydantic's error located in the state;
        # then against its layout (players on floor cells, pots and counter objects where they can be),
        # so that a log with an off-grid position is refused when read, not drawn or replayed
        state = SymbolicState.model_validate(data) if isinstance(data, dict) else SymbolicState.from_json(data)
        return state.validate_against_layout()

    def detect_events(self, prev, state) -> List[List[str]]:
        from beliefgate.envs.overcooked.dynamics import detect_events

        return detect_events(prev, state)

    def completed_skills(self, events: Sequence[str], library) -> List[int]:
        from beliefgate.envs.overcooked.dynamics import completed_skills

        return completed_skills(events, library)

    def move_blocked(self, state, next_state, player: int, action: int) -> Optional[bool]:
        from beliefgate.envs.overcooked.layouts import DIRECTIONS

        if action >= len(DIRECTIONS):
            return None
        pos = state.players[player].position
        d = DIRECTIONS[action]
        # a move into a counter only turns the player: not blocked
        return bool(self.layout_info(state.layout).is_floor((pos[0] + d[0], pos[1] + d[1]))
                    and next_state.players[player].position == pos)

    # ------------------------------------------------------------------ beliefs
    def make_observer(self, params=None, layout: Optional[str] = None, partner: int = 1, **options):
        from beliefgate.envs.overcooked.observer import OvercookedObserver

        return OvercookedObserver(layout if layout is not None else "cramped_room", params, partner=partner, **options)

    # ------------------------------------------------------- skills and control
    def controller(self, layout: str):
        from beliefgate.envs.overcooked.controller import controller_for

        return controller_for(layout)

    def executor(self, controller, player: int, rng):
        from beliefgate.envs.overcooked.executor import Executor

        return Executor(controller, player, rng)

    def idle_action(self, state, player: int, rng) -> int:
        from beliefgate.envs.overcooked.executor import fidget

        return fidget(state, player, rng)

    def skill_needs(self, state, player: int, controller, feasible=None, **options) -> Mapping[str, float]:
        from beliefgate.envs.overcooked.kitchen import skill_needs

        return skill_needs(state, player, controller, feasible)

    # ------------------------------------------------- planners, trees, metrics
    def scene_text(self, state, ego: int) -> str:
        from beliefgate.envs.overcooked.scene import scene_text

        return scene_text(state, ego)

    def progress(self, state) -> float:
        from beliefgate.envs.overcooked.potential import dish_progress

        return dish_progress(state)

    #: the Co-pi-tree flat state (``flat_state.py``, paper A.9)
    flat_state_schema = "overcooked/1"

    def flat_state(self, state, player: int, **options) -> Dict[str, Any]:
        from beliefgate.envs.overcooked.flat_state import flat_state

        return flat_state(state, player, **options)

    # ---------------------------------------------------------------- rendering
    def render_layout(self, layout: str) -> Dict[str, Any]:
        from beliefgate.envs.overcooked.render import layout_record

        return layout_record(layout)

    def render_frame(self, state) -> List[Any]:
        from beliefgate.envs.overcooked.render import encode_frame

        return encode_frame(state)

    # ------------------------------------------------------------ policy trees
    def seat_skills(self, layout: str, player: int) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked.seats import seat_skills

        return seat_skills(layout, player)

    def seat_note(self, layout: str, player: int) -> str:
        from beliefgate.envs.overcooked.seats import seat_note

        return seat_note(layout, player)

    def flat_state_text(self, flat: Mapping[str, Any]) -> str:
        from beliefgate.envs.overcooked.flat_state import flat_state_text

        return flat_state_text(flat)

    def probe_states(self, layout: str, seat: int) -> List[Dict[str, Any]]:
        from beliefgate.envs.overcooked.flat_state import probe_states

        return probe_states(layout, seat)

    def seed_tree(self, layout: str) -> str:
        from importlib import resources

        name = self.resolve_layout(layout)
        path = resources.files("beliefgate.envs.overcooked").joinpath("seed_trees", f"{name}.py")
        if not path.is_file():
            return super().seed_tree(layout)
        return path.read_text()

    def jaxmarl_twin(self, layout: str):
        """``(v2 layout, observe(state, player), action(a))``: the JaxMARL OvercookedV2 layout that
        replays ``layout``, the encoder of a classic state as its observation and the map of a
        JaxMARL action to the classic one, for trained (PPO) policies
        (:mod:`beliefgate.envs.overcooked.jaxmarl_bridge`; the ``v2`` extra)."""
        from beliefgate.envs.overcooked.jaxmarl_bridge import twin

        return twin(layout)

    # -------------------------------------------------------- agents by name
    def agent_kinds(self) -> Tuple[AgentKind, ...]:
        # ppo:/fcp: play these kitchens too: the V2 domain builds them, and plays here through jaxmarl_twin
        return (AgentKind("bc", "behaviour cloning on the human data (bc = the episode's layout, bc:<layout>)",
                          option="optional"),)

    def make_named_agent(self, prefix: str, option: Optional[str]):
        """``bc`` (the episode's layout) or ``bc:<layout>``: the BC model of the human data."""
        if prefix != "bc":
            return super().make_named_agent(prefix, option)
        from beliefgate.envs.overcooked.bc import bc_agent

        return bc_agent(option)

    # ------------------------------------------------------------------ partners
    def partner_key(self, name: str) -> str:
        from beliefgate.envs.overcooked.partners import partner_key

        return partner_key(name)

    def check_partners(self, names: Sequence[str], horizon: Optional[int] = None) -> None:
        from beliefgate.envs.overcooked.partners import check_partners, get_partner

        if horizon is None:
            for name in names:
                get_partner(name)
        else:
            check_partners(names, horizon)

    def partner_group(self, name: str) -> Optional[str]:
        from beliefgate.envs.overcooked.partners import PARTNERS

        spec = PARTNERS.get(name)
        if spec is None:
            return None
        if spec.group:
            return spec.group
        onion, dish = spec.prefer
        return "sourcing" if onion > dish else "logistics" if dish > onion else "generalist"

    def partner_file_digest(self, name: str) -> Optional[str]:
        import hashlib
        import json

        from beliefgate.envs.overcooked.partners import PARTNERS, is_partner_path

        if not is_partner_path(name):
            return None
        text = json.dumps(PARTNERS[name].model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    #: the switch benchmark's teammate of the partner it scores
    switch_ego = "balanced"

    def switching_partners(self) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked.partners import shipped_partners

        return tuple(shipped_partners())

    def partner_fingerprint(self, name: str) -> str:
        import json

        from beliefgate.envs.overcooked.partners import PARTNERS

        return json.dumps(PARTNERS[name].model_dump(mode="json"), sort_keys=True) if name in PARTNERS else name

    def partner_names(self) -> Tuple[str, ...]:
        from beliefgate.envs.overcooked.partners import PARTNERS

        return tuple(PARTNERS)

    def is_partner(self, name: str) -> bool:
        from beliefgate.envs.overcooked.partners import PARTNERS

        return name in PARTNERS

    def make_partner(self, name: str):
        from beliefgate.envs.overcooked.partners import make_scripted

        return make_scripted(name)

    def partner_restriction(self, name: str, layout: str) -> Optional[str]:
        from beliefgate.envs.overcooked.partners import layout_restriction

        return layout_restriction(name, layout)


#: the registered instance (entry point ``beliefgate.domains: overcooked``)
DOMAIN = OvercookedDomain()

__all__ = ["DOMAIN", "OvercookedDomain"]
