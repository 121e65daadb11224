"""The NumPyro model of OverForge branch utilities (SPEC §5), its data, simulator and fit.

Generative model, for decision ``n`` with branches ``b = 1..K_n``::

    mu0 ~ Normal(0, 1)              sigma0 ~ LogNormal(0, 0.5)
    tau ~ LogNormal(log 0.5, 0.75)  sigma_r ~ LogNormal(0, 0.75)        (PRIORS; or pinned)
    U_nb = mu0 + sigma0 * z_nb,  z_nb ~ Normal(0, 1)                     (non-centred)
    y    ~ Bernoulli(sigmoid((U_nb - U_nc) / tau))    per judgment "b over c"
    r    ~ Normal(U_nb, sigma_r^2 / d)                per rollout of b at depth d

:func:`utility_model` is the single definition: the online kappa
(:mod:`beliefgate.beliefs.kappa`) approximates its posterior over ``U`` for one decision
at fixed parameters, :func:`nuts_argmax_probs` samples that same posterior with NUTS (the
reference the tests compare kappa with), and :func:`fit_kappa` fits the parameters to
many logged decisions (NUTS or SVI) into an ``arviz.InferenceData``.

Decisions JSONL (one decision per line; ``docs/kappa.md``)::

    {"decision": "ep3-t194", "branches": ["g0:interact", "g0:up", "g1:interact"],
     "judgments": [{"left": "g0:interact", "right": "g0:up", "y": 1}, ...],
     "rollouts": [{"branch": "g1:interact", "depth": 2, "score": 0.4}, ...]}

``branches`` (>= 1 distinct names) is required; ``judgments`` and ``rollouts`` default
to empty; other keys (``kappa``, ``best``, ``true_utilities``, ...) are kept as metadata.
:meth:`beliefgate.beliefs.kappa.Kappa.to_record` writes this format.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from functools import partial
from pathlib import Path
from typing import Any, Dict, Iterable, List, Literal, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from beliefgate.errors import InputError, LookupFailure
from beliefgate.fileio import DataSyntaxError, parse_data
from beliefgate.models.fitio import FitFile

# --------------------------------------------------------------------------- errors


class KappaInputError(InputError):
    """Base class: bad input to kappa. ``field`` names the offending argument / request field;
    ``index`` is the position of the offending piece in what ``update_many`` was given (else None)."""

    def __init__(self, message: str, field: Optional[str] = None):
        super().__init__(message)
        self.field = field
        self.index: Optional[int] = None


class UnknownBranchError(KappaInputError, LookupFailure):
    """A branch is neither one of the decision's branch names nor an index in range."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown branch"


class SelfJudgmentError(KappaInputError):
    """A branch was judged against itself."""


class JudgmentValueError(KappaInputError):
    """A judgment outcome ``y`` is not 0 or 1."""


class ExtremeEvidenceError(KappaInputError):
    """The evidence (with these parameters) is too extreme for float64: a posterior variance
    collapsed to zero, a site or probability came out non-finite, or the covariance lost
    positive definiteness. The state is unchanged; the request is refused, not approximated."""


class NonFiniteScoreError(KappaInputError):
    """A rollout score is NaN, infinite, not a number, or outside ``[-SCORE_BOUND, SCORE_BOUND]``."""


#: largest magnitude of a rollout score, everywhere a score enters (the API, the service, the
#: decisions a fit reads). Utilities far beyond it only lose float64 (and float32) precision:
#: the importance weights of the argmax rule cancel terms of size score^2 / tau^2.
SCORE_BOUND = 1e9
#: the bound as messages show it: "[-1e9, 1e9]"
SCORE_RANGE = f"[-{SCORE_BOUND:.0e}, {SCORE_BOUND:.0e}]".replace("e+0", "e")


class DepthError(KappaInputError):
    """A rollout depth is not an integer >= 1."""


class DuplicateBranchError(KappaInputError):
    """Two branches share a name (or one branch appears twice in a rollout round)."""


class NoBranchError(KappaInputError):
    """A decision needs at least one branch."""


class BranchNameError(KappaInputError):
    """A branch name is not a non-empty string."""


class KappaParamError(KappaInputError):
    """A :class:`KappaParams` field is outside its range (theta or nucleus_p outside (0, 1], ...)."""


class KappaStateError(KappaInputError):
    """A state handed to ``Kappa.restore`` that is not one of this object's (other branches,
    or ahead of its log)."""

    def __init__(self, message: str, field: Optional[str] = "state"):
        super().__init__(message, field)


class EvidenceTypeError(KappaInputError):
    """The evidence is not a :class:`Judgment`, :class:`Rollout` or :class:`RolloutRound`."""


