"""The partner-skill model's data: padded, batched trajectories (:class:`FitData`).

Domain-free: a domain turns its own logs into per-trajectory step arrays and pads
them with :func:`pad_trajectories` (Overcooked:
:mod:`beliefgate.envs.overcooked.fitdata`, reached through :func:`load_logs` and
the ``beliefgate.fitdata`` entry-point group). :func:`from_arrays` builds the same
container from arrays a caller already holds.

Everything is validated before any sampling; errors are :class:`FitDataError`
naming the file (and the step).

:func:`simulate` replaces the actions of a :class:`FitData` with draws from the
model at known parameters (same states, feasibility and completions), for
parameter-recovery and calibration checks.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import hashlib
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from beliefgate.models.checks import are_names
from beliefgate.models.skill_model import SkillData, skill_data
from beliefgate.validation import repeats

PathLike = Union[str, Path]
Progress = Callable[[int, int, str], None]


class FitDataError(InputError):
    """A log (or a set of logs) cannot be turned into model data."""


class FitData(NamedTuple):
    """Model data for one player across ``B`` trajectories, padded to ``T`` steps.

    Fields
    ------
    skill : SkillData
        Batched model inputs ``[B, T, ...]`` (see
        :class:`beliefgate.models.skill_model.SkillData`); ``skill.valid`` marks
        the real steps of each trajectory.
    ambiguous : bool[B, T]
        Steps whose tempering weight is the ambiguous (put-down) weight; a fit
        with a free tempering weight replaces their weight.
    action : int32[B, T]
        The action the player took (from the log, or simulated); -1 on padding
        or when unknown.
    true_skill : int32[B, T]
        Ground-truth (or hindsight) skill index logged for the player; -1 when
        unknown (idle, unlabelled, padding).
    skill_names : tuple[str, ...]
        Names of the ``K`` skills (library order).
    action_names : tuple[str, ...]
        Names of the ``A`` actions.
    excluded_actions : tuple[int, ...]
        Actions whose observation gets weight 0 (Overcooked: STAY); the posterior
        predictive check leaves them out on both sides.
    sources : tuple[str, ...]
        Where each trajectory came from (log path, or a label).
    meta : dict
        Provenance: layouts, player sides, ambiguous weight, ... (JSON-ready).
    """

    skill: SkillData
    ambiguous: np.ndarray
    action: np.ndarray
    true_skill: np.ndarray
    skill_names: tuple
    action_names: tuple
    excluded_actions: tuple
    sources: tuple
    meta: dict

    @property
    def num_trajectories(self) -> int:
        return int(self.action.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        """Number of real steps of each trajectory, int[B]."""
        return np.asarray(self.skill.valid).sum(axis=1)

    @property
    def num_steps(self) -> int:
        """Total number of real steps."""
        return int(self.lengths.sum())

    @property
    def has_true_skills(self) -> bool:
        return bool(np.any(self.true_skill >= 0))

    def fingerprint(self) -> str:
        """sha256 of the observed arrays (two fits are comparable only on equal data)."""
        digest = hashlib.sha256()
        for arr in (self.skill.action_mask, self.skill.weight, self.skill.feasible,
                    self.skill.completed, self.skill.valid, self.skill.q):
            arr = np.asarray(arr)
            # canonical dtypes: a float64 (--x64) fit of the same logs has the same fingerprint
            kind = np.float32 if arr.dtype.kind == "f" else (np.bool_ if arr.dtype.kind == "b" else np.int64)
            arr = np.ascontiguousarray(arr.astype(kind))
            digest.update(str(arr.shape).encode())
            digest.update(arr.tobytes())
        return digest.hexdigest()

    # ------------------------------------------------------------ ArviZ round trip
    def to_datasets(self):
        """``(observed_data, constant_data)`` as ``xarray.Dataset`` (ArviZ groups).

        ``observed_data`` holds what the model conditions on (the consistent-action
        mask) and the taken action; ``constant_data`` the covariates (``q``,
        weights, feasibility, completions, ...) and the logged true skills.
        """
        import xarray as xr

        s = self.skill
        coords = {
            "trajectory": np.arange(self.num_trajectories),
            "step": np.arange(self.action.shape[1]),
            "skill": list(self.skill_names),
            "action_kind": list(self.action_names),
        }
        observed = xr.Dataset(
            {
                "action_mask": (("trajectory", "step", "action_kind"), np.asarray(s.action_mask)),
                "action": (("trajectory", "step"), self.action.astype(np.int32)),
            },
            coords={k: coords[k] for k in ("trajectory", "step", "action_kind")},
        )
        constant = xr.Dataset(
            {
                "q": (("trajectory", "step", "skill", "action_kind"), np.asarray(s.q)),
                "weight": (("trajectory", "step"), np.asarray(s.weight)),
                "feasible": (("trajectory", "step", "skill"), np.asarray(s.feasible)),
                "completed": (("trajectory", "step"), np.asarray(s.completed, np.int32)),
                "prior_counts": (("trajectory", "skill"), np.asarray(s.prior_counts)),
                "valid": (("trajectory", "step"), np.asarray(s.valid)),
                "ambiguous": (("trajectory", "step"), self.ambiguous),
                "true_skill": (("trajectory", "step"), self.true_skill.astype(np.int32)),
                "source": (("trajectory",), np.array(self.sources, dtype=str)),
            },
            coords=coords,
            attrs={"excluded_actions": list(self.excluded_actions),
                   "meta": _json(self.meta)},
        )
        return observed, constant

    @classmethod
    def from_idata(cls, idata) -> "FitData":
        """Rebuild the data stored in a fit's ``observed_data``/``constant_data`` groups."""
        import json

        if "constant_data" not in idata.groups() or "observed_data" not in idata.groups():
            raise FitDataError("this InferenceData has no observed_data/constant_data groups "
                               "(was it written by `beliefgate fit`?)")
        obs, const = idata.observed_data, idata.constant_data
        skill = skill_data(
            np.asarray(const["q"].values), np.asarray(obs["action_mask"].values, bool),
            np.asarray(const["weight"].values), np.asarray(const["feasible"].values, bool),
            np.asarray(const["completed"].values).astype(np.int64),
            np.asarray(const["prior_counts"].values), np.asarray(const["valid"].values, bool))
        excluded = const.attrs.get("excluded_actions", [])
        excluded = tuple(int(a) for a in np.atleast_1d(excluded))
        return cls(
            skill=skill,
            ambiguous=np.asarray(const["ambiguous"].values, bool),
            action=np.asarray(obs["action"].values, np.int32),
            true_skill=np.asarray(const["true_skill"].values, np.int32),
            skill_names=tuple(str(x) for x in const["skill"].values),
            action_names=tuple(str(x) for x in obs["action_kind"].values),
            excluded_actions=excluded,
            sources=tuple(str(x) for x in const["source"].values),
            meta=json.loads(const.attrs.get("meta", "{}")),
        )


