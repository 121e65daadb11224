"""The PPO run's configuration (:class:`PPOConfig`) and the game's events (:data:`EVENTS`)."""

from __future__ import annotations

from typing import ClassVar, Dict, List, Literal, Optional, Tuple

from pydantic import ConfigDict, Field, field_validator, model_validator

from beliefgate.errors import InputError
from beliefgate.validation import CheckedModel

#: the per-player interaction events a BP agent's reward weights name (see :mod:`beliefgate.rl.events`)
EVENTS: Tuple[str, ...] = ("ingredient_pickup", "pot_placement", "plate_pickup", "soup_pickup", "delivery",
                           "counter_placement")

Kind = Literal["sp", "bp", "fcp"]
BPPartner = Literal["same", "task"]


class PPOConfigError(InputError):
    """A bad training setting (one line naming the field and the value)."""


class PPOConfig(CheckedModel):
    """One training run. ``total_steps`` counts environment steps (one step moves both players).

    * ``sp``: self-play, one network for both seats (both seats' samples train it);
    * ``bp``: self-play with a player rewarded ``weight[event]`` for its own events on top of the
      delivery reward; one dict in ``event_weights`` is one behaviour, several make one
      reward-conditioned network (the weights are an input; env ``j`` trains on dict ``j % G``).
      ``bp_partner`` says who carries the weights: ``same``, every seat (both players share the
      preference, so a penalised event the team needs is still done by someone with the same penalty);
      ``task``, one seat per environment (alternating over blocks of ``G`` environments) while its
      teammates are the same network conditioned on zero weights and rewarded by the task alone, as in
      hidden-utility self-play: the biased player can leave a penalised event to a partner who takes it.
    * ``fcp``: an ego (both seats, alternating over environments) against the frozen policies found
      under ``pool_dir`` (env ``j`` plays pool member ``j % P``); only the ego's samples train.
    """

    error_type: ClassVar = PPOConfigError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    layout: str = "v2/cramped_room"
    kind: Kind = "sp"
    seed: int = Field(0, ge=0, le=2**31 - 1)
    total_steps: int = Field(1_000_000, ge=1, le=10**10)
    horizon: int = Field(400, ge=1, le=100_000)
    num_envs: int = Field(32, ge=1, le=4096)
    rollout_len: int = Field(128, ge=1, le=4096)
    lr: float = Field(5e-4, gt=0.0, le=1.0)
    anneal_lr: bool = True
    gamma: float = Field(0.99, gt=0.0, le=1.0)
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    clip: float = Field(0.2, gt=0.0, le=10.0)
    vf_coef: float = Field(0.5, ge=0.0, le=100.0)
    ent_coef: float = Field(0.01, ge=0.0, le=10.0)
    max_grad_norm: float = Field(0.5, gt=0.0, le=1000.0)
    epochs: int = Field(4, ge=1, le=100)
    minibatches: int = Field(4, ge=1, le=4096)
    hidden: Tuple[int, ...] = Field((64, 64), min_length=1, max_length=4)
    #: JaxMARL's shaped rewards (pot placement 3, plate pickup 3, dish pickup 5) decay linearly to 0
    #: over this fraction of the run (0: none; sp and fcp)
    shaping_fraction: float = Field(0.5, ge=0.0, le=1.0)
    #: shaped reward taken back from a player who puts a cooked dish down on a counter (decays with
    #: the shaping): JaxMARL pays 5 for taking a soup out of the pot and nothing for leaving it on a
    #: counter, so without it "cook, take out, put down" is a delivery-free loop of shaped reward
    dish_drop_refund: float = Field(0.0, ge=0.0, le=100.0)
    #: potential-based shaping toward serving (decays with the shaping): a player holding a cooked dish
    #: has potential ``serve_shaping x (D - d)``, ``d`` its distance in moves to the serving cells; the
    #: shaped reward gains ``gamma * phi(s') - phi(s)``, which leaves the optimal policies unchanged
    #: (Ng, Harada & Russell 1999) but pays each step a dish moves toward the goal
    serve_shaping: float = Field(0.0, ge=0.0, le=100.0)
    #: the same toward the pots (decays with the shaping): a player holding a raw ingredient or an empty
    #: plate has potential ``pot_shaping x (D - d)``, ``d`` its distance in moves to the pots
    pot_shaping: float = Field(0.0, ge=0.0, le=100.0)
    event_weights: List[Dict[str, float]] = Field(default_factory=list, max_length=64)
    #: bp: ``task`` (one seat carries the weights, its teammates play the task; the default for bp)
    #: or ``same`` (every seat carries them: the design before 2026-12-06); other kinds: unset
    bp_partner: Optional[BPPartner] = None
    pool_dir: Optional[str] = None
    #: start from this policy's parameters (a run on the same layout and network; a reward-conditioned
    #: net takes an unconditioned one, its weight inputs starting at zero) instead of a random init
    init_from: Optional[str] = None
    #: give up a run whose recent episodes do not score (the mean return of the last five logged
    #: updates is 0) once it has played this many env steps (0: never): the state is saved,
    #: ``OUT/GAVE_UP`` written, and the
    #: run stops with :class:`~beliefgate.rl.ppo.TrainingGaveUp` (the zoo scripts then try the next seed)
    give_up_at: int = Field(0, ge=0, le=10**10)
    #: save the resumable state every this many updates (and at the end)
    checkpoint_every: int = Field(10, ge=1, le=1_000_000)
    #: policy snapshots at this many evenly spaced stages (an FCP pool's members), 0: none
    snapshots: int = Field(0, ge=0, le=100)

    @field_validator("hidden")
    @classmethod
    def _sizes(cls, value: Tuple[int, ...]) -> Tuple[int, ...]:
        bad = [h for h in value if not 1 <= h <= 1024]
        if bad:
            raise ValueError(f"layer sizes must be in 1..1024, got {bad[0]}")
        return value

    @field_validator("event_weights")
    @classmethod
    def _events(cls, value: List[Dict[str, float]]) -> List[Dict[str, float]]:
        for weights in value:
            unknown = sorted(set(weights) - set(EVENTS))
            if unknown:
                raise ValueError(f"unknown event {unknown[0]!r} (events: {', '.join(EVENTS)})")
            if not weights:
                raise ValueError("an empty weight set (name at least one event)")
        return value

    @model_validator(mode="after")
    def _kind_fields(self) -> "PPOConfig":
        if self.kind == "bp" and not self.event_weights:
            raise ValueError("event_weights: kind bp needs event weights (e.g. delivery=1,plate_pickup=3)")
        if self.kind != "bp" and self.event_weights:
            raise ValueError(f"event_weights: only kind bp takes event weights (kind is {self.kind})")
        if self.kind != "bp" and self.bp_partner is not None:
            raise ValueError(f"bp_partner: only kind bp takes a partner mode (kind is {self.kind})")
        if self.kind == "fcp" and not self.pool_dir:
            raise ValueError("pool_dir: kind fcp needs a pool directory of SP checkpoints")
        if self.kind != "fcp" and self.pool_dir:
            raise ValueError(f"pool_dir: only kind fcp takes a pool (kind is {self.kind})")
        if (self.num_envs * self.rollout_len) % self.minibatches:
            raise ValueError(f"minibatches: {self.minibatches} does not divide num_envs x rollout_len = "
                             f"{self.num_envs * self.rollout_len}")
        return self

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def num_updates(self) -> int:
        return -(-self.total_steps // self.steps_per_update)

    @property
    def conditioned(self) -> bool:
        """A reward-conditioned BP network: the weights are an input when there are several sets, or
        when teammates play the zero-weight (task) behaviour of the same network."""
        return len(self.event_weights) > 1 or self.bp_mode == "task"

    @property
    def bp_mode(self) -> Optional[str]:
        """Who carries a bp run's weights: ``bp_partner``, ``task`` when unset; None for other kinds."""
        return (self.bp_partner or "task") if self.kind == "bp" else None

    def weight_matrix(self) -> List[List[float]]:
        """``event_weights`` as rows over :data:`EVENTS` (missing events weigh 0)."""
        return [[float(w.get(e, 0.0)) for e in EVENTS] for w in self.event_weights]


def parse_weights(text: str) -> Dict[str, float]:
    """``"delivery=1,plate_pickup=3"`` -> a weight dict; a malformed item or an unknown event:
    :class:`PPOConfigError` naming it."""
    weights: Dict[str, float] = {}
    for item in (p.strip() for p in str(text).split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise PPOConfigError(f"event weights {text!r}: {item!r} is not EVENT=WEIGHT")
        if name not in EVENTS:
            raise PPOConfigError(f"event weights {text!r}: unknown event {name!r} (events: {', '.join(EVENTS)})")
        try:
            weights[name] = float(value)
        except ValueError:
            raise PPOConfigError(f"event weights {text!r}: weight of {name} is not a number: {value!r}") from None
    if not weights:
        raise PPOConfigError(f"event weights {text!r}: name at least one EVENT=WEIGHT")
    return weights


__all__ = ["EVENTS", "PPOConfig", "PPOConfigError", "parse_weights"]
