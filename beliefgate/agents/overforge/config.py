"""OverForge agent names and options: ``overforge[:TOKEN,TOKEN,...]``.

Tokens: ``-rollouts`` (judgments only), ``-hierarchy`` (one flat branch set, no strategies),
``-messages`` (neither talks nor listens on the message channel), ``listen=`` (kappa judgments a
teammate's message is worth at full reliability), ``trust=`` (the probability that a teammate's
``inform`` of the goal -- the recipe it sees -- is true: how far a heard recipe moves the goal
belief), ``-belief`` (the rollout partner draws its skills uniformly over its feasible skills instead of
from the posterior), ``pinned=STRATEGY`` (the strategy never changes), ``llm`` (the LLM strategy
proposer and pairwise judge; needs a model, e.g. ``--llm-base-url``), and numeric settings
``k=`` (strategies per decision), ``first=`` (first skills per strategy), ``depth=`` (imagined
steps per rollout depth unit), ``samples=`` (imagined partners per branch, the score their mean),
``mix=`` (the share of the uniform choice in the rollout partner's belief draw, 0..1),
``theta=``, ``rounds=``, ``nucleus=``, ``interrupts=0|1``, ``hold=0|1`` (an interrupted decision that
does not commit keeps the running skill) and ``uncommitted=best|rule|auto`` (what a decision that
does not commit plays: b*, the rule planner's choice, or the rule planner's choice except where the
players work separate kitchens, ``LayoutInfo.separate_kitchens``), ``pairs=neighbours|all``
(which branch pairs the judge compares), ``score=gain|rate`` (a rollout round's score: the gain since the decision or
the gain per depth unit), ``next=strategy|complement`` (the rollout ego's skills after its first:
its strategy's preferred useful skill, or the same counted against the imagined partner's skill)
``recipe=auto|map`` (the goal an imagined continuation runs under while the goal belief is not
confident: a draw from it, or its MAP), ``goal_weight=`` (how much likelier an imagined teammate
starts a skill the imagined goal needs) and kappa's ``tau=`` and ``sigma_r=``.
A bad token raises :class:`OverForgeOptionError` naming it.
"""

from __future__ import annotations

from typing import Literal, Optional, Tuple, get_args

from pydantic import ConfigDict, Field

from beliefgate.beliefs.goal import CLAIM_TRUST
from beliefgate.beliefs.kappa import KappaParams
from beliefgate.errors import InputError
from beliefgate.validation import CheckedModel

PREFIX = "overforge"
FLAGS = {"-rollouts": ("rollouts", False), "-hierarchy": ("hierarchy", False), "-belief": ("belief", False),
         "-messages": ("messages", False), "llm": ("llm", True)}
NUMBERS = {"k": "k", "first": "first", "depth": "depth", "samples": "samples", "theta": "theta", "rounds": "rounds",
           "nucleus": "nucleus", "mix": "mix", "interrupts": "interrupts", "hold": "hold", "sigma_r": "sigma_r",
           "tau": "tau", "goal_weight": "goal_weight", "listen": "listen", "trust": "trust"}
#: what an uncommitted decision (kappa < theta after every round) plays: ``best`` = b*, the
#: branch with the highest argmax probability (the paper); ``rule`` = the rule planner's choice;
#: ``auto`` = ``best`` where the players share neither floor nor a counter (separate kitchens
#: that meet only at the pots: asymmetric_advantages) and ``rule`` elsewhere (measured on tuning
#: seeds in docs/overforge.md; forced_coordination moved to ``rule`` with the hand-over counter
#: rules of 498b5db)
Uncommitted = Literal["best", "rule", "auto"]
#: which branch pairs the judge compares: ``neighbours`` in its order (the default) or ``all`` pairs
Pairs = Literal["neighbours", "all"]
#: a rollout round's score: ``gain`` = the dish-progress gain since the decision (its noise grows
#: with depth), ``rate`` = that gain per depth unit (gain / round: a mean over the imagined
#: steps, whose noise shrinks with depth as kappa's ``sigma_r^2 / d`` assumes)
Score = Literal["gain", "rate"]
#: the rollout ego's skill after its first one: ``strategy`` = the feasible skill its strategy
#: prefers most among the useful ones (what the kitchen needs); ``complement`` = the same with
#: usefulness counted against the imagined partner's current skill (its need taken off, its
#: complementary skills raised), so the ego's imagined continuation reacts to the imagined partner
Next = Literal["strategy", "complement"]
#: the goal an imagined continuation runs under while the goal belief is below the acting floor:
#: ``auto`` = a draw from the goal posterior (per imagined sample, shared by every branch),
#: ``map`` = the MAP goal
Recipe = Literal["auto", "map"]
#: the options that name one of a fixed set of words, and the field type that lists the words
CHOICES = {"uncommitted": Uncommitted, "pairs": Pairs, "score": Score, "next": Next, "recipe": Recipe}