def _json(value) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


# --------------------------------------------------------------------------------------
# From arrays
# --------------------------------------------------------------------------------------


def from_arrays(q, action_mask, weight=None, feasible=None, completed=None, prior_counts=None,
                valid=None, *, action=None, true_skill=None, ambiguous=None,
                skill_names: Optional[Sequence[str]] = None,
                action_names: Optional[Sequence[str]] = None,
                excluded_actions: Sequence[int] = (), sources: Optional[Sequence[str]] = None,
                meta: Optional[Mapping] = None) -> FitData:
    """Package batched arrays ``[B, T, ...]`` (any domain) as :class:`FitData`.

    The model inputs are validated by :func:`beliefgate.models.skill_model.skill_data`;
    ``action`` and ``true_skill`` default to -1 (unknown), ``ambiguous`` to False.
    """
    skill = skill_data(q, action_mask, weight, feasible, completed, prior_counts, valid)
    if skill.q.ndim != 4:
        raise FitDataError(f"from_arrays takes batched arrays [B, T, K, A], got q {skill.q.shape}")
    num_traj, num_steps, num_skills, num_actions = skill.q.shape
    lead = (num_traj, num_steps)

    def ints(x, name):
        if x is None:
            return np.full(lead, -1, np.int32)
        x = np.asarray(x)
        if x.shape != lead or not np.issubdtype(x.dtype, np.integer):
            raise FitDataError(f"{name} must be integers of shape {lead}, got {x.shape} {x.dtype}")
        return x.astype(np.int32)

    act = ints(action, "action")
    truth = ints(true_skill, "true_skill")
    if np.any((act < -1) | (act >= num_actions)):
        raise FitDataError(f"action must lie in [-1, {num_actions})")
    if np.any((truth < -1) | (truth >= num_skills)):
        raise FitDataError(f"true_skill must lie in [-1, {num_skills})")
    amb = np.zeros(lead, bool) if ambiguous is None else np.asarray(ambiguous, bool)
    if amb.shape != lead:
        raise FitDataError(f"ambiguous must have shape {lead}, got {amb.shape}")
    valid_np = np.asarray(skill.valid)
    observed = valid_np & (act >= 0)
    if np.any(observed):
        mask_np = np.asarray(skill.action_mask)
        allowed = np.take_along_axis(mask_np, np.where(observed, act, 0)[..., None], axis=-1)[..., 0]
        bad = observed & ~allowed
        if np.any(bad):  # the fit reads the mask, the predictive check the action: they must agree
            b, t = (int(i) for i in np.argwhere(bad)[0])
            raise FitDataError(f"action[{b}, {t}] = {int(act[b, t])} is not allowed by action_mask[{b}, {t}] "
                               f"({int(bad.sum())} such step(s)); the observed action must be one the mask allows")
    for what, given in (("skill_names", skill_names), ("action_names", action_names)):
        if given is not None and not are_names(given):
            # what Gate.from_logprobs refuses too: "abc" was three skills, 1 and "1" two skills of one name
            raise FitDataError(f"{what} must be a sequence of non-empty strings, got {given!r}")
    names = tuple(skill_names) if skill_names is not None else tuple(f"skill_{k}" for k in range(num_skills))
    anames = tuple(action_names) if action_names is not None else tuple(f"a{a}" for a in range(num_actions))
    if len(names) != num_skills or len(anames) != num_actions:
        raise FitDataError(f"need {num_skills} skill names and {num_actions} action names, got "
                           f"{len(names)} and {len(anames)}")
    for what, given in (("skill", names), ("action", anames)):
        twice = sorted((str(name) for name, _ in repeats(given)))
        if twice:  # the fit's coordinates (and ArviZ's summary) need one name per skill
            raise FitDataError(f"{what} names must be distinct; {', '.join(twice)} given more than once")
    if any(not 0 <= int(a) < num_actions for a in excluded_actions):
        raise FitDataError(f"excluded_actions must lie in [0, {num_actions})")
    srcs = tuple(sources) if sources is not None else tuple(f"trajectory_{b}" for b in range(num_traj))
    if len(srcs) != num_traj:
        raise FitDataError(f"need {num_traj} sources, got {len(srcs)}")
    return FitData(skill, amb & valid_np, np.where(valid_np, act, -1).astype(np.int32),
                   np.where(valid_np, truth, -1).astype(np.int32), names, anames,
                   tuple(int(a) for a in excluded_actions), srcs, dict(meta or {}))


