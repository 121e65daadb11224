"""What the report and the play page draw, for any domain: a layout record and one record per state.

The records come from the layout's domain (``Domain.render_layout`` and ``Domain.render_frame``);
Overcooked's encoding is documented in :mod:`beliefgate.envs.overcooked.render`, which
``viewer/assets/kitchen.js`` draws.
"""

from __future__ import annotations

from typing import Any, Dict, List

from beliefgate.envs.domain import domain_for_layout


def layout_record(layout: str) -> Dict[str, Any]:
    """The static scene of ``layout`` as the drawing code reads it."""
    return domain_for_layout(layout).render_layout(layout)


def encode_frame(state) -> List[Any]:
    """One state as a compact JSON-ready record."""
    return domain_for_layout(state.layout).render_frame(state)


def encode_view(state, player: int) -> List[Any]:
    """One state as player ``player`` sees it (``Domain.render_view``: what the game hides from that
    player is left out)."""
    return domain_for_layout(state.layout).render_view(state, player)


__all__ = ["layout_record", "encode_frame", "encode_view"]
