"""Layout names of the trainer: ``v2/<name>`` for a JaxMARL OvercookedV2 layout.

One function, :func:`resolve_layout`, so that the OvercookedV2 domain's own resolver can replace
it. The classic five are also reachable by their classic names (``v2/coordination_ring`` is
JaxMARL's ``coord_ring``); the canonical name is always JaxMARL's.
"""

from __future__ import annotations

from typing import Tuple

from beliefgate.errors import InputError

PREFIX = "v2/"

#: classic layout names -> JaxMARL's names of the same kitchens
CLASSIC_ALIASES = {
    "asymmetric_advantages": "asymm_advantages",
    "coordination_ring": "coord_ring",
    "forced_coordination": "forced_coord",
}


class LayoutNameError(InputError):
    """An unknown or malformed ``v2/`` layout name."""


def resolve_layout(name: str) -> Tuple[str, object]:
    """``(canonical name, jaxmarl Layout)`` of ``v2/<name>``; :class:`LayoutNameError` naming the
    layout and the known ones otherwise."""
    text = str(name).strip()
    if not text.startswith(PREFIX):
        raise LayoutNameError(f"layout {name!r}: the trainer takes OvercookedV2 layouts as v2/<name> "
                              f"(e.g. v2/cramped_room)")
    from jaxmarl.environments.overcooked_v2.layouts import overcooked_v2_layouts  # imports every JaxMARL env

    short = CLASSIC_ALIASES.get(text[len(PREFIX):], text[len(PREFIX):])
    if short not in overcooked_v2_layouts:
        known = ", ".join(sorted(overcooked_v2_layouts))
        raise LayoutNameError(f"layout {name!r}: unknown OvercookedV2 layout (known: {known})")
    return PREFIX + short, overcooked_v2_layouts[short]


__all__ = ["resolve_layout", "LayoutNameError", "PREFIX", "CLASSIC_ALIASES"]