# --------------------------------------------------------------------------------------
# From Overcooked trajectory logs
# --------------------------------------------------------------------------------------


def load_logs(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
              domain: str = "overcooked", **options) -> FitData:
    """Read trajectory logs of ``domain`` into :class:`FitData` (the domain's registered loader).

    The loader lives with the domain (Overcooked:
    :func:`beliefgate.envs.overcooked.fitdata.load_logs`, with ``allow_incomplete``,
    ``ambiguous_weight`` and ``progress`` options) and is found through the
    ``beliefgate.fitdata`` entry-point group, so this package imports no domain.
    """
    from beliefgate.plugins import FIT_DATA, OBSERVERS, UnknownDomainError, plugin

    try:
        loader = plugin(FIT_DATA, domain)
    except UnknownDomainError as exc:
        # a domain object registered under 'beliefgate.domains' may carry its loader itself
        # (``Domain.load_fit_data``): an install whose metadata predates its fitdata entry point
        try:
            loader = getattr(plugin(OBSERVERS, domain), "load_fit_data", None)
        except UnknownDomainError:
            loader = None
        if loader is None:
            raise FitDataError(str(exc)) from None
    return loader(paths, partner_side, **options)


def load_goal_logs(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
                   domain: str = "overcooked", **options):
    """Read trajectory logs of ``domain`` into the goal model's
    :class:`~beliefgate.models.goal.model.GoalFitData`: the domain object registered under
    ``beliefgate.domains`` supplies it (``Domain.load_goal_fit_data``), so this package imports no
    domain. A domain without a goal model (classic Overcooked) raises :class:`FitDataError`."""
    from beliefgate.plugins import OBSERVERS, UnknownDomainError, plugin

    try:
        loader = getattr(plugin(OBSERVERS, domain), "load_goal_fit_data", None)
    except UnknownDomainError as exc:
        raise FitDataError(str(exc)) from None
    if loader is None:
        first = f"{paths[0]}: " if paths else ""
        raise FitDataError(f"{first}the {domain} domain has no goal (recipe) model: --model goal reads "
                           "OvercookedV2 logs (v2/ layouts)")
    return loader(paths, partner_side, **options)