class RoundLimitError(KappaInputError):
    """A rollout round beyond ``max_rounds``."""


class NotInNucleusError(KappaInputError):
    """A rollout round after the first names a branch outside the current nucleus."""


# --------------------------------------------------------------------------- validation


def _check_names(branches) -> tuple:
    if isinstance(branches, (str, bytes)):
        raise BranchNameError(f"branches must be a sequence of names, got the string {branches!r}", "branches")
    try:
        names = list(branches)
    except TypeError:
        raise BranchNameError(f"branches must be a sequence of names, got {type(branches).__name__}",
                              "branches") from None
    if len(names) < 1:
        raise NoBranchError("a decision needs at least one branch, got none", "branches")
    for n in names:
        if not isinstance(n, str) or not n:
            raise BranchNameError(f"branch names must be non-empty strings, got {n!r}", "branches")
    seen = set()
    for n in names:
        if n in seen:
            raise DuplicateBranchError(f"branch name {n!r} appears twice in {names!r}", "branches")
        seen.add(n)
    return tuple(names)


def _index(state: KappaState, ref, field: str) -> int:
    names = state.names
    if isinstance(ref, str):
        try:
            return names.index(ref)
        except ValueError:
            raise UnknownBranchError(f"{field} {ref!r} is not a branch of this decision (branches: "
                                     f"{list(names)})", field) from None
    if isinstance(ref, (bool, np.bool_)) or not isinstance(ref, (int, np.integer)):
        raise UnknownBranchError(f"{field} must be a branch name or index, got {ref!r}", field)
    if not 0 <= int(ref) < len(names):
        raise UnknownBranchError(f"{field} index {int(ref)} outside [0, {len(names)})", field)
    return int(ref)


def judgment_outcome(y) -> int:
    if isinstance(y, (bool, np.bool_)):
        return int(y)
    if isinstance(y, (int, np.integer)) and int(y) in (0, 1):
        return int(y)
    raise JudgmentValueError(f"judgment y must be 0 or 1, got {y!r}", "y")


#: largest rollout depth (a rollout's variance is sigma_r^2 / depth: at 10^4 steps it is already
#: 10^-4 of one step's; a 42-digit depth overflowed float32 in the fit, "internal error")
MAX_DEPTH = 10_000


def _depth(depth) -> int:
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)) or \
            not 1 <= int(depth) <= MAX_DEPTH:
        raise DepthError(f"rollout depth must be an integer in 1..{MAX_DEPTH}, got {depth!r}", "depth")
    return int(depth)


def _score(score) -> float:
    if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
        raise NonFiniteScoreError(f"rollout score must be a finite number, got {score!r}", "score")
    value = float(score)
    if not math.isfinite(value):
        raise NonFiniteScoreError(f"rollout score must be finite, got {value!r}", "score")
    if abs(value) > SCORE_BOUND:
        raise NonFiniteScoreError(f"rollout score must lie in {SCORE_RANGE}, got {value!r}", "score")
    return value



#: format tag of a kappa fit's record (``idata.attrs["beliefgate_kappa_fit"]``)
FORMAT = "beliefgate.kappa_fit/1"
CONFIG_ATTR = "beliefgate_kappa_fit"
PARAM_NAMES = ("mu0", "sigma0", "tau", "sigma_r")
#: prior of each parameter: (NumPyro distribution name, its arguments)
PRIORS = {
    "mu0": ("Normal", (0.0, 1.0)),
    "sigma0": ("LogNormal", (0.0, 0.5)),
    "tau": ("LogNormal", (math.log(0.5), 0.75)),
    "sigma_r": ("LogNormal", (0.0, 0.75)),
}
#: the range of each model parameter, inclusive: the online KappaParams and a fit's --fix share it
#: (scales far outside would only overflow float64), so every fit written can be read back
PARAM_RANGES = {"mu0": (-1e6, 1e6), "sigma0": (1e-6, 1e6), "tau": (1e-6, 1e6), "sigma_r": (1e-6, 1e6)}


class KappaDataError(InputError):
    """A decisions file (or record) cannot be turned into model data."""


class KappaFitError(InputError):
    """A kappa fit cannot be configured, run or read."""


KAPPA_FIT_FILE = FitFile(CONFIG_ATTR, FORMAT, KappaFitError,
                         "not a kappa fit: no 'beliefgate_kappa_fit' attribute (write it with "
                         "`beliefgate fit --model kappa`)",
                         groups=("posterior", "observed_data", "constant_data"), what="the kappa fit")


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


