"""What the players said and what they then did, from a trajectory log alone (issue 45).

* :func:`request_outcomes`: every request in the log with the asked seat's *next sub-task* (the
  first skill it starts at or after the step the request is heard; None where the episode ends
  first) and whether the seat's next proposal after it gives the seat the requested skill's role;
* :func:`followed_share` and :func:`chance_share`: the share of requests whose skill is the next
  sub-task, and the share expected if the requested skills were shuffled among the requests (every
  request's next sub-task against every requested skill: the mean over all permutations, exactly);
  :func:`pooled_gap`: their difference over a run's requests pooled, with an interval over episodes;
* :func:`agreement_steps`: the steps each seat held an agreed role split (OverForge's
  ``talk.agreement``), and how its agreements ended;
* :func:`speech_accuracy`: how listeners that read words (:mod:`beliefgate.agents.speech`) read
  them, against what the speaker meant.

A message said in words (a ``say``) counts as the typed message it stood for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from beliefgate.envs.domain import domain_for_layout
from beliefgate.envs.messages import meant


@dataclass(frozen=True)
class RequestOutcome:
    """One request: when it was said, to which seat, for which skill, and what the seat did next."""

    t: int
    sender: int
    seat: int
    skill: str
    next_skill: Optional[str]
    #: the seat's next proposal gave the seat the requested skill's role (None: it proposed nothing after)
    in_next_proposal: Optional[bool]


def _next_started(traj, seat: int, t0: int) -> Optional[str]:
    """The first skill ``seat`` starts at or after step ``t0`` (a change of its logged skill to a skill)."""
    steps = traj.steps
    for t in range(max(t0, 1), len(steps)):
        now, before = steps[t].skills[seat], steps[t - 1].skills[seat]
        if now is not None and now != before:
            return now
    return None


def request_outcomes(traj) -> List[RequestOutcome]:
    """Every request in ``traj`` (module docstring), in the order said."""
    library = domain_for_layout(traj.header.layout).controller(traj.header.layout).library
    said = [meant(m) for r in traj.steps if r.messages is not None for m in r.messages.sent]
    out = []
    for m in said:
        if m.kind != "request":
            continue
        seat = m.seat if m.seat is not None else m.to
        later = [p for p in said if p.kind == "propose" and p.sender == seat and p.t > m.t and seat in p.roles]
        in_prop = None if not later else later[0].roles[seat] == library.role_of(m.skill)
        out.append(RequestOutcome(m.t, m.sender, seat, m.skill, _next_started(traj, seat, m.t + 1), in_prop))
    return out


def followed_share(outcomes: Sequence[RequestOutcome]) -> float:
    """The share of requests (with a next sub-task) whose skill was the asked seat's next sub-task."""
    seen = [o for o in outcomes if o.next_skill is not None]
    return sum(o.next_skill == o.skill for o in seen) / len(seen) if seen else float("nan")


def chance_share(outcomes: Sequence[RequestOutcome]) -> float:
    """:func:`followed_share` with the requested skills shuffled among the requests: the mean over
    every permutation, i.e. the share of (request, requested skill) pairs that match."""
    seen = [o for o in outcomes if o.next_skill is not None]
    if not seen:
        return float("nan")
    skills = [o.skill for o in seen]
    return sum(o.next_skill == s for o in seen for s in skills) / (len(seen) ** 2)


def pooled_gap(episodes: Sequence[Sequence[RequestOutcome]], n_boot: int = 10_000, level: float = 0.95,
               seed: int = 0) -> Tuple[float, float, float, int]:
    """Followed share minus chance over the requests of all ``episodes`` pooled (the requested
    skills shuffled among every request of the run, not only its own episode's: an episode with one
    request has a per-episode chance equal to its followed share, so it says nothing per episode),
    with a percentile interval from resampling episodes (``n_boot`` resamples, ``seed``). Returns
    ``(gap, lo, hi, episodes used)``; NaNs when no request has a next sub-task."""
    import numpy as np

    eps = [list(ep) for ep in episodes if any(o.next_skill is not None for o in ep)]
    if not eps:
        return float("nan"), float("nan"), float("nan"), 0

    def gap(sample: Sequence[Sequence[RequestOutcome]]) -> float:
        pooled = [o for ep in sample for o in ep]
        return followed_share(pooled) - chance_share(pooled)

    rng = np.random.default_rng(seed)
    draws = np.array([gap([eps[i] for i in rng.integers(0, len(eps), len(eps))]) for _ in range(n_boot)])
    tail = (1.0 - level) / 2.0
    return gap(eps), float(np.quantile(draws, tail)), float(np.quantile(draws, 1.0 - tail)), len(eps)


def agreement_steps(traj) -> Dict[int, Dict[str, Any]]:
    """Per seat that logs OverForge's talk info: steps under an agreement, agreements made, and how
    they ended (``contradicted``, ``renegotiated``) from the logged talk events."""
    out: Dict[int, Dict[str, Any]] = {}
    for row in traj.steps:
        for seat, info in enumerate(row.info):
            talk = info.get("talk") if isinstance(info, dict) else None
            if not isinstance(talk, dict) or "agreement" not in talk:
                continue
            rec = out.setdefault(seat, {"steps": 0, "agreements": 0, "ended": {}})
            rec["steps"] += talk["agreement"] is not None
            rec["agreements"] = int(talk.get("agreements", rec["agreements"]))
            for ev in talk.get("events", ()):
                if ev.startswith("agreement ended ("):
                    why = ev[len("agreement ended ("):-1]
                    rec["ended"][why] = rec["ended"].get(why, 0) + 1
    return out


def speech_accuracy(traj) -> Dict[str, Any]:
    """Every reading of a ``say`` that a listener logged (``speech.reads`` in its step info) against the
    speaker's ``means``: how many were read, unreadable, read as the right kind, and read exactly
    (the same kind and fields; an answer's ``reply_to`` and a request's default seat count as fields)."""
    meanings = {m.id: meant(m) for r in traj.steps if r.messages is not None for m in r.messages.sent
                if m.kind == "say" and m.means is not None}
    reads = [rd for row in traj.steps for info in row.info
             for rd in ((info or {}).get("speech") or {}).get("reads", [])]
    out = {"reads": len(reads), "unreadable": 0, "kind_right": 0, "exact": 0}
    for rd in reads:
        truth = meanings.get(rd["id"])
        got = rd.get("as")
        if got is None:
            out["unreadable"] += 1
            continue
        if truth is None or got.get("kind") != truth.kind:
            continue
        out["kind_right"] += 1
        out["exact"] += read_as_meant(truth, got)
    return out


def read_as_meant(truth: Any, got: Dict[str, Any]) -> bool:
    """Whether a reading ``got`` (a typed message's JSON form) is exactly the typed message ``truth``:
    the same kind and fields, with a request's default seat its recipient, and neither a decline's
    reason nor the recipient nor an inform's empty fields counted."""
    want = truth.model_dump(exclude={"sender", "t", "id", "text", "to"}, exclude_none=True)
    have = {k: v for k, v in got.items() if k != "to"}
    if want.get("kind") == "request" and want.get("seat") is None:
        want["seat"] = truth.to
    if want.get("kind") == "decline":
        want.pop("reason", None)
        have.pop("reason", None)
    if want.get("kind") == "inform":
        want, have = ({k: v for k, v in d.items() if v not in (None, "")} for d in (want, have))
    norm = lambda d: {k: ({str(s): r for s, r in v.items()} if isinstance(v, dict) else v) for k, v in d.items()}
    return norm(want) == norm(have)
