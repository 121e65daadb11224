"""OverForge's typed decisions: a branch is a ``(strategy, skill)`` pair, a decision a
:class:`PCMDecision`.

The agent builds one :class:`PCMDecision` per decision and logs it as the ``pcm`` entry of the
ego's step info through :meth:`PCMDecision.to_log` (plain JSON: branches as their
``"strategy/skill"`` text, kappa's evidence as the kappa API's own records,
:attr:`beliefgate.beliefs.kappa.Kappa.log`). Whatever reads a log (``beliefgate.eval.pcm``,
the OverForge report) parses it back with :meth:`PCMDecision.from_log`, and replays the
evidence with :meth:`PCMDecision.replay` (:meth:`beliefgate.beliefs.kappa.Kappa.from_log`).
The ``"strategy/skill"`` text exists only at those two boundaries and in kappa's branch names.

Logs written before the evidence went through the kappa API hold it as ``{"judge": [left,
right, y]}`` and ``{"round": r, "scores": {branch: score}}``; :meth:`PCMDecision.from_log`
reads those too (as the same evidence), and :meth:`PCMDecision.to_log` writes kappa's records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from beliefgate.beliefs.kappa import Kappa, KappaInputError, KappaParams, evidence_from_record
from beliefgate.errors import InputError


class PCMRecordError(InputError):
    """A logged decision record that cannot be read (missing field, bad value, unknown evidence)."""


class Branch(NamedTuple):
    """One branch of a decision: the strategy held and the first skill under it."""

    strategy: str
    skill: str

    @property
    def name(self) -> str:
        """The branch's text in logs and as kappa's branch name: ``"strategy/skill"``."""
        return f"{self.strategy}/{self.skill}"

    @classmethod
    def parse(cls, text: Any) -> "Branch":
        """The branch of a ``"strategy/skill"`` text (the skill is everything after the first ``/``)."""
        if not isinstance(text, str) or "/" not in text:
            raise PCMRecordError(f"a branch is 'strategy/skill', got {text!r}")
        strategy, skill = text.split("/", 1)
        return cls(strategy, skill)


class StrategyChange(NamedTuple):
    """The held strategy changed at a decision: from ``before`` (None: none held yet) to ``after``,
    because of ``cause`` (``commit`` or the decision's strategy reason)."""

    before: Optional[str]
    after: str
    cause: str

    def to_log(self) -> Dict[str, Any]:
        return {"from": self.before, "to": self.after, "cause": self.cause}

    @classmethod
    def from_log(cls, data: Any) -> Optional["StrategyChange"]:
        if data is None:
            return None
        if not isinstance(data, Mapping) or not {"from", "to", "cause"} <= set(data):
            raise PCMRecordError(f"a strategy change is {{from, to, cause}}, got {data!r}")
        return cls(data["from"], data["to"], data["cause"])


def legacy_evidence(entry: Any) -> Any:
    """A logged evidence entry as kappa's record: the old ``{"judge": [l, r, y]}`` and ``{"round": r,
    "scores": {...}}`` forms are rewritten, anything else is returned as it is."""
    if isinstance(entry, Mapping) and set(entry) == {"judge"}:
        judged = entry["judge"]
        if not isinstance(judged, (list, tuple)) or len(judged) != 3:
            raise PCMRecordError(f"a judgment entry is {{\"judge\": [left, right, y]}}, got {dict(entry)!r}")
        left, right, y = judged
        return {"left": left, "right": right, "y": y}
    if isinstance(entry, Mapping) and set(entry) == {"round", "scores"}:
        scores = entry["scores"]
        if not isinstance(scores, Mapping):
            raise PCMRecordError(f"a round entry's scores are {{branch: score}}, got {scores!r}")
        return {"round": [{"branch": b, "depth": entry["round"], "score": s} for b, s in scores.items()]}
    return entry


def _number(value: Any, key: str, optional: bool = False) -> Optional[float]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PCMRecordError(f"decision record: {key} must be a number, got {value!r}")
    return float(value)


def _numbers(value: Any, key: str) -> Tuple[float, ...]:
    if not isinstance(value, (list, tuple)):
        raise PCMRecordError(f"decision record: {key} must be a list of numbers, got {value!r}")
    return tuple(_number(v, key) for v in value)


def _branches(value: Any, key: str) -> Tuple[Branch, ...]:
    if not isinstance(value, (list, tuple)):
        raise PCMRecordError(f"decision record: {key} must be a list of 'strategy/skill' names, got {value!r}")
    return tuple(Branch.parse(v) for v in value)


def _scores(value: Any, key: str) -> Dict[str, float]:
    if not isinstance(value, Mapping):
        raise PCMRecordError(f"decision record: {key} must map names to numbers, got {value!r}")
    return {str(k): _number(v, key) for k, v in value.items()}


#: fields every record has (a record logged before ``skill_source`` existed lacks only that one)
REQUIRED = ("reason", "strategy_reason", "strategies", "strategy_scores", "proposer", "branches", "v_imm",
            "evidence", "kappa_params", "rollouts", "kappa", "argmax", "mean", "gap", "nucleus", "best",
            "committed", "depth", "rollout_partner", "skill", "strategy", "change", "time_ms")


@dataclass(frozen=True)
class PCMDecision:
    """One OverForge decision, as the agent made it and as its log entry reads back.

    ``reason``: why the agent planned; ``strategy_reason``: the reason the strategy step saw (a
    pending ``partner_role`` revision replaces it); ``strategies``: the strategies considered
    (held first); ``strategy_scores`` and ``proposer``: the strategy proposer's scores and
    source (``offline`` / ``llm``; None without a choice of strategy); ``branches`` and their
    immediate values ``v_imm``; ``evidence``: kappa's evidence records (:attr:`Kappa.log`) in the
    order kappa received them; ``kappa_params``; ``rollouts``: each round's mean score per
    branch; kappa's read-outs after the last evidence (``kappa``, ``argmax`` probabilities,
    posterior utility ``mean``, ``gap`` of the two best means, ``nucleus``, ``best``,
    ``committed``); ``depth``: rollout rounds used; ``rollout_partner``: ``belief`` / ``uniform``
    (None without rollouts); the ``skill`` played and its ``skill_source`` (``best``, ``hold``,
    ``rule``); the ``strategy`` held after the decision and its ``change``; ``time_ms``: wall time.
    """

    reason: str
    strategy_reason: str
    strategies: Tuple[str, ...]
    strategy_scores: Dict[str, float]
    proposer: Optional[str]
    branches: Tuple[Branch, ...]
    v_imm: Tuple[float, ...]
    evidence: Tuple[Mapping, ...]
    kappa_params: KappaParams
    rollouts: Tuple[Dict[Branch, float], ...]
    kappa: float
    argmax: Tuple[float, ...]
    mean: Tuple[float, ...]
    gap: Optional[float]
    nucleus: Tuple[Branch, ...]
    best: Branch
    committed: bool
    depth: int
    rollout_partner: Optional[str]
    skill: str
    skill_source: Optional[str]
    strategy: Optional[str]
    change: Optional[StrategyChange]
    time_ms: float

    @property
    def names(self) -> List[str]:
        """The branches' names, in kappa's order."""
        return [b.name for b in self.branches]

    # ------------------------------------------------------------------ the log boundary
    def to_log(self) -> Dict[str, Any]:
        """The record as the ``pcm`` entry of a step's info (plain JSON values)."""
        return {
            "reason": self.reason, "strategy_reason": self.strategy_reason, "strategies": list(self.strategies),
            "strategy_scores": dict(self.strategy_scores), "proposer": self.proposer,
            "branches": self.names, "v_imm": list(self.v_imm),
            "evidence": [_plain(e) for e in self.evidence],
            "kappa_params": self.kappa_params.model_dump(mode="json"),
            "rollouts": [{b.name: v for b, v in sc.items()} for sc in self.rollouts],
            "kappa": self.kappa, "argmax": list(self.argmax), "mean": list(self.mean), "gap": self.gap,
            "nucleus": [b.name for b in self.nucleus], "best": self.best.name, "committed": self.committed,
            "depth": self.depth, "rollout_partner": self.rollout_partner,
            "skill": self.skill, "skill_source": self.skill_source, "strategy": self.strategy,
            "change": None if self.change is None else self.change.to_log(),
            "time_ms": self.time_ms,
        }

    @classmethod
    def from_log(cls, data: Any) -> "PCMDecision":
        """A record read back from a log's ``pcm`` entry; :class:`PCMRecordError` (or a
        :class:`~beliefgate.beliefs.kappa.KappaParams` error) naming what is missing or bad."""
        if isinstance(data, PCMDecision):
            return data
        if not isinstance(data, Mapping):
            raise PCMRecordError(f"a decision record is an object, got {type(data).__name__}")
        for key in REQUIRED:
            if key not in data:
                raise PCMRecordError(f"decision record has no {key!r}")
        if not isinstance(data["evidence"], (list, tuple)):
            raise PCMRecordError(f"decision record: evidence must be a list, got {data['evidence']!r}")
        evidence = []
        for i, entry in enumerate(data["evidence"]):
            entry = legacy_evidence(entry)
            try:
                evidence_from_record(entry)  # the kappa API's own reading of its records
            except KappaInputError as exc:
                raise PCMRecordError(f"decision record: evidence entry {i} {entry!r}: {exc}") from None
            evidence.append(entry)
        if not isinstance(data["kappa_params"], Mapping):
            raise PCMRecordError(f"decision record: kappa_params must be an object, got {data['kappa_params']!r}")
        if not isinstance(data["rollouts"], (list, tuple)):
            raise PCMRecordError(f"decision record: rollouts must be a list, got {data['rollouts']!r}")
        strategies = data["strategies"]
        if not isinstance(strategies, (list, tuple)):
            raise PCMRecordError(f"decision record: strategies must be a list, got {strategies!r}")
        depth = data["depth"]
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise PCMRecordError(f"decision record: depth must be an integer, got {depth!r}")
        return cls(
            reason=data["reason"], strategy_reason=data["strategy_reason"], strategies=tuple(strategies),
            strategy_scores=_scores(data["strategy_scores"], "strategy_scores"), proposer=data["proposer"],
            branches=_branches(data["branches"], "branches"), v_imm=_numbers(data["v_imm"], "v_imm"),
            evidence=tuple(evidence), kappa_params=KappaParams(**data["kappa_params"]),
            rollouts=tuple({Branch.parse(k): v for k, v in _scores(sc, "rollouts").items()}
                           for sc in data["rollouts"]),
            kappa=_number(data["kappa"], "kappa"), argmax=_numbers(data["argmax"], "argmax"),
            mean=_numbers(data["mean"], "mean"), gap=_number(data["gap"], "gap", optional=True),
            nucleus=_branches(data["nucleus"], "nucleus"), best=Branch.parse(data["best"]),
            committed=bool(data["committed"]), depth=depth, rollout_partner=data["rollout_partner"],
            skill=data["skill"], skill_source=data.get("skill_source"), strategy=data["strategy"],
            change=StrategyChange.from_log(data["change"]), time_ms=_number(data["time_ms"], "time_ms"),
        )

    # ------------------------------------------------------------------ kappa, read back
    def replay(self) -> Kappa:
        """A :class:`~beliefgate.beliefs.kappa.Kappa` over the branches, with the logged parameters,
        fed the logged evidence in its order (:meth:`Kappa.from_log`; a record whose evidence no
        longer replays raises the kappa API's :class:`~beliefgate.beliefs.kappa.KappaInputError`)."""
        return Kappa.from_log(self.names, self.kappa_params, self.evidence)

    def check(self, tol: float = 1e-9) -> Optional[str]:
        """None when :meth:`replay` gives the logged kappa, argmax probabilities, nucleus, best and
        commit; else what differs (also when the evidence no longer replays)."""
        try:
            kappa = self.replay()
        except KappaInputError as exc:
            return f"the evidence does not replay: {exc}"
        if not math.isclose(kappa.kappa, self.kappa, rel_tol=0.0, abs_tol=tol):
            return f"kappa {kappa.kappa!r} != logged {self.kappa!r}"
        probs = [float(p) for p in kappa.info.argmax_probs]
        if len(probs) != len(self.argmax) or any(abs(a - b) > tol for a, b in zip(probs, self.argmax)):
            return "argmax probabilities differ"
        if list(kappa.nucleus) != [b.name for b in self.nucleus]:
            return f"nucleus {kappa.nucleus} != logged {[b.name for b in self.nucleus]}"
        if kappa.commit != self.committed or kappa.best != self.best.name:
            return "commit / best differ"
        return None


def _plain(entry: Mapping) -> Dict[str, Any]:
    """A copy of a kappa evidence record (its round's rollouts copied too), for a log line."""
    out = dict(entry)
    if isinstance(out.get("round"), (list, tuple)):
        out["round"] = [dict(r) for r in out["round"]]
    return out


__all__ = ["Branch", "PCMDecision", "PCMRecordError", "StrategyChange", "legacy_evidence"]
