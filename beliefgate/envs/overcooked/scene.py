"""The Overcooked scene serializer every agent shares (through ``Domain.scene_text``): a symbolic state as plain text."""

from __future__ import annotations

from beliefgate.envs.overcooked.layouts import layout_info
from beliefgate.envs.overcooked.state import SymbolicState


def _holding(held) -> str:
    return f"holding {'a ' + held if held else 'nothing'}"


def scene_text(state: SymbolicState, ego: int) -> str:
    """Stations, both players' poses and held objects, pots, counters and the timestep."""
    info = layout_info(state.layout)
    lines = [f"Kitchen '{state.layout}', step {state.timestep}, score {state.score:g}."]
    stations = []
    for kind, label in (("O", "onion dispenser"), ("D", "dish dispenser"), ("S", "serving window"), ("P", "pot")):
        cells = info.cells_of(kind)
        if cells:
            stations.append(f"{label}{'s' if len(cells) > 1 else ''} at {', '.join(map(str, cells))}")
    lines.append("Stations: " + "; ".join(stations) + ".")
    for i, p in enumerate(state.players):
        who = "You" if i == ego else "Partner"
        lines.append(f"{who}: at {p.position} facing {p.orientation_name}, {_holding(p.held)}.")
    for pot in state.pots:
        if pot.ready:
            status = "soup ready"
        elif pot.cooking:
            status = f"cooking, {pot.timer} ticks left"
        else:
            status = f"{pot.ingredients}/3 onions"
        lines.append(f"Pot {pot.position}: {status}.")
    if state.counters:
        lines.append("On counters: " + ", ".join(f"{o.name} at {o.position}" for o in state.counters) + ".")
    return "\n".join(lines)