#: kappa's defaults for this agent (utilities in soups of dish progress; chosen on seeds >= 1000)
DEFAULT_KAPPA = dict(mu0=0.0, sigma0=0.3, tau=0.1, sigma_r=0.15, num_points=2048)


class OverForgeOptionError(InputError):
    """A bad ``overforge`` option (an unknown token, a value out of range, an unknown strategy)."""


class OverForgeConfig(CheckedModel):
    """The settings one ``overforge`` name stands for (a bad value: :class:`OverForgeOptionError`
    naming the field and the value, however it is built)."""

    error_type = OverForgeOptionError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    rollouts: bool = True
    hierarchy: bool = True
    belief: bool = True
    llm: bool = False
    pinned: Optional[str] = None
    k: int = Field(2, ge=1, le=8)
    first: int = Field(3, ge=1, le=6)
    depth: int = Field(5, ge=1, le=100)
    samples: int = Field(1, ge=1, le=16)
    #: the rollout partner's skill draw, tempered: ``(1 - mix)`` posterior + ``mix`` uniform
    mix: float = Field(0.0, ge=0.0, le=1.0)
    theta: float = Field(0.6, gt=0.0, le=1.0)
    rounds: int = Field(3, ge=1, le=10)
    nucleus: float = Field(0.9, gt=0.0, le=1.0)
    interrupts: bool = True
    #: an interrupted decision that does not commit keeps the running skill
    hold: bool = False
    #: ``auto`` chosen on seeds 1000-1004 (docs/overforge.md: +8.6 [+4.9, +12.6] over ``best``;
    #: its forced_coordination branch on seeds 1000-1003 after 498b5db: ``rule`` +22.5 [+2.5, +44.5])
    uncommitted: Uncommitted = "auto"
    pairs: Pairs = "neighbours"
    #: ``rate`` chosen on seeds 1000-1002 (docs/overforge.md: +10.3 [+1.0, +20.7] over ``gain``)
    score: Score = "rate"
    next: Next = "strategy"
    #: the goal (recipe) an imagined continuation runs under when the goal belief is not confident:
    #: ``auto`` a draw from the goal posterior, ``map`` its MAP goal (a confident MAP goal always).
    #: ``map`` chosen on seeds 1000-1004 (docs/results_v2.md): under ``auto`` a near-uniform belief
    #: averages potting a guessed ingredient against spoiling the pot, so the ego sets it down and
    #: never cooks the guess whose dish would tell it the recipe (grounded_coord_simple +30.0
    #: [+8.0, +50.0], test_time_simple +26.0 [+2.0, +60.0] for ``map``; equal where the belief is
    #: confident)
    recipe: Recipe = "map"
    #: how much likelier an imagined teammate starts a skill the imagined goal needs than one it does not
    goal_weight: float = Field(8.0, ge=1.0, le=1000.0)
    #: kappa's judgment temperature and depth-1 rollout noise (``None``: :data:`DEFAULT_KAPPA`)
    tau: Optional[float] = Field(None, ge=1e-3, le=100.0)
    sigma_r: Optional[float] = Field(None, ge=1e-3, le=100.0)
    #: talk and listen on the episode's message channel (``-messages``: neither; agents/overforge/talk.py)
    messages: bool = True
    #: kappa judgments a teammate's proposal or request is worth at reliability 1 (rounded x reliability)
    listen: int = Field(2, ge=0, le=8)
    #: the probability that a teammate's goal claim (an ``inform`` naming the recipe it sees) is true
    #: (:func:`beliefgate.beliefs.goal.claim_loglik`); the agent tells the recipe it sees as well
    trust: float = Field(CLAIM_TRUST, gt=0.0, lt=1.0)
    tokens: Tuple[str, ...] = ()

    def kappa_params(self) -> KappaParams:
        chosen = {k: v for k, v in (("tau", self.tau), ("sigma_r", self.sigma_r)) if v is not None}
        return KappaParams(**{**DEFAULT_KAPPA, **chosen}, theta=self.theta, max_rounds=self.rounds,
                           nucleus_p=self.nucleus)

    @property
    def name(self) -> str:
        return PREFIX + (":" + ",".join(self.tokens) if self.tokens else "")