class KappaData(NamedTuple):
    """Flattened evidence of ``N`` decisions (a pytree of arrays; ``B`` branches in all).

    ``branch_decision[B]``: decision of each branch; judgments ``j_left``, ``j_right``
    (global branch indices), ``j_y`` (1: left judged better) and ``j_mask``; rollouts
    ``r_branch``, ``r_depth``, ``r_score``, ``r_mask``. Masked-out entries are padding.
    """

    branch_decision: Any
    j_left: Any
    j_right: Any
    j_y: Any
    j_mask: Any
    r_branch: Any
    r_depth: Any
    r_score: Any
    r_mask: Any

    @property
    def num_branches(self) -> int:
        return int(np.shape(self.branch_decision)[0])


class Decisions(NamedTuple):
    """Parsed decisions: the model arrays plus what identifies each decision."""

    data: KappaData
    branches: List[List[str]]
    ids: List[str]
    meta: List[dict]
    sources: List[str]

    @property
    def num_decisions(self) -> int:
        return len(self.branches)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for name in KappaData._fields:
            h.update(np.ascontiguousarray(np.asarray(getattr(self.data, name), np.float64)).tobytes())
        return h.hexdigest()[:16]


class _Names(NamedTuple):
    names: tuple


def parse_decision(record: Any, where: str = "record") -> tuple[list, list, list, dict]:
    """Validate one decision record: ``(branches, judgments [(b, c, y)], rollouts [(b, d, r)], meta)``.

    Uses the online kappa's own checks, so a record the fit accepts is one
    :class:`~beliefgate.beliefs.kappa.Kappa` accepts. Raises :class:`KappaDataError`.
    """
    if not isinstance(record, dict):
        raise KappaDataError(f"{where}: a decision must be a JSON object, got {type(record).__name__}")
    if "branches" not in record:
        if record.get("kind") in ("header", "step", "final"):
            raise KappaDataError(f"{where}: a trajectory log ({record['kind']!r} record), not a kappa decisions "
                                 "file; fit the skill model on it with `beliefgate fit LOG` (without --model kappa)")
        raise KappaDataError(f"{where}: missing 'branches'")
    try:
        names = _check_names(record["branches"])
        state = _Names(names)
        judgments, rollouts = [], []
        for i, j in enumerate(_list(record.get("judgments", []), "judgments", where)):
            if not isinstance(j, dict) or set(j) - {"left", "right", "y"} or len(j) != 3:
                raise KappaDataError(f"{where}: judgments[{i}] must be {{\"left\", \"right\", \"y\"}}, got {j!r}")
            b, c = _index(state, j["left"], "left"), _index(state, j["right"], "right")
            if b == c:
                raise KappaDataError(f"{where}: judgments[{i}] judges {names[b]!r} against itself")
            judgments.append((b, c, judgment_outcome(j["y"])))
        for i, r in enumerate(_list(record.get("rollouts", []), "rollouts", where)):
            if not isinstance(r, dict) or set(r) - {"branch", "depth", "score"} or len(r) != 3:
                raise KappaDataError(f"{where}: rollouts[{i}] must be {{\"branch\", \"depth\", \"score\"}}, "
                                     f"got {r!r}")
            rollouts.append((_index(state, r["branch"], "branch"), _depth(r["depth"]), _score(r["score"])))
    except KappaInputError as exc:
        raise KappaDataError(f"{where}: {exc}") from None
    meta = {k: v for k, v in record.items() if k not in ("branches", "judgments", "rollouts")}
    return list(names), judgments, rollouts, meta


def _list(value, name: str, where: str) -> list:
    if not isinstance(value, list):
        raise KappaDataError(f"{where}: '{name}' must be a list, got {type(value).__name__}")
    return value


def decisions_from_records(records: Sequence[Any], sources: Optional[Sequence[str]] = None,
                           where: Optional[Sequence[str]] = None) -> Decisions:
    """Build :class:`Decisions` from decision records (dicts of the JSONL format)."""
    if not records:
        raise KappaDataError("no decision to fit (the input holds no record)")
    bd, jl, jr, jy, rb, rd, rs = [], [], [], [], [], [], []
    branches, ids, meta = [], [], []
    offset = 0
    for n, rec in enumerate(records):
        names, judgments, rollouts, m = parse_decision(rec, where[n] if where else f"record {n}")
        branches.append(names)
        ids.append(str(m.get("decision", n)))
        meta.append(m)
        bd.extend([n] * len(names))
        for b, c, y in judgments:
            jl.append(offset + b)
            jr.append(offset + c)
            jy.append(y)
        for b, d, r in rollouts:
            rb.append(offset + b)
            rd.append(d)
            rs.append(r)
        offset += len(names)
    data = KappaData(
        branch_decision=np.asarray(bd, np.int32),
        j_left=np.asarray(jl, np.int32), j_right=np.asarray(jr, np.int32), j_y=np.asarray(jy, np.int32),
        j_mask=np.ones(len(jl), bool),
        r_branch=np.asarray(rb, np.int32), r_depth=np.asarray(rd, np.float64), r_score=np.asarray(rs, np.float64),
        r_mask=np.ones(len(rb), bool),
    )
    return Decisions(data, branches, ids, meta, list(sources or []))


