"""Play one episode of any domain (N players, the real dynamics of its game) and log it.

The ego's fallbacks (LLM planner, judge and hypothesis calls that got no usable answer) are in
every step's ``info`` (``fallbacks``, ``fallbacks_by_role``, ``fallback_events`` with role,
reason and detail) and in the final summary (``fallbacks`` and ``fallback_counts``: per role,
per reason, the last few); with a model, ``summary["llm"]`` adds the client's ledger
(requests, answers, failures per kind, ``breaker_open``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

import beliefgate
from beliefgate.agents.registry import ReportsFallbacks, make_agent, uses_llm
from beliefgate.envs.domain import PartnerLayoutError, check_seat, domain_for_layout
from beliefgate.envs.hindsight import domain_labels, relabel_seats
from beliefgate.envs.messages import Channel, ChannelRules, Talks
from beliefgate.envs.trajlog import FinalRow, LogHeader, LogWriter, StepRow, Trajectory
from beliefgate.errors import InputError
from beliefgate.planners.fallbacks import FallbackLog


@dataclass
class EpisodeResult:
    """A played episode: the same content as its log."""

    trajectory: Trajectory
    summary: Dict[str, Any]
    log_path: Optional[Path] = None


def agent_seeds(seed: int, num_players: int) -> List[int]:
    """Independent, reproducible per-player seeds derived from the episode seed."""
    children = np.random.SeedSequence(seed).spawn(num_players)
    return [int(c.generate_state(1)[0]) for c in children]


#: joins the partners of an episode with more than two players into one name (``A+B``)
PARTNER_SEP = "+"


def partner_list(partner: str | Sequence[str]) -> List[str]:
    """The partners of an episode, one per other player in seat order: a list, or one name in which
    several are joined by ``+`` (as grids and results rows name them)."""
    if isinstance(partner, str):
        parts = partner.split(PARTNER_SEP)
        if not all(parts):
            raise InputError(f"partners joined by {PARTNER_SEP!r} must be non-empty names, got {partner!r}")
        return parts
    partners = list(partner)
    if not partners or not all(isinstance(p, str) and p for p in partners):
        raise InputError(f"partners must be non-empty agent names, got {partner!r}")
    return partners


def seat_names(ego: str, partners: Sequence[str], seat: int) -> List[str]:
    """Every player's agent in seat order: the partners fill the seats other than the ego's."""
    return list(partners[:seat]) + [ego] + list(partners[seat:])


def partner_label(partners: Sequence[str]) -> str:
    """How an episode's partners are named in its summary, results row and file name: the partner
    itself with one, ``A+B`` with several."""
    return PARTNER_SEP.join(partners)


def run_episode(layout: str, ego: str, partner: str | Sequence[str], seed: int = 0, horizon: Optional[int] = None,
                seat: int = 0, log_path: Optional[str | Path] = None, old_dynamics: bool = True,
                config: Optional[Dict[str, Any]] = None, llm=None, gate_params=None,
                env_options: Optional[Dict[str, Any]] = None, memory=None,
                messages: ChannelRules | bool = True, llm_teammates: bool = False) -> EpisodeResult:
    """Play ``ego`` (in player slot ``seat``) with ``partner`` for ``horizon`` steps.

    ``partner`` is one agent name, or a list with one name per other player of the layout (in
    seat order, the ego's seat left out): a three-player layout takes two. The layout's domain
    (:func:`~beliefgate.envs.domain.domain_for_layout`) supplies the dynamics and the partners;
    ``horizon`` defaults to the domain's. Writes a trajectory log to ``log_path`` when given
    (flushed line by line). ``llm`` (a :class:`~beliefgate.planners.model.ChatModel`, e.g. an
    :class:`~beliefgate.planners.client.LLMClient`) is given to the ego when its agent uses
    one; its per-episode budget is reset first (``start_episode``). ``gate_params`` (a :class:`~beliefgate.beliefs.gate.GateParams`)
    replaces the ego's gate defaults; it is an error for an ego without a gate. The
    parameters used are written into the log header's config (``gate_params``). ``env_options``
    are the domain's environment options (OvercookedV2's recipe sampling, view size...), checked
    before any episode and written into the header's config with their defaults
    (``Domain.env_options``); an environment whose ``reset_takes_seed`` is true draws its own
    randomness (the recipe) from ``seed``. ``memory`` (a store path or a
    :class:`~beliefgate.agents.memory.MemoryUse`): the ego starts each teammate's gate from what the
    store remembers about that partner and the episode is committed to it at the end, in one
    transaction (``summary["memory"]``); an ego without a gate is a ``MemoryNotUsedError``.
    ``messages``: the message channel's rules
    (:class:`~beliefgate.envs.messages.ChannelRules`; ``True``: the defaults, ``False``: no
    channel); the agents that talk (:class:`~beliefgate.envs.messages.Talks`) hear each step's
    deliveries before they act and speak after, and each step's messages and refusals are logged
    in its row (``messages``) and counted in the summary (``messages``). ``llm_teammates``: give
    ``llm`` to every teammate whose agent uses a model too (self-play in which every seat writes
    and reads words); the summary's ``llm_calls`` stay the ego's.
    """
    domain = domain_for_layout(layout)
    layout = domain.resolve_layout(layout)
    partners = partner_list(partner)
    players = domain.players(layout)
    domain.check_players(layout, len(partners) + 1)
    check_seat(seat, players)
    horizon = domain.default_horizon if horizon is None else horizon
    for name in dict.fromkeys((ego, *partners)):
        why = domain.partner_restriction(name, layout)
        if why is not None:  # grids skip such a cell (and say so); a single episode refuses it
            raise PartnerLayoutError(f"partner {name} does not play {layout}: {why}")
    options = dict(env_options or {})
    env = domain.make_env(layout, horizon, old_dynamics=old_dynamics, **options)
    names = seat_names(ego, partners, seat)
    if llm_teammates and llm is None:
        raise InputError("llm_teammates needs a model (llm)")
    agents = [make_agent(n, llm if (i == seat or (llm_teammates and uses_llm(n))) else None,
                         gate_params if i == seat else None, domain=domain)
              for i, n in enumerate(names)]
    session = None
    if memory is not None:  # the ego reads each teammate's remembered prior when it resets
        from beliefgate.agents.memory import MemoryNotUsedError, MemorySession, MemoryUse

        if not callable(getattr(agents[seat], "use_memory", None)):
            raise MemoryNotUsedError(f"ego {ego} keeps no partner memory (only agents with a gate do)")
        session = MemorySession(MemoryUse.of(memory), layout, names, seat)
    try:
        if session is not None:
            agents[seat].use_memory(session)
        for i, (agent, s) in enumerate(zip(agents, agent_seeds(seed, players))):
            agent.reset(layout, i, s)
    except BaseException:
        if session is not None:
            session.close()
        raise
    if llm is not None:
        llm.start_episode()
    label = partner_label(partners)
    channel, talkers = open_channel(domain, layout, agents, messages)
    header = LogHeader(
        layout=layout, horizon=horizon, seed=seed, seat=seat, agents=names, ego=ego, partner=label,
        version=beliefgate.__version__,
        config={**domain.env_options(old_dynamics=old_dynamics, **options), **(config or {}),
                **({"gate_params": gate_params.model_dump(mode="json")} if gate_params is not None else {}),
                **({"memory": session.describe()} if session is not None else {}),
                **(llm.describe() if llm is not None else {}),
                **({"messages": channel.rules.model_dump(mode="json")} if channel is not None else {})},
    )
    traj = Trajectory(header)
    writer = LogWriter(log_path, header) if log_path is not None else None
    state = env.reset(seed) if getattr(env, "reset_takes_seed", False) else env.reset()
    events: List[List[str]] = [[] for _ in agents]
    #: seats whose logged skill is their hindsight label (a trained policy's); their rows are written at the end
    hindsight = [i for i, a in enumerate(agents) if getattr(a, "skill_labels", None) == "hindsight"]
    deliveries = 0
    started = time.perf_counter()
    try:
        for t in range(horizon):
            hear_all(channel, talkers)
            actions = [int(a.act(state, events[i])) for i, a in enumerate(agents)]
            infos = [dict(a.info()) for a in agents]
            said = speak_all(channel, talkers, t)
            result = env.step(actions)
            events = result.events
            deliveries += sum(e.count(d) for e in events for d in domain.delivery_events)
            row = StepRow(t=t, state=state, actions=actions, reward=result.reward, events=events,
                          skills=[i.get("skill") for i in infos], info=infos, messages=said)
            traj.steps.append(row)
            if writer is not None and not hindsight:
                writer.step(row)
            state = result.state
            if result.done:
                break
        if hindsight:  # players that announce no skill: the skill their next interaction completes
            relabel_seats(traj.steps, hindsight, domain_labels(domain, layout, [r.events for r in traj.steps]))
            for row in traj.steps if writer is not None else ():
                writer.step(row)
        ego_info = agents[seat].info()
        counts = agent_fallbacks(agents[seat])
        summary = {
            "layout": layout, "ego": ego, "partner": label, "seed": seed, "seat": seat,
            "deliveries": deliveries, "reward": env.score, "steps": len(traj.steps),
            "replans": int(ego_info.get("replans", 0)),
            "effective_replans": int(ego_info.get("effective_replans", 0)), "llm_calls": int(ego_info.get("llm_calls", 0)),
            "fallbacks": int(counts["total"]), "fallback_counts": counts,
            "wall_s": round(time.perf_counter() - started, 4),
        }
        if len(partners) > 1:
            summary["partners"] = list(partners)
        if channel is not None:
            summary["messages"] = channel.summary()
        if llm is not None:
            summary["llm"] = {**llm.usage_summary(), "fallbacks": int(counts["total"])}
        if session is not None:  # the whole episode in one transaction, before the log's final row
            summary["memory"] = session.commit(agents[seat].memory_record(), traj.steps, ego,
                                               deliveries=deliveries, seed=seed)
        traj.final = FinalRow(state=state, summary=summary)
        if writer is not None:
            writer.final(traj.final)
    finally:
        if writer is not None:
            writer.close()
        if session is not None:
            session.close()
    return EpisodeResult(traj, summary, Path(log_path) if log_path is not None else None)



def open_channel(domain, layout: str, agents: Sequence[Any], messages: ChannelRules | bool):
    """The episode's message channel and its talking agents by seat; ``(None, {})`` when the
    channel is off or no agent talks (then nothing is logged or counted)."""
    if messages is False:
        return None, {}
    if messages is not True and not isinstance(messages, ChannelRules):
        raise InputError(f"messages must be True, False or a ChannelRules, got {messages!r}")
    talkers = {i: a for i, a in enumerate(agents) if isinstance(a, Talks)}
    if not talkers:
        return None, {}
    library = domain.controller(layout).library
    rules = messages if isinstance(messages, ChannelRules) else ChannelRules()
    return Channel(len(agents), library.names, library.roles, rules, goals=domain.goal_names(layout) or ()), talkers


def hear_all(channel: Optional[Channel], talkers: Dict[int, Any]) -> None:
    """Give every talking agent the messages delivered to it this step (sent at the last)."""
    for seat, agent in talkers.items():
        heard = channel.deliver(seat)
        if heard:
            agent.hear(heard)


def speak_all(channel: Optional[Channel], talkers: Dict[int, Any], t: int):
    """Take every talking agent's messages of step ``t``; the step's log entry (None: nothing said)."""
    if channel is None:
        return None
    for seat, agent in talkers.items():
        sent = channel.send(seat, t, list(agent.messages_out() or ()))
        if sent is not None and hasattr(agent, "on_sent"):
            agent.on_sent(sent)
    return channel.end_step()


def agent_fallbacks(agent) -> Dict[str, Any]:
    """An agent's fallbacks this episode (:meth:`FallbackLog.summary`); all zero for an agent
    that calls no model (one that is not :class:`~beliefgate.agents.registry.ReportsFallbacks`)."""
    return agent.fallback_summary() if isinstance(agent, ReportsFallbacks) else FallbackLog().summary()
