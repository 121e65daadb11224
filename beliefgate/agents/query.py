"""Ask an agent what it would do at a state without letting it act: a *shadow* of a player.

A teacher (e.g. OverForge) labels states visited by someone else (a distilled tree, in DAgger):
the label of a state is the skill the teacher would be executing there, given everything it has
seen of the episode so far. :class:`Shadow` gets there through the agent interface alone
(``reset``, ``act``, ``info()["skill"]``, every agent of the table has them): it feeds the agent
each state of the episode in order, with the events of the seat it shadows, and returns the skill
the agent holds after that step. The action ``act`` returns is dropped and never reaches the game,
so the shadow's beliefs (gates), strategy and commitments evolve as if it watched the episode from
that seat. Its own running skill only ends the way any skill ends (completed by the real player's
events, invalid for what the real player holds, timed out), so a teacher that commits to a skill
keeps answering it until then, as it does when it plays.

Replaying an episode the agent itself played, with the same seed, gives back exactly the skills it
logged (``tests/test_policytree_distil.py`` checks it), which is what makes the labels the
teacher's own choices.
"""

from __future__ import annotations

from typing import Optional, Sequence

from beliefgate.errors import InputError


class ShadowError(InputError):
    """An agent that cannot be asked what it would choose (it reports no skill)."""


class Shadow:
    """The agent ``agent`` (already built, not reset) watching seat ``seat`` of an episode."""

    def __init__(self, agent, layout: str, seat: int, seed: int):
        self.agent = agent
        self.seat = seat
        agent.reset(layout, seat, seed)
        self.decisions = 0

    def would_choose(self, state, my_events: Sequence[str] = ()) -> Optional[str]:
        """The skill the agent would be executing at ``state`` (None: it would wait).

        ``my_events`` are the shadowed seat's interaction events of the last step. Call it once per
        step, in order: the agent's beliefs and running skill advance with each call.
        """
        self.agent.act(state, my_events)
        info = self.agent.info()
        if "skill" not in info:
            raise ShadowError(f"agent {getattr(self.agent, 'name', type(self.agent).__name__)!r} reports no "
                              "'skill' in its info, so it cannot label states")
        if info.get("replanned"):
            self.decisions += 1
        skill = info["skill"]
        return None if skill is None else str(skill)


__all__ = ["Shadow", "ShadowError"]