def read_decisions(paths: Union[str, Path, Sequence[Union[str, Path]]]) -> Decisions:
    """Read decisions JSONL files (blank lines skipped); errors name ``file:line``."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    records, where = [], []
    for path in paths:
        path = Path(path)
        try:
            # lines end at "\n" only: str.splitlines() also cut at U+2028, NEL and \x1c-\x1e, which JSON
            # strings may hold (a branch name written with ensure_ascii=False)
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise KappaDataError(f"{path}: cannot read ({exc})") from None
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(parse_data(line, "json"))  # a key given twice is refused, not "last wins"
            except DataSyntaxError as exc:
                raise KappaDataError(f"{path}:{i}: not JSON ({exc})") from None
            where.append(f"{path}:{i}")
    if not records:
        raise KappaDataError(f"{', '.join(str(p) for p in paths)}: no decision records")
    return decisions_from_records(records, [str(p) for p in paths], where)


def write_decisions(records: Iterable[dict], path: Union[str, Path]) -> Path:
    """Write decision records as JSONL; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, allow_nan=False) + "\n")
    return path


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------


def simulate_decisions(num: int, values: Mapping[str, float], seed: int = 0, *, min_branches: int = 2,
                       max_branches: int = 8, max_judgments: int = 20, max_rollouts: int = 10,
                       max_depth: int = 3) -> list:
    """``num`` decision records drawn from the model at parameter ``values``.

    Each decision has ``K ~ U{min_branches..max_branches}`` branches, ``U{0..max_judgments}``
    judgments between random distinct pairs and ``U{0..max_rollouts}`` rollouts of random
    branches at depth ``U{1..max_depth}``; ``true_utilities`` and ``simulated`` (the
    parameters and seed) are kept in each record.
    """
    for name in PARAM_NAMES:
        if name not in values:
            raise KappaDataError(f"simulate_decisions needs {name}")
    if not 1 <= min_branches <= max_branches:
        raise KappaDataError(f"need 1 <= min_branches <= max_branches, got {min_branches}, {max_branches}")
    rng = np.random.default_rng(seed)
    mu0, s0, tau, sr = (float(values[n]) for n in PARAM_NAMES)
    out = []
    for n in range(num):
        k = int(rng.integers(min_branches, max_branches + 1))
        names = [f"b{i}" for i in range(k)]
        u = rng.normal(mu0, s0, size=k)
        judgments = []
        if k >= 2:
            for _ in range(int(rng.integers(0, max_judgments + 1))):
                b, c = rng.choice(k, size=2, replace=False)
                p = 1.0 / (1.0 + math.exp(-(u[b] - u[c]) / tau))
                judgments.append({"left": names[b], "right": names[c], "y": int(rng.random() < p)})
        rollouts = []
        for _ in range(int(rng.integers(0, max_rollouts + 1))):
            b = int(rng.integers(k))
            d = int(rng.integers(1, max_depth + 1))
            rollouts.append({"branch": names[b], "depth": d, "score": float(rng.normal(u[b], sr / math.sqrt(d)))})
        out.append({"decision": f"sim{n}", "branches": names, "judgments": judgments, "rollouts": rollouts,
                    "true_utilities": dict(zip(names, map(float, u))),
                    "simulated": {"values": {k_: float(values[k_]) for k_ in PARAM_NAMES}, "seed": seed}})
    return out


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


def prior(name: str):
    """The NumPyro prior distribution of parameter ``name`` (:data:`PRIORS`)."""
    import numpyro.distributions as dist

    kind, args = PRIORS[name]
    return getattr(dist, kind)(*args)


