"""Layout names of the trainer: the OvercookedV2 domain's ``v2/<name>`` layouts.

One implementation: :func:`resolve_layout` defers to the domain's resolver
(:func:`beliefgate.envs.overcooked_v2.layouts.resolve_layout`, which also takes the classic kitchens'
names: ``v2/coordination_ring`` is JaxMARL's ``coord_ring``) and to its layout table for JaxMARL's
``Layout`` (the domain's three-player kitchens included), so a policy trains on exactly the kitchen
an episode plays. The canonical name is always JaxMARL's.
"""

from __future__ import annotations

from typing import Tuple

from beliefgate.envs.domain import UnknownLayoutError
from beliefgate.envs.overcooked_v2.layouts import CLASSIC_ALIASES, PREFIX
from beliefgate.envs.overcooked_v2.layouts import layout_info as _layout_info
from beliefgate.envs.overcooked_v2.layouts import layout_names
from beliefgate.envs.overcooked_v2.layouts import resolve_layout as _resolve
from beliefgate.errors import InputError


class LayoutNameError(InputError):
    """An unknown or malformed ``v2/`` layout name."""


def resolve_layout(name: str) -> Tuple[str, object]:
    """``(canonical name, jaxmarl Layout)`` of ``v2/<name>``; :class:`LayoutNameError` naming the
    layout (and the known ones) otherwise."""
    text = str(name).strip()
    if not text.startswith(PREFIX):
        raise LayoutNameError(f"layout {name!r}: the trainer takes OvercookedV2 layouts as v2/<name> "
                              f"(e.g. v2/cramped_room)")
    try:
        canonical = _resolve(text)
    except UnknownLayoutError:
        raise LayoutNameError(f"layout {name!r}: unknown OvercookedV2 layout (known: "
                              f"{', '.join(layout_names())})") from None
    return canonical, _layout_info(canonical).jax_layout


__all__ = ["resolve_layout", "LayoutNameError", "PREFIX", "CLASSIC_ALIASES"]