def detect_domain(paths: Sequence[PathLike], default: str = "overcooked") -> str:
    """The domain whose layout the first log's header names: the first domain registered under
    ``beliefgate.domains`` that owns it (``owns_layout``); ``default`` when the header cannot be
    read or no domain claims the layout (the loader then says what is wrong with the log)."""
    import json

    from beliefgate.plugins import OBSERVERS, domain_names, plugin

    if not paths:
        return default
    try:
        with open(paths[0], "rb") as fh:
            header = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError):
        return default
    layout = header.get("layout") if isinstance(header, dict) else None
    if not isinstance(layout, str):
        return default
    for name in domain_names(OBSERVERS):
        owns = getattr(plugin(OBSERVERS, name), "owns_layout", None)
        if owns is not None and owns(layout):
            return name
    return default


def pad_trajectories(per_traj: list, skill_names, action_names, excluded, sources, meta) -> FitData:
    """Pad per-trajectory step arrays (``q, mask, weight, feasible, completed, ambiguous,
    action, true_skill``, each ``[T_b, ...]``) into one batched :class:`FitData`."""
    return _pad(per_traj, skill_names, action_names, excluded, sources, meta)


def _pad(per_traj: list, skill_names, action_names, excluded, sources, meta) -> FitData:
    num_traj = len(per_traj)
    horizon = max(len(s.weight) for s in per_traj)
    num_skills, num_actions = per_traj[0].q.shape[1:]
    q = np.zeros((num_traj, horizon, num_skills, num_actions))
    mask = np.ones((num_traj, horizon, num_actions), bool)
    weight = np.zeros((num_traj, horizon))
    feasible = np.ones((num_traj, horizon, num_skills), bool)
    completed = np.full((num_traj, horizon), -1, np.int64)
    valid = np.zeros((num_traj, horizon), bool)
    ambiguous = np.zeros((num_traj, horizon), bool)
    action = np.full((num_traj, horizon), -1, np.int32)
    truth = np.full((num_traj, horizon), -1, np.int32)
    for b, s in enumerate(per_traj):
        n = len(s.weight)
        q[b, :n], mask[b, :n], weight[b, :n], feasible[b, :n] = s.q, s.mask, s.weight, s.feasible
        completed[b, :n], valid[b, :n], ambiguous[b, :n] = s.completed, True, s.ambiguous
        action[b, :n], truth[b, :n] = s.action, s.true_skill
    return from_arrays(q, mask, weight, feasible, completed, None, valid, action=action,
                       true_skill=truth, ambiguous=ambiguous, skill_names=skill_names,
                       action_names=action_names, excluded_actions=excluded, sources=sources,
                       meta=meta)