def utility_model(data: KappaData, fixed: Optional[Mapping[str, float]] = None,
                  keep_utilities: bool = False, centered: bool = False) -> None:
    """The NumPyro model of branch utilities (module doc) over :class:`KappaData`.

    ``fixed`` pins parameters (the others get their :data:`PRIORS`). Sites: the sampled
    parameters, the utilities (``z``, standardised, ``[B]``; ``centered=True``: ``u``
    itself, which samples better when every branch has much evidence), ``U``
    (deterministic, only with ``keep_utilities``), ``y`` and ``r`` (observed, masked where
    padding). Both parameterisations are the same model.
    """
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    fixed = dict(fixed or {})
    values = {}
    for name in PARAM_NAMES:
        values[name] = (jnp.asarray(fixed[name]) if name in fixed else numpyro.sample(name, prior(name)))
    with numpyro.plate("branch", data.num_branches):
        if centered:
            u = numpyro.sample("u", dist.Normal(values["mu0"], values["sigma0"]))
        else:
            u = values["mu0"] + values["sigma0"] * numpyro.sample("z", dist.Normal(0.0, 1.0))
    if keep_utilities:
        numpyro.deterministic("U", u)
    if np.shape(data.j_y)[0]:
        logits = (u[data.j_left] - u[data.j_right]) / values["tau"]
        with numpyro.plate("judgment", np.shape(data.j_y)[0]):
            numpyro.sample("y", dist.Bernoulli(logits=logits).mask(data.j_mask), obs=data.j_y)
    if np.shape(data.r_score)[0]:
        scale = values["sigma_r"] / jnp.sqrt(data.r_depth)
        with numpyro.plate("rollout", np.shape(data.r_score)[0]):
            numpyro.sample("r", dist.Normal(u[data.r_branch], scale).mask(data.r_mask), obs=data.r_score)


def evidence_data(sets: Sequence[tuple]) -> KappaData:
    """:class:`KappaData` of several independent decisions given as ``(K, judgments, rollouts)``
    with ``judgments`` = ``[(b, c, y)]`` and ``rollouts`` = ``[(b, depth, score)]`` (branch indices)."""
    bd, jl, jr, jy, rb, rd, rs = [], [], [], [], [], [], []
    offset = 0
    for n, (k, judgments, rollouts) in enumerate(sets):
        bd.extend([n] * int(k))
        for b, c, y in judgments:
            jl.append(offset + int(b))
            jr.append(offset + int(c))
            jy.append(int(y))
        for b, d, r in rollouts:
            rb.append(offset + int(b))
            rd.append(float(d))
            rs.append(float(r))
        offset += int(k)
    return KappaData(np.asarray(bd, np.int32), np.asarray(jl, np.int32), np.asarray(jr, np.int32),
                     np.asarray(jy, np.int32), np.ones(len(jl), bool), np.asarray(rb, np.int32),
                     np.asarray(rd, np.float64), np.asarray(rs, np.float64), np.ones(len(rb), bool))


class NutsArgmax(NamedTuple):
    """NUTS estimate of the argmax probabilities of one decision at fixed parameters."""

    probs: np.ndarray       # float[K]
    mcse: np.ndarray        # Monte-Carlo standard error of each (ArviZ, from the ESS of the indicator)
    ess: np.ndarray         # effective sample size of each indicator (0 where the indicator is constant)
    r_hat: float            # worst r_hat over the decision's utilities
    divergences: int        # divergent transitions of the joint run
    draws: int


def nuts_argmax_probs(values: Mapping[str, float], sets: Sequence[tuple], *, chains: int = 4, draws: int = 1000,
                      warmup: int = 500, seed: int = 0, target_accept: float = 0.9) -> List[NutsArgmax]:
    """Sample ``P(U | evidence)`` of :func:`utility_model` with NUTS at fixed ``values``.

    ``sets``: independent decisions ``(K, judgments, rollouts)`` (see :func:`evidence_data`).
    They are sampled jointly in one run (their posteriors factorise, so each marginal is
    that decision's posterior) and one compilation serves them all. Returns one
    :class:`NutsArgmax` per set, Monte-Carlo standard errors from ArviZ.
    """
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    data = evidence_data(sets)
    fixed = {k: float(values[k]) for k in PARAM_NAMES}
    mcmc = MCMC(NUTS(partial(utility_model, fixed=fixed, keep_utilities=True), target_accept_prob=target_accept),
                num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), data, extra_fields=("diverging",))
    u = np.asarray(mcmc.get_samples(group_by_chain=True)["U"], np.float64)  # [C, D, B]
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    out, offset = [], 0
    for k, _, _ in sets:
        block = u[..., offset:offset + int(k)]
        offset += int(k)
        best = block.argmax(axis=-1)
        probs, mcse, ess = np.zeros(k), np.zeros(k), np.zeros(k)
        for b in range(k):
            ind = (best == b).astype(np.float64)
            probs[b] = ind.mean()
            if 0.0 < probs[b] < 1.0:
                mcse[b] = float(az.mcse(ind, method="mean"))
                ess[b] = float(az.ess(ind, method="bulk"))
        r_hat = float(np.nanmax([az.rhat(block[..., b]) for b in range(k)])) if chains > 1 else math.nan
        out.append(NutsArgmax(probs, mcse, ess, r_hat, divergences, chains * draws))
    return out


# --------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------