def option_of(name: Optional[str]) -> Optional[str]:
    """The option part of ``name`` (a full name ``overforge:...``, a bare option, or None)."""
    if name is None or name == PREFIX:
        return None
    if not isinstance(name, str):
        raise OverForgeOptionError(f"an overforge name must be a string, got {name!r}")
    if name.startswith(PREFIX + ":"):
        return name[len(PREFIX) + 1:]
    return name


def parse_option(option: Optional[str]) -> OverForgeConfig:
    """The :class:`OverForgeConfig` of an option string (``"-rollouts"``, ``"pinned=loader,k=3"``...)."""
    if option is None:
        return OverForgeConfig()
    tokens = tuple(t.strip() for t in option.split(","))
    values: dict = {}
    for token in tokens:
        if not token:
            raise OverForgeOptionError(f"overforge option {option!r} has an empty token")
        if token in FLAGS:
            field, value = FLAGS[token]
        elif "=" in token:
            key, _, raw = token.partition("=")
            if key == "pinned":
                if not raw:
                    raise OverForgeOptionError("overforge option 'pinned=' needs a strategy name")
                field, value = "pinned", raw
            elif key in CHOICES:
                allowed = get_args(CHOICES[key])
                if raw not in allowed:
                    raise OverForgeOptionError(f"overforge option {token!r}: {key} must be one of "
                                               f"{', '.join(allowed)}")
                field, value = key, raw
            elif key in NUMBERS:
                field = NUMBERS[key]
                if field in ("interrupts", "hold"):
                    if raw not in ("0", "1"):
                        raise OverForgeOptionError(f"overforge option {token!r}: {field} must be 0 or 1")
                    value = raw == "1"
                else:
                    real = field in ("theta", "nucleus", "mix", "tau", "sigma_r", "goal_weight", "trust")
                    try:
                        value = float(raw) if real else int(raw)
                    except ValueError:
                        raise OverForgeOptionError(f"overforge option {token!r}: {raw!r} is not "
                                                   f"{'a number' if real else 'an integer'}") from None
            else:
                raise OverForgeOptionError(f"unknown overforge option {token!r}")
        else:
            raise OverForgeOptionError(f"unknown overforge option {token!r}; use -rollouts, -hierarchy, -belief, "
                                       "-messages, pinned=STRATEGY, llm, listen=, trust=, k=, first=, depth=, samples=, mix=, theta=, rounds=, "
                                       "nucleus=, interrupts=, hold=, uncommitted=, pairs=, score=, next=, tau=, "
                                       "sigma_r=")
        if field in values:
            raise OverForgeOptionError(f"overforge option {field!r} given twice in {option!r}")
        values[field] = value
    if values.get("hierarchy") is False and "pinned" in values:
        raise OverForgeOptionError("overforge options '-hierarchy' and 'pinned=' exclude each other")
    return OverForgeConfig.from_data({**values, "tokens": tokens}, f"overforge option {option!r}")