# --------------------------------------------------------------------------------------
# Simulation at known parameters
# --------------------------------------------------------------------------------------


def simulate(data: FitData, params: Mapping[str, float], seed: int) -> FitData:
    """Actions (and skills) drawn from the hazard model at ``params`` on ``data``'s states.

    Keeps ``q``, feasibility, completions and validity; replaces the action
    mask by the one-hot simulated action, every weight by 1 (a proper
    likelihood), ``action`` by the draw and ``true_skill`` by the simulated skill
    path. ``params`` holds scalar ``beta, epsilon, hazard, alpha`` (missing ones
    take their defaults). Deterministic in ``seed``.
    """
    import jax

    from beliefgate.models.skill_model import prior_predictive

    skill = data.skill
    keys = jax.random.split(jax.random.PRNGKey(int(seed)), data.num_trajectories)
    actions, skills = [], []
    for b in range(data.num_trajectories):
        one = jax.tree_util.tree_map(lambda x, b=b: x[b], skill)
        draw = prior_predictive(keys[b], one, dict(params), num_samples=1)
        actions.append(np.asarray(draw["a"][0]))
        skills.append(np.asarray(draw["z"][0]))
    action = np.stack(actions).astype(np.int32)
    valid = np.asarray(skill.valid)
    num_actions = skill.q.shape[-1]
    mask = np.eye(num_actions, dtype=bool)[np.maximum(action, 0)] | ~valid[..., None]
    truth = np.where(valid, np.stack(skills), -1).astype(np.int32)
    meta = {**data.meta, "simulated": {"params": {k: float(v) for k, v in params.items()},
                                       "seed": int(seed)}}
    return from_arrays(np.asarray(skill.q), mask, np.where(valid, 1.0, 0.0),
                       np.asarray(skill.feasible), np.asarray(skill.completed).astype(np.int64),
                       np.asarray(skill.prior_counts), valid, action=action, true_skill=truth,
                       ambiguous=np.zeros_like(valid), skill_names=data.skill_names,
                       action_names=data.action_names, excluded_actions=(),
                       sources=data.sources, meta=meta)


def subset(data: FitData, trajectories: Sequence[int], max_steps: Optional[int] = None) -> FitData:
    """A :class:`FitData` with some trajectories (and optionally the first ``max_steps``)."""
    idx = np.asarray(list(trajectories), int)
    cut = slice(None) if max_steps is None else slice(0, int(max_steps))
    s = data.skill
    return from_arrays(
        np.asarray(s.q)[idx, cut], np.asarray(s.action_mask)[idx, cut], np.asarray(s.weight)[idx, cut],
        np.asarray(s.feasible)[idx, cut], np.asarray(s.completed)[idx, cut].astype(np.int64),
        np.asarray(s.prior_counts)[idx], np.asarray(s.valid)[idx, cut],
        action=data.action[idx, cut], true_skill=data.true_skill[idx, cut],
        ambiguous=data.ambiguous[idx, cut], skill_names=data.skill_names,
        action_names=data.action_names, excluded_actions=data.excluded_actions,
        sources=[data.sources[i] for i in idx], meta=data.meta)


__all__ = ["FitData", "FitDataError", "from_arrays", "load_goal_logs", "load_logs", "pad_trajectories", "simulate",
           "subset"]