class KappaFitConfig(BaseModel):
    """Validated configuration of a kappa fit (stored in the result's record)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fixed: Dict[str, float] = Field(default_factory=dict)
    method: Literal["nuts", "svi"] = "nuts"
    chains: int = Field(4, ge=1)
    draws: int = Field(1000, ge=1)
    warmup: int = Field(1000, ge=0)
    seed: int = 0
    chain_method: Literal["parallel", "sequential", "vectorized"] = "sequential"
    target_accept: float = Field(0.8, gt=0.0, lt=1.0)
    max_tree_depth: int = Field(10, ge=1, le=15)
    svi_steps: int = Field(2000, ge=1)
    learning_rate: float = Field(0.02, gt=0.0)
    guide: Literal["normal", "mvn"] = "normal"
    #: sample the utilities themselves (better mixing when branches carry much evidence; measured:
    #: 60 simulated decisions, 2 x 300 draws, min ess_bulk 191 centred vs 84 non-centred)
    centered: bool = True

    @field_validator("fixed")
    @classmethod
    def _known(cls, fixed: Dict[str, float]) -> Dict[str, float]:
        unknown = set(fixed) - set(PARAM_NAMES)
        if unknown:
            raise ValueError(f"cannot fix unknown kappa parameter(s) {sorted(unknown)}; known: {list(PARAM_NAMES)}")
        for name, value in fixed.items():
            if not math.isfinite(value):
                raise ValueError(f"fixed {name} must be finite, got {value}")
            lo, hi = PARAM_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError(f"fixed {name} must lie in [{lo:g}, {hi:g}] (the range of KappaParams), got {value}")
        if set(PARAM_NAMES) <= set(fixed):
            raise ValueError(f"every kappa parameter is fixed ({', '.join(PARAM_NAMES)}): nothing to fit")
        return fixed

    def parameter_names(self) -> list:
        return [n for n in PARAM_NAMES if n not in self.fixed]


def _model(data: KappaData, config: KappaFitConfig) -> None:
    utility_model(data, config.fixed, centered=config.centered)


def _nuts(data: KappaData, config: KappaFitConfig, progress: bool):
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(partial(_model, config=config), target_accept_prob=config.target_accept,
                  max_tree_depth=config.max_tree_depth)
    chain_method = config.chain_method
    if chain_method == "parallel" and jax.local_device_count() < config.chains:
        chain_method = "sequential"
    mcmc = MCMC(kernel, num_warmup=config.warmup, num_samples=config.draws, num_chains=config.chains,
                chain_method=chain_method, progress_bar=progress)
    mcmc.run(jax.random.PRNGKey(config.seed), data,
             extra_fields=("diverging", "num_steps", "accept_prob", "potential_energy", "energy"))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()
               if k in config.parameter_names()}
    stats = {k: np.asarray(v).reshape(config.chains, config.draws)
             for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    idata = az.from_dict(posterior=samples, sample_stats=stats)
    return idata, {"chain_method_used": chain_method}


def _svi(data: KappaData, config: KappaFitConfig, progress: bool):
    import arviz as az
    import jax
    import xarray as xr
    from numpyro import optim
    from numpyro.infer import SVI, Predictive, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal, AutoNormal

    model = partial(_model, config=config)
    guide = (AutoNormal if config.guide == "normal" else AutoMultivariateNormal)(model)
    svi = SVI(model, guide, optim.Adam(config.learning_rate), Trace_ELBO())
    key_fit, key_draw = jax.random.split(jax.random.PRNGKey(config.seed))
    result = svi.run(key_fit, config.svi_steps, data, progress_bar=progress)
    losses = np.asarray(result.losses)
    if not np.all(np.isfinite(losses[-max(1, len(losses) // 10):])):
        raise KappaFitError("SVI diverged (non-finite ELBO); lower --learning-rate")
    names = config.parameter_names()
    total = config.chains * config.draws
    draws = Predictive(model, guide=guide, params=result.params, num_samples=total, return_sites=names)(
        key_draw, data)
    shaped = {k: np.asarray(v).reshape(config.chains, config.draws) for k, v in draws.items()}
    idata = az.from_dict(posterior=shaped)
    idata.add_groups(sample_stats=xr.Dataset({"loss": (("svi_step",), losses)},
                                             coords={"svi_step": np.arange(len(losses))}))
    return idata, {"final_loss": float(losses[-1])}


def _data_groups(decisions: Decisions):
    import xarray as xr

    d = decisions.data
    observed = xr.Dataset({"y": (("judgment",), np.asarray(d.j_y)),
                           "r": (("rollout",), np.asarray(d.r_score))})
    constant = xr.Dataset({"branch_decision": (("branch",), np.asarray(d.branch_decision)),
                           "j_left": (("judgment",), np.asarray(d.j_left)),
                           "j_right": (("judgment",), np.asarray(d.j_right)),
                           "r_branch": (("rollout",), np.asarray(d.r_branch)),
                           "r_depth": (("rollout",), np.asarray(d.r_depth))})
    return observed, constant


def fit_kappa(decisions: Decisions, config: Optional[KappaFitConfig] = None, *, progress: bool = False,
              extra_attrs: Optional[Mapping[str, Any]] = None):
    """Fit ``mu0, sigma0, tau, sigma_r`` (those not pinned) to ``decisions``; returns InferenceData.

    Groups: ``posterior`` (the parameters; the per-branch utilities are summed out by
    sampling and not kept), ``sample_stats``, ``observed_data`` (``y``, ``r``) and
    ``constant_data`` (indices, depths); the record (configuration, data provenance,
    timing) is ``attrs["beliefgate_kappa_fit"]`` (JSON).
    """
    import beliefgate

    config = KappaFitConfig() if config is None else config
    if not isinstance(decisions, Decisions):
        raise KappaFitError(f"expected Decisions (see read_decisions), got {type(decisions).__name__}")
    if not config.parameter_names():
        raise KappaFitError("every parameter is fixed: nothing to fit")
    d = decisions.data
    if len(d.j_y) == 0 and len(d.r_score) == 0:
        raise KappaFitError("the decisions hold no judgment and no rollout: nothing to fit")
    started = time.perf_counter()
    idata, info = (_nuts if config.method == "nuts" else _svi)(d, config, progress)
    observed, constant = _data_groups(decisions)
    idata.add_groups(observed_data=observed, constant_data=constant)
    record = {
        "format": FORMAT,
        "model": "kappa",
        "config": config.model_dump(),
        "parameters": config.parameter_names(),
        "priors": {k: [v[0], list(v[1])] for k, v in PRIORS.items()},
        "num_decisions": decisions.num_decisions,
        "num_branches": d.num_branches,
        "num_judgments": int(len(d.j_y)),
        "num_rollouts": int(len(d.r_score)),
        "branches": decisions.branches,
        "decision_ids": decisions.ids,
        "data_fingerprint": decisions.fingerprint(),
        "sources": decisions.sources,
        "wall_s": round(time.perf_counter() - started, 3),
        "beliefgate_version": beliefgate.__version__,
        **info,
        **dict(extra_attrs or {}),
    }
    return KAPPA_FIT_FILE.stamp(idata, record)


def is_kappa_fit(idata) -> bool:
    return KAPPA_FIT_FILE.has(idata)


def kappa_fit_record(idata) -> dict:
    return KAPPA_FIT_FILE.record(idata)


def kappa_fit_config(idata) -> KappaFitConfig:
    return KappaFitConfig(**kappa_fit_record(idata)["config"])


def save_kappa_fit(idata, path: Union[str, Path]) -> Path:
    return KAPPA_FIT_FILE.save(idata, path)


def load_kappa_fit(path: Union[str, Path]):
    """Read a kappa fit written by :func:`save_kappa_fit` (validated)."""
    return KAPPA_FIT_FILE.load(path)


def kappa_point_values(idata, point: str = "median") -> dict:
    """``{mu0, sigma0, tau, sigma_r}`` at the posterior median/mean (pinned values as fitted)."""
    if point not in ("median", "mean"):
        raise KappaFitError(f"point must be 'median' or 'mean', got {point!r}")
    config = kappa_fit_config(idata)
    out = {}
    for name in PARAM_NAMES:
        if name in config.fixed:
            out[name] = float(config.fixed[name])
        else:
            arr = np.asarray(idata.posterior[name].values).ravel()
            out[name] = float(np.median(arr) if point == "median" else np.mean(arr))
    return out


def data_from_idata(idata) -> KappaData:
    """The :class:`KappaData` a kappa fit was made on (from its data groups)."""
    c, o = idata.constant_data, idata.observed_data
    nj, nr = int(o["y"].size), int(o["r"].size)
    return KappaData(np.asarray(c["branch_decision"].values, np.int32),
                     np.asarray(c["j_left"].values, np.int32), np.asarray(c["j_right"].values, np.int32),
                     np.asarray(o["y"].values, np.int32), np.ones(nj, bool),
                     np.asarray(c["r_branch"].values, np.int32), np.asarray(c["r_depth"].values, np.float64),
                     np.asarray(o["r"].values, np.float64), np.ones(nr, bool))


# --------------------------------------------------------------------------------------
# Posterior predictive check
# --------------------------------------------------------------------------------------


class KappaStatCheck(NamedTuple):
    """One discrepancy statistic: observed value, replicated mean and 90% band, ppp."""

    name: str
    description: str
    observed: float
    replicated_mean: float
    low: float
    high: float
    ppp: float
    passed: bool


def _statistics(data: KappaData, y: np.ndarray, r: np.ndarray) -> dict:
    """Discrepancy statistics of one (observed or replicated) data set."""
    out = {}
    nb = data.num_branches
    if len(r):
        w = np.asarray(data.r_depth)
        sums = np.bincount(data.r_branch, weights=w * r, minlength=nb)
        wsum = np.bincount(data.r_branch, weights=w, minlength=nb)
        counts = np.bincount(data.r_branch, minlength=nb)
        means = np.divide(sums, wsum, out=np.zeros(nb), where=wsum > 0)
        resid = (r - means[data.r_branch]) ** 2 * w
        repeated = counts[data.r_branch] > 1
        out["rollout_mean"] = float(np.mean(r))
        out["rollout_sd"] = float(np.std(r))
        if repeated.any():
            # depth-scaled spread of repeated rollouts of one branch: sigma_r^2 (n-1)/n on average
            out["rollout_within"] = float(resid[repeated].mean())
        if len(y):
            has = wsum[data.j_left] > 0
            has &= wsum[data.j_right] > 0
            if has.any():
                left_higher = means[data.j_left] > means[data.j_right]
                agree = np.where(y == 1, left_higher, ~left_higher)
                out["judgment_rollout_agreement"] = float(agree[has].mean())
    return out


STAT_DESCRIPTIONS = {
    "rollout_mean": "mean rollout score (mu0)",
    "rollout_sd": "sd of rollout scores (sigma0 and sigma_r together)",
    "rollout_within": "depth-scaled squared deviation of repeated rollouts of one branch (sigma_r)",
    "judgment_rollout_agreement": "share of judgments that agree with the branches' mean rollout scores "
                                  "(tau against sigma0)",
}


def kappa_predictive_check(idata, num_draws: int = 200, seed: int = 0, alpha: float = 0.05) -> List[KappaStatCheck]:
    """Posterior predictive check of a kappa fit.

    For each of ``num_draws`` parameter draws a replicated data set with the same
    branches, judged pairs and rollout depths is drawn from the model (fresh utilities),
    and the statistics of :data:`STAT_DESCRIPTIONS` are compared with the observed ones:
    ``ppp = P(T_rep >= T_obs)``; a check fails when ``ppp < alpha/2`` or ``> 1 - alpha/2``.
    """
    data = data_from_idata(idata)
    y_obs, r_obs = np.asarray(data.j_y), np.asarray(data.r_score)
    observed = _statistics(data, y_obs, r_obs)
    values = {}
    config = kappa_fit_config(idata)
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    pick = np.unique(np.linspace(0, total - 1, min(num_draws, total)).round().astype(int))
    for name in PARAM_NAMES:
        if name in config.fixed:
            values[name] = np.full(len(pick), float(config.fixed[name]))
        else:
            values[name] = np.asarray(post[name].values).reshape(-1)[pick]
    rng = np.random.default_rng(seed)
    reps: Dict[str, list] = {k: [] for k in observed}
    for s in range(len(pick)):
        u = rng.normal(values["mu0"][s], values["sigma0"][s], size=data.num_branches)
        y = (rng.random(len(y_obs)) < 1.0 / (1.0 + np.exp(-(u[data.j_left] - u[data.j_right]) / values["tau"][s])))
        r = rng.normal(u[data.r_branch], values["sigma_r"][s] / np.sqrt(data.r_depth))
        stats = _statistics(data, y.astype(np.int32), r)
        for k in reps:
            reps[k].append(stats[k])
    out = []
    for k, obs in observed.items():
        rep = np.asarray(reps[k])
        ppp = float(np.mean(rep >= obs))
        out.append(KappaStatCheck(k, STAT_DESCRIPTIONS[k], obs, float(rep.mean()), float(np.quantile(rep, 0.05)),
                                  float(np.quantile(rep, 0.95)), ppp, alpha / 2 <= ppp <= 1 - alpha / 2))
    return out


__all__ = [
    "FORMAT",
    "PARAM_NAMES",
    "PRIORS",
    "KappaDataError",
    "KappaFitError",
    "KappaData",
    "Decisions",
    "parse_decision",
    "decisions_from_records",
    "read_decisions",
    "write_decisions",
    "simulate_decisions",
    "prior",
    "utility_model",
    "evidence_data",
    "NutsArgmax",
    "nuts_argmax_probs",
    "KappaFitConfig",
    "fit_kappa",
    "is_kappa_fit",
    "kappa_fit_record",
    "kappa_fit_config",
    "save_kappa_fit",
    "load_kappa_fit",
    "kappa_point_values",
    "data_from_idata",
    "KappaStatCheck",
    "kappa_predictive_check",
]
