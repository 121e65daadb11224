"""Distil a teacher agent into a readable policy tree: DAgger + CART -> sandboxed Python.

The teacher is any agent of the table that reports its skill (default OverForge); no LLM is
involved. Iteration ``k`` of ``beliefgate policytree distil``:

1. **play**: ``episodes`` seeded episodes (seeds ``seed+100+k*episodes ...``, partners in turn,
   both seats). Iteration 0 plays the teacher (``start='teacher'``) or the layout's seed tree
   (``start='seed'``); later iterations play the tree fitted in the iteration before (DAgger: the
   learner visits its own states).
2. **label** every visited state of the played seat with the teacher's choice there
   (:class:`~beliefgate.agents.query.Shadow`: the teacher watches the episode from that seat
   without acting; when the teacher played, its own logged skills) and the partner's hindsight
   skill (:func:`~beliefgate.envs.hindsight.domain_labels`: the skill its next interaction
   completes). The records go to ``iter_KK/data.jsonl``.
3. **aggregate** every iteration's records so far (``--no-aggregate``: this iteration's only) and
   **fit** two depth-limited CARTs (scikit-learn ``DecisionTreeClassifier``) over named features of
   the flat state dict (:func:`features`): the *partner tree* predicts the partner's hindsight
   skill, the *self tree* the teacher's skill and reads the partner tree's prediction as features
   (``--no-partner-feature`` leaves them out; ``--no-partner-tree`` fits no partner tree: the
   prediction is the partner's most frequent skill, and the self tree cannot read it). On a layout
   whose seats have different skills (forced_coordination) each seat gets its own pair of trees.
4. **emit** the trees as Python (:func:`emit_code`): nested ``if``/``else`` on the features'
   expressions, ``return "skill"`` at the leaves, no data tables, the textual tree as the module
   docstring; the code is checked in the sandbox on the probe states of both seats like a model's
   code.
5. **accept or revert** on the mean reward of ``rollouts`` episodes (seeds ``seed ...``, partners in
   turn, both seats), with the LLM loop's step (:class:`~beliefgate.policytree.learn.Learner`):
   the same run dir (``config.json`` with ``kind: distil``, ``iter_KK/``, ``state.json``,
   ``best.py``, ``summary.json``), memory pool and resumption; ``policytree show`` prints the
   result and ``policytree run`` plays it.

Every iteration logs the states it labelled and the aggregate's size, the played policy's
agreement with the teacher on its own states, the fitted trees' agreement on the aggregate, the
trees' sizes (leaves) and the reward.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict, List, Literal, Optional, Sequence, Tuple, Union

from pydantic import ConfigDict, Field, field_validator, model_validator

from beliefgate.envs.domain import domain_for_layout
from beliefgate.errors import BeliefgateError, InputError, RuntimeFailure
from beliefgate.provenance import git_commit
from beliefgate.policytree.learn import (ENTRY, PARTNER_HEADER, SELF_HEADER, LearnConfigError, Learner, PoolConfig,
                                         CLASSIC_SCHEMA, V2_SCHEMA, RolloutResult, _put, check_tree, run_rollouts,
                                         two_seat_classic_layout)
from beliefgate.validation import CheckedModel

DISTIL_VERSION = 1
#: collection seeds start this far above ``seed`` (the reward rollouts use ``seed ...``)
COLLECT_OFFSET = 100


class DistilConfigError(LearnConfigError):
    """A distillation configuration (teacher, layout, partners, depth...) or run dir that cannot be used."""


class DistilConfig(PoolConfig, CheckedModel):
    """Everything that determines a distillation run (``config.json``, with ``kind: distil``)."""

    error_type = DistilConfigError
    model_config = ConfigDict(frozen=True, extra="forbid")

    layout: str
    partners: Tuple[str, ...] = Field(min_length=1)
    teacher: str = "overforge"
    iterations: int = Field(8, ge=1)
    #: played episodes an iteration; ``None``: every partner from both seats (``2 * len(partners)``),
    #: so that no partner or seat goes unlabelled in any iteration; with fewer, the turn carries on
    #: from one iteration to the next, so every partner and seat is played within ``2 * len(partners)``
    #: episodes
    episodes: Optional[int] = Field(None, ge=2, le=COLLECT_OFFSET)
    #: reward episodes a candidate (partners and seats in turn): single episodes vary widely, and a
    #: small judge keeps a lucky candidate (tree episodes are cheap; the teacher plays none of them)
    rollouts: int = Field(36, ge=1, le=COLLECT_OFFSET)
    horizon: int = Field(400, ge=1)
    depth: int = Field(6, ge=1, le=12)
    min_leaf: int = Field(5, ge=1)
    seed: int = Field(1000, ge=0)
    start: Literal["teacher", "seed"] = "teacher"
    partner_tree: bool = True
    partner_feature: bool = True
    aggregate: bool = True
    #: weight each class inversely to its frequency (rare skills such as deliver_soup get their own leaves)
    balance: bool = False
    #: the trees read the agent's recipe belief (``believed_*`` of the V2 flat state) where the layout
    #: draws several recipes; False: the ablation without it (the tree sees only the state)
    belief: bool = True
    #: the trees play as ``policy-tree:PATH:bayes`` -- the belief gate's MAP skill of the teammate in
    #: ``teammate_last_inferred_skill`` -- and read it (``gate_believes_<skill>``); the labels replay the
    #: same default gate over each log. False (default): no gate, no such features
    gate: bool = False
    cpu_ms: float = 50
    memory_mb: int = 256
    trace_entries: int = Field(40, ge=1)
    #: the environment options of every episode (the layout's domain checks them; OvercookedV2: a
    #: hidden recipe, e.g. ``agent_view_size``, ``sample_recipe_on_delivery``); recorded in config.json
    env_options: Dict[str, Any] = Field(default_factory=dict)

    RESUMABLE: ClassVar[Tuple[str, ...]] = ("iterations",)

    @field_validator("layout")
    @classmethod
    def _resolve_layout(cls, layout: str) -> str:
        domain, name = two_seat_classic_layout(layout, "distillation (its features)", FEATURE_SCHEMAS)
        if not domain.probe_states(name, 0):
            raise ValueError(f"layout {name!r}: its domain gives no flat-state probe states, so no tree can be checked there")
        return name

    @model_validator(mode="before")
    @classmethod
    def _every_partner_both_seats(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("episodes") is not None:
            return data
        partners = data.get("partners")
        return {**data, "episodes": 2 * len(partners)} if isinstance(partners, (list, tuple)) and partners else data

    @model_validator(mode="after")
    def _playable(self) -> "DistilConfig":
        from beliefgate.agents.registry import make_agent

        domain = domain_for_layout(self.layout)
        if self.env_options:
            try:
                domain.check_env_options(self.layout, **self.env_options)
            except (InputError, TypeError) as exc:
                raise ValueError(f"env_options: {exc}") from None
        domain.check_partners(list(self.partners))
        if len(set(self.partners)) != len(self.partners):
            raise ValueError(f"partner {next(p for p in self.partners if self.partners.count(p) > 1)!r} is given twice")
        for name in (self.teacher, *self.partners):
            why = domain.partner_restriction(name, self.layout)
            if why is not None:
                who = "teacher" if name == self.teacher else "partner"
                raise ValueError(f"{who} {name!r} does not play {self.layout}: {why}")
        if self.teacher.startswith("policy-tree"):
            raise ValueError(f"teacher {self.teacher!r}: a policy tree cannot teach a policy tree")
        try:
            make_agent(self.teacher, domain=domain)
        except BeliefgateError as exc:
            raise ValueError(f"teacher {self.teacher!r}: {str(exc).split('; available')[0]}") from None
        return self

    def to_dict(self) -> Dict[str, Any]:
        return {**self.model_dump(mode="json"), "distil_version": DISTIL_VERSION}


# ------------------------------------------------------------------------------ features
@dataclass(frozen=True)
class Feature:
    """A named feature of the flat state: ``expr`` is its Python expression in the emitted code
    (over ``state`` and, for the self tree, ``mate_skill``), ``value`` computes the same number here."""

    name: str
    expr: str
    text: str
    value: Callable[[Dict[str, Any], Optional[str]], float]
    boolean: bool
    #: a probability, not a count: its cuts keep their decimals (a count's are floored to integers)
    fraction: bool = False


def _onions_missing(d: Dict[str, Any]) -> int:
    return sum(3 - p["count"] for p in d["pot"] if p["state"] == "idle")


def _soups_coming(d: Dict[str, Any]) -> int:
    return sum(1 for p in d["pot"] if p["state"] != "idle")


HELPERS = '''def onions_missing(state):
    missing = 0
    for pot in state["pot"]:
        if pot["state"] == "idle":
            missing += 3 - pot["count"]
    return missing


def soups_coming(state):
    return len([p for p in state["pot"] if p["state"] != "idle"])
'''


def features(pots: int, skills: Sequence[str], self_skills: Sequence[str], mate_skills: Sequence[str] = (),
             with_seat: bool = False, split_floor: bool = False, gate: bool = False) -> List[Feature]:
    """The named features of a layout with ``pots`` pots: holdings, pots, counters, the teammate's
    last completed skill, self's last skill, and (``mate_skills``) the predicted partner skill.
    ``split_floor`` (a counter wall between the players) adds what self can reach: items on the
    counters next to its own floor, and the empty counters both can reach (where the floor is one
    region these equal the totals, so they are left out there)."""
    out: List[Feature] = []

    def add(name, expr, text, fn, boolean):
        out.append(Feature(name, expr, text, fn, boolean))

    if with_seat:
        add("self_is_player1", 'state["self_player"] == 1', "self is player 1",
            lambda d, m: float(d["self_player"] == 1), True)
    for who in ("self", "teammate"):
        for held in ("onion", "dish", "soup"):
            add(f"{who}_holds_{held}", f'state["holdings"]["{who}"] == "{held}"', f"{who} holds {held}",
                lambda d, m, w=who, h=held: float(d["holdings"][w] == h), True)
    for i in range(pots):
        add(f"pot{i}_onions", f'state["pot"][{i}]["count"]', f"onions in pot {i}",
            lambda d, m, i=i: float(d["pot"][i]["count"]), False)
        for st in ("cooking", "ready"):
            add(f"pot{i}_{st}", f'state["pot"][{i}]["state"] == "{st}"', f"pot {i} is {st}",
                lambda d, m, i=i, st=st: float(d["pot"][i]["state"] == st), True)
        add(f"pot{i}_ticks_left", f'(state["pot"][{i}]["timers"] or 0)', f"cook ticks left in pot {i}",
            lambda d, m, i=i: float(d["pot"][i]["timers"] or 0), False)
    add("any_soup_ready", 'state["any_soup_ready"]', "a soup is ready", lambda d, m: float(d["any_soup_ready"]), True)
    add("any_pot_not_full", 'state["any_pot_not_full"]', "a pot is not full",
        lambda d, m: float(d["any_pot_not_full"]), True)
    add("onions_missing", "onions_missing(state)", "onions the idle pots still need",
        lambda d, m: float(_onions_missing(d)), False)
    add("soups_coming", "soups_coming(state)", "pots cooking or ready", lambda d, m: float(_soups_coming(d)), False)
    # the same needs net of what the teammate already carries towards them: "does the pot need the onion
    # I hold" in one number, whoever the teammate is (a raw count and a holding test take two splits,
    # which a depth-limited tree may spend on a proxy such as self's last skill instead)
    add("onions_missing_after_mate", 'onions_missing(state) - (state["holdings"]["teammate"] == "onion")',
        "onions the idle pots still need beyond the teammate's", lambda d, m: float(
            _onions_missing(d) - (d["holdings"]["teammate"] == "onion")), False)
    add("soups_left_after_mate", 'soups_coming(state) - (state["holdings"]["teammate"] == "dish")',
        "pots cooking or ready beyond the one the teammate's dish is for", lambda d, m: float(
            _soups_coming(d) - (d["holdings"]["teammate"] == "dish")), False)
    for kind in ("empty", "onion", "dish", "soup"):
        key = f"num_{kind}_counters"
        add(key, f'state["{key}"]', f"{'empty counters' if kind == 'empty' else kind + 's on counters'}",
            lambda d, m, key=key: float(d[key]), False)
    if split_floor:
        for kind in ("onion", "dish", "soup"):
            key = f"reach_{kind}_counters"
            add(key, f'state["{key}"]', f"{kind}s on counters self can reach", lambda d, m, key=key: float(d[key]), False)
        add("shared_empty_counters", 'state["shared_empty_counters"]', "empty counters both players can reach",
            lambda d, m: float(d["shared_empty_counters"]), False)
    out += _history_features(skills, self_skills, gate)
    return out + predicted_features(mate_skills)


def _history_features(skills: Sequence[str], self_skills: Sequence[str], gate: bool = False) -> List[Feature]:
    """The teammate's last completed skill and self's last skill, one boolean per skill (both schemas);
    with ``gate``, also the belief gate's MAP skill of the teammate (``teammate_last_inferred_skill``
    of a ``:bayes`` tree agent)."""
    return ([Feature(f"mate_completed_{s}", f'state["teammate_last_completed_skill"] == "{s}"',
                     f"the teammate last completed {s}",
                     lambda d, m, s=s: float(d["teammate_last_completed_skill"] == s), True) for s in skills]
            + [Feature(f"self_last_{s}", f'state["self_last_skill"] == "{s}"', f"self's last skill is {s}",
                       lambda d, m, s=s: float(d["self_last_skill"] == s), True) for s in self_skills]
            + [Feature(f"gate_believes_{s}", f'state["teammate_last_inferred_skill"] == "{s}"',
                       f"the belief gate's most probable teammate skill is {s}",
                       lambda d, m, s=s: float(d["teammate_last_inferred_skill"] == s), True)
               for s in (skills if gate else ())])


def predicted_features(mate_skills: Sequence[str]) -> List[Feature]:
    """The self tree's view of the partner tree's answer: one boolean per skill it can predict."""
    return [Feature(f"predicted_{s}", f'mate_skill == "{s}"', f"the teammate is predicted to {s}",
                    lambda d, m, s=s: float(m == s), True) for s in mate_skills]


def v2_features(probe: Dict[str, Any], skills: Sequence[str], self_skills: Sequence[str],
                with_seat: bool = False, belief: bool = True, gate: bool = False) -> List[Feature]:
    """The named features of an OvercookedV2 kitchen (flat state ``overcooked_v2/1``) for a two-seat
    tree; ``probe`` is one of the layout's probe states (its pots, ingredients and recipes). Holdings
    by type, the recipe where seen and the candidates where not, what the pot needs per ingredient
    (for some candidate and whichever candidate), pots, plates, counters by object, the skills each
    seat can reach now (a split kitchen's walls), the teammate's and self's last skills. A feature
    that is constant on a layout (one recipe: nothing to infer) is simply never split on, so a
    layout with several recipes only adds features: among them the agent's recipe belief
    (``believed_*``), left out with ``belief=False`` (the ablation without it)."""
    out: List[Feature] = []

    def add(name, expr, text, fn, boolean):
        out.append(Feature(name, expr, text, fn, boolean))

    ingredients = [f"ingredient_{i}" for i in probe["ingredients"]]
    recipes = list(probe["recipes"])
    if with_seat:
        add("self_is_player1", 'state["self_player"] == 1', "self is player 1",
            lambda d, m: float(d["self_player"] == 1), True)
    for who in ("self", "teammate"):
        for held in ("plate", "dish", *ingredients):
            add(f"{who}_holds_{held}", f'state["holdings"]["{who}"] == "{held}"', f"{who} holds {held}",
                lambda d, m, w=who, h=held: float(d["holdings"][w] == h), True)
    add("held_fits", 'state["held_fits"]', "self holds an ingredient an open pot can take",
        lambda d, m: float(d["held_fits"]), True)
    if len(recipes) > 1:
        add("recipe_visible", 'state["recipe_visible"]', "self sees the recipe",
            lambda d, m: float(d["recipe_visible"]), True)
        add("candidates", 'len(state["candidate_recipes"])', "recipes still possible",
            lambda d, m: float(len(d["candidate_recipes"])), False)
        for r in recipes:
            add(f"candidate_{r}", f'"{r}" in state["candidate_recipes"]', f"recipe {r} is still possible",
                lambda d, m, r=r: float(r in d["candidate_recipes"]), True)
    if len(recipes) > 1 and belief:
        # the recipe belief the tree agent keeps (a memory of the recipe seen, the teammate's
        # ingredient choices and wrong dishes), where a layout draws several recipes
        out.append(Feature("believed_confidence", '(state["believed_confidence"] or 0)',
                           "the believed recipe's probability", lambda d, m: float(d["believed_confidence"] or 0),
                           False, fraction=True))
        for r in recipes:
            add(f"believed_{r}", f'state["believed_recipe"] == "{r}"', f"the most probable recipe is {r}",
                lambda d, m, r=r: float(d["believed_recipe"] == r), True)
    for ing in ingredients:
        add(f"need_{ing}", f'state["ingredient_need"]["{ing}"]', f"{ing} the pot needs for some candidate",
            lambda d, m, k=ing: float(d["ingredient_need"][k]), False)
        if len(recipes) > 1:
            add(f"sure_{ing}", f'state["ingredient_sure"]["{ing}"]', f"{ing} the pot needs whichever candidate",
                lambda d, m, k=ing: float(d["ingredient_sure"][k]), False)
            if belief:
                add(f"believed_need_{ing}", f'state["believed_need"]["{ing}"]',
                    f"{ing} the pot needs for the believed recipe",
                    lambda d, m, k=ing: float(d["believed_need"][k]), False)
    for i in range(len(probe["pot"])):
        add(f"pot{i}_count", f'state["pot"][{i}]["count"]', f"ingredients in pot {i}",
            lambda d, m, i=i: float(d["pot"][i]["count"]), False)
        for st in ("cooking", "ready"):
            add(f"pot{i}_{st}", f'state["pot"][{i}]["state"] == "{st}"', f"pot {i} is {st}",
                lambda d, m, i=i, st=st: float(d["pot"][i]["state"] == st), True)
        add(f"pot{i}_ticks_left", f'(state["pot"][{i}]["timers"] or 0)', f"cook ticks left in pot {i}",
            lambda d, m, i=i: float(d["pot"][i]["timers"] or 0), False)
        if len(recipes) > 1:
            add(f"pot{i}_fits", f'state["pot"][{i}]["fits"]', f"pot {i} can still become a candidate recipe",
                lambda d, m, i=i: float(d["pot"][i]["fits"]), True)
    for key, text in (("any_soup_ready", "a soup is ready"), ("any_soup_cooking", "a soup is cooking"),
                      ("any_pot_not_full", "a pot is not full"), ("any_pot_to_start", "a pot waits to be started")):
        add(key, f'state["{key}"]', text, lambda d, m, key=key: float(d[key]), True)
    for key, text in (("soups_coming", "pots cooking, ready or full"),
                      ("plates_needed", "soups coming beyond the teammate's plates and dishes"),
                      ("num_empty_counters", "empty counters")):
        add(key, f'state["{key}"]', text, lambda d, m, key=key: float(d[key]), False)
    for obj in ("plate", "dish", *ingredients):
        add(f"counter_{obj}", f'state["counter_counts"].get("{obj}", 0)', f"{obj}s on counters",
            lambda d, m, o=obj: float(d["counter_counts"].get(o, 0)), False)
    for who, key, names in (("self", "self_reachable", self_skills), ("teammate", "teammate_reachable", skills)):
        for s in names:
            add(f"{who}_reaches_{s}", f'"{s}" in state["{key}"]', f"{who} can reach a target of {s} now",
                lambda d, m, s=s, key=key: float(s in d[key]), True)
    return out + _history_features(skills, self_skills, gate)


#: the flat-state schemas distillation has features for
FEATURE_SCHEMAS = (CLASSIC_SCHEMA, V2_SCHEMA)


def layout_features(layout: str, skills: Sequence[str], self_skills: Sequence[str],
                    with_seat: bool = False, belief: bool = True, gate: bool = False) -> List[Feature]:
    """The features of ``layout``'s flat state (:func:`features` for classic kitchens,
    :func:`v2_features` for OvercookedV2 ones), without the predicted partner skill."""
    domain = domain_for_layout(layout)
    probe = domain.probe_states(layout, 0)[0]
    if domain.flat_state_schema == V2_SCHEMA:
        return v2_features(probe, skills, self_skills, with_seat=with_seat, belief=belief, gate=gate)
    return features(len(probe["pot"]), skills, self_skills, with_seat=with_seat, split_floor=split_floor(layout),
                    gate=gate)


def split_floor(layout: str) -> bool:
    """Does a counter wall split ``layout``'s floor between the players (see :func:`features`)?"""
    return not domain_for_layout(layout).layout_info(layout).shared_floor


def matrix(rows: Sequence[Dict[str, Any]], feats: Sequence[Feature], mates: Optional[Sequence[Optional[str]]] = None):
    import numpy as np

    mates = mates if mates is not None else [None] * len(rows)
    try:
        values = [[f.value(r, m) for f in feats] for r, m in zip(rows, mates)]
    except KeyError as e:  # a state pooled by an older flat-state schema, resumed by this code
        raise DistilConfigError(f"a pooled state has no flat-state key {e}: it was written by an older "
                                "beliefgate; distil into a new --out") from None
    return np.array(values, dtype=float).reshape(len(rows), len(feats))


# ------------------------------------------------------------------------------ trees as code
@dataclass(frozen=True)
class Leaf:
    label: str


@dataclass(frozen=True)
class Split:
    """``feature`` true (boolean) or above ``cut`` (number) -> ``high``, else ``low``."""

    feature: Feature
    cut: Union[int, float]   # an integer, except on a fraction feature
    low: "Node"
    high: "Node"


Node = Union[Leaf, Split]


def from_sklearn(model, feats: Sequence[Feature]) -> Node:
    """The fitted ``DecisionTreeClassifier`` as nested splits, same-answer branches merged."""
    t = model.tree_
    classes = [str(c) for c in model.classes_]

    def walk(i: int) -> Node:
        left, right = int(t.children_left[i]), int(t.children_right[i])
        if left < 0:
            return Leaf(classes[int(t.value[i][0].argmax())])
        low, high = walk(left), walk(right)
        if low == high:
            return low
        f = feats[int(t.feature[i])]
        cut = float(t.threshold[i])
        return Split(f, round(cut, 6) if f.fraction else int(math.floor(cut)), low, high)

    return walk(0)


def constant(label: str) -> Node:
    return Leaf(label)


def leaves(node: Node) -> int:
    return 1 if isinstance(node, Leaf) else leaves(node.low) + leaves(node.high)


def predict(node: Node, d: Dict[str, Any], mate: Optional[str] = None) -> str:
    """What the emitted code answers for the flat state ``d`` (the same rule, evaluated here)."""
    while isinstance(node, Split):
        v = node.feature.value(d, mate)
        node = node.high if (v > 0.5 if node.feature.boolean else v > node.cut) else node.low
    return node.label


def _condition(s: Split) -> str:
    return s.feature.expr if s.feature.boolean else f"{s.feature.expr} > {s.cut}"


def code_lines(node: Node, indent: int = 1) -> List[str]:
    pad = "    " * indent
    if isinstance(node, Leaf):
        return [f'{pad}return "{node.label}"']
    lines = [f"{pad}if {_condition(node)}:"] + code_lines(node.high, indent + 1)
    rest = node.low
    while isinstance(rest, Split):  # an else holding only another split reads as elif
        lines += [f"{pad}elif {_condition(rest)}:"] + code_lines(rest.high, indent + 1)
        rest = rest.low
    return lines + [f"{pad}else:"] + code_lines(rest, indent + 1)


def text_lines(node: Node, indent: int = 0) -> List[str]:
    pad = "   " * indent
    if isinstance(node, Leaf):
        return [f"{pad}-> {node.label}"]
    f = node.feature
    yes = f.text if f.boolean else f"{f.text} > {node.cut}"
    no = f"not: {f.text}" if f.boolean else f"{f.text} <= {node.cut}"
    return ([f"{pad}if {yes}:"] + text_lines(node.high, indent + 1) + [f"{pad}else ({no}):"]
            + text_lines(node.low, indent + 1))


@dataclass
class FittedPolicy:
    """The partner and self trees, per seat group (``None`` key: both seats share them)."""

    partner: Dict[Optional[int], Node]
    own: Dict[Optional[int], Node]
    reads_partner: bool
    note: str = ""

    def predict(self, d: Dict[str, Any]) -> Tuple[str, str]:
        key = d["self_player"] if None not in self.own else None
        mate = predict(self.partner[key], d)
        return mate, predict(self.own[key], d, mate)

    def size(self) -> Dict[str, int]:
        return {"partner_leaves": sum(leaves(n) for n in self.partner.values()),
                "self_leaves": sum(leaves(n) for n in self.own.values())}


def _function(name: str, args: str, trees: Dict[Optional[int], Node]) -> str:
    if None in trees:
        return f"def {name}({args}):\n" + "\n".join(code_lines(trees[None])) + "\n"
    parts = []
    for seat, node in sorted(trees.items()):
        parts.append(f"def {name}_seat{seat}({args}):\n" + "\n".join(code_lines(node)) + "\n")
    seats = sorted(trees)
    body = [f"def {name}({args}):"]
    for seat in seats[:-1]:
        body += [f'    if state["self_player"] == {seat}:', f"        return {name}_seat{seat}({args})"]
    body.append(f"    return {name}_seat{seats[-1]}({args})")
    return "\n\n".join(parts) + "\n\n" + "\n".join(body) + "\n"


def _text(trees: Dict[Optional[int], Node]) -> str:
    if None in trees:
        return "\n".join(text_lines(trees[None]))
    return "\n".join(line for seat, node in sorted(trees.items())
                     for line in [f"Seat {seat}:"] + text_lines(node, 1))


def emit_code(policy: FittedPolicy, layout: str, header: str) -> str:
    """The tree file: the textual two-part tree as docstring, then readable code (no data tables)."""
    doc = (f"### FunctionDescription:\nName: {ENTRY}\nLayout: {layout}\n{header}\n"
           f"Outputs: (inferred_teammate_current_skill, self_action_now)\n\n"
           f"{PARTNER_HEADER}\n{_text(policy.partner)}\n\n{SELF_HEADER}\n{_text(policy.own)}\n")
    doc = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    own_args = "state, mate_skill" if policy.reads_partner else "state"
    call = "choose_own(state, mate_skill)" if policy.reads_partner else "choose_own(state)"
    helpers = f"{HELPERS}\n\n" if domain_for_layout(layout).flat_state_schema == CLASSIC_SCHEMA else ""
    return (f'"""{doc}"""\n\n\n{helpers}{_function("predict_teammate", "state", policy.partner)}\n\n'
            f'{_function("choose_own", own_args, policy.own)}\n\n'
            f"def {ENTRY}(state):\n    mate_skill = predict_teammate(state)\n    return mate_skill, {call}\n")


# ------------------------------------------------------------------------------ fitting
def _majority(labels: Sequence[str], default: str) -> str:
    from collections import Counter

    return Counter(labels).most_common(1)[0][0] if labels else default


def fit_policy(records: Sequence[Dict[str, Any]], cfg: DistilConfig) -> Tuple[FittedPolicy, Dict[str, Any]]:
    """The two trees fitted to ``records`` (flat state, teacher skill, partner hindsight skill)."""
    try:
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        raise RuntimeFailure("policytree distil needs scikit-learn (pip install scikit-learn)") from None

    domain = domain_for_layout(cfg.layout)
    library = domain.controller(cfg.layout).library.names
    seat_sets = [tuple(domain.seat_skills(cfg.layout, s)) for s in (0, 1)]
    split = seat_sets[0] != seat_sets[1]
    groups: List[Optional[int]] = [0, 1] if split else [None]
    partner, own = {}, {}
    stats: Dict[str, Any] = {"groups": {}}
    hits = total = mhits = mtotal = 0
    for g in groups:
        rows = [r for r in records if g is None or r["seat"] == g]
        self_skills = seat_sets[g if g is not None else 0]
        mate_skills = seat_sets[1 - g] if g is not None else seat_sets[1]
        base = layout_features(cfg.layout, library, self_skills, with_seat=not split, belief=cfg.belief,
                               gate=cfg.gate)
        flats = [r["flat"] for r in rows]
        plabelled = [(r["flat"], r["partner"]) for r in rows if r["partner"] is not None]
        if cfg.partner_tree and len({y for _, y in plabelled}) > 1:
            model = DecisionTreeClassifier(max_depth=cfg.depth, min_samples_leaf=cfg.min_leaf, random_state=cfg.seed,
                                           class_weight="balanced" if cfg.balance else None)
            model.fit(matrix([d for d, _ in plabelled], base), [y for _, y in plabelled])
            partner[g] = from_sklearn(model, base)
        else:
            partner[g] = Leaf(_majority([y for _, y in plabelled], mate_skills[0]))
        mates = [predict(partner[g], d) for d in flats]
        mhits += sum(predict(partner[g], d) == y for d, y in plabelled)
        mtotal += len(plabelled)
        reads = cfg.partner_tree and cfg.partner_feature
        classes = sorted({m for m in mates}) if reads else []
        feats = base + predicted_features(classes)
        labelled = [(d, m, r["teacher"]) for d, m, r in zip(flats, mates, rows) if r["teacher"] is not None]
        if len({y for _, _, y in labelled}) > 1:
            model = DecisionTreeClassifier(max_depth=cfg.depth, min_samples_leaf=cfg.min_leaf, random_state=cfg.seed,
                                           class_weight="balanced" if cfg.balance else None)
            model.fit(matrix([d for d, _, _ in labelled], feats, [m for _, m, _ in labelled]),
                      [y for _, _, y in labelled])
            own[g] = from_sklearn(model, feats)
        else:
            own[g] = Leaf(_majority([y for _, _, y in labelled], self_skills[0]))
        ghits = sum(predict(own[g], d, m) == y for d, m, y in labelled)
        hits += ghits
        total += len(labelled)
        stats["groups"][str(g)] = {"states": len(rows), "teacher_labelled": len(labelled),
                                   "partner_labelled": len(plabelled)}
    policy = FittedPolicy(partner, own, cfg.partner_tree and cfg.partner_feature)
    stats.update(fit_agreement=hits / total if total else None, partner_accuracy=mhits / mtotal if mtotal else None,
                 **policy.size())
    return policy, stats


# ------------------------------------------------------------------------------ data
def label_episode(traj, cfg: DistilConfig, seat: int, seed: int, teacher_played: bool) -> Tuple[List[Dict[str, Any]], int]:
    """One record per step of the played seat (flat state as the tree would see it, teacher skill,
    partner hindsight skill, the played skill); and the teacher's decisions made to label them."""
    from beliefgate.agents.goal_tracker import GoalTracker
    from beliefgate.agents.query import Shadow
    from beliefgate.agents.registry import make_agent
    from beliefgate.policytree.agent import believed_keys
    from beliefgate.envs.hindsight import domain_labels
    from beliefgate.eval.episode import agent_seeds

    domain = domain_for_layout(cfg.layout)
    library = domain.controller(cfg.layout).library
    mate = 1 - seat
    steps = traj.steps
    hindsight = domain_labels(domain, cfg.layout, [r.events for r in steps])
    shadow = None
    if not teacher_played:
        shadow = Shadow(make_agent(cfg.teacher, domain=domain), cfg.layout, seat,
                        agent_seeds(seed, domain.players(cfg.layout))[seat])
    records = []
    completed = last_self = inferred = None
    # the recipe belief the tree agent keeps (its own tracker, replayed over the log), and with
    # ``cfg.gate`` the belief gate a ``:bayes`` tree agent keeps (a default one, replayed the same way)
    goal = GoalTracker.for_layout(domain, cfg.layout, seat, mate)
    gate = domain.make_gate(cfg.layout, None, partner=mate) if cfg.gate else None
    for t, row in enumerate(steps):
        if t > 0:
            done = domain.completed_skills(domain.detect_events(steps[t - 1].state, row.state)[mate], library)
            if done:
                completed = library.names[done[-1]]
            if goal is not None:
                goal.observe(steps[t - 1].state, row.state)
            if gate is not None:
                inferred = gate.observe(steps[t - 1].state, row.state,
                                        ego_active=steps[t - 1].skills[seat] is not None).map_name
        flat = domain.flat_state(row.state, seat, teammate_last_completed_skill=completed,
                                 teammate_last_inferred_skill=inferred, self_last_skill=last_self,
                                 **believed_keys(goal))
        info = row.info[seat]
        played = row.skills[seat] if teacher_played else info.get("tree_skill")
        if teacher_played:
            teacher = row.skills[seat]
        else:
            teacher = shadow.would_choose(row.state, steps[t - 1].events[seat] if t > 0 else ())
        records.append({"t": t, "seed": seed, "seat": seat, "flat": flat, "teacher": teacher,
                        "partner": hindsight[t][mate], "played": played})
        if played is not None:
            last_self = played
        if gate is None and not teacher_played and info.get("partner_map") is not None:
            inferred = info.get("partner_map")
    decisions = shadow.decisions if shadow is not None else int(steps[-1].info[seat].get("plans", 0)) if steps else 0
    return records, decisions


def read_records(path: Path) -> List[Dict[str, Any]]:
    from beliefgate.policytree.learn import _damaged

    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise _damaged(path, f"line {n} is not JSON (a write cut short?)") from None
            if not isinstance(rec, dict) or not {"flat", "seat", "teacher", "partner"} <= set(rec):
                raise _damaged(path, f"line {n} is not a distillation record")
            out.append(rec)
    return out


# ------------------------------------------------------------------------------ the loop
class Distiller(Learner):
    """A distillation run in ``run_dir``: the candidate of an iteration is the CART fitted to the
    teacher's labels; accept/revert, memory pool, run dir and resumption are the LLM loop's."""

    KIND = "distil"
    COUNTS = ("states", "teacher_decisions", "unusable", "rejected", "accepted")
    HISTORY_KEYS = ("iteration", "played", "states", "total_states", "agreement", "fit_agreement",
                    "partner_accuracy", "partner_leaves", "self_leaves", "reward", "accepted", "reason", "seconds")

    def __init__(self, cfg: DistilConfig, run_dir: Path):
        super().__init__(cfg, None, run_dir, {"teacher": cfg.teacher, "llm": None})

    def plan(self, k: int) -> List[Tuple[str, int, int]]:
        """(partner, seat, seed) of iteration ``k``'s played episodes: both seats with each partner in
        turn, the turn carried on from iteration ``k - 1`` (a pool larger than ``episodes / 2`` is
        covered over the iterations rather than cut to its first partners)."""
        cfg, n = self.cfg, len(self.cfg.partners)
        first = k * cfg.episodes
        return [(cfg.partners[((first + j) // 2) % n], (first + j) % 2, cfg.seed + COLLECT_OFFSET + first + j)
                for j in range(cfg.episodes)]

    def rollout_plan(self) -> List[Tuple[str, int, int]]:
        cfg, n = self.cfg, len(self.cfg.partners)
        return [(cfg.partners[(i // 2) % n], i % 2, cfg.seed + i) for i in range(cfg.rollouts)]

    def _rollouts(self, path: Path) -> RolloutResult:
        return run_rollouts(path, self.cfg, self.rollout_plan(), env_options=self.cfg.env_options, bayes=self.cfg.gate)

    def _played(self, k: int) -> Tuple[str, str]:
        """(what, agent name) played in iteration ``k``: the teacher / seed tree first, then the last fitted tree."""
        bayes = ":bayes" if self.cfg.gate else ""
        for j in range(k - 1, -1, -1):
            code = self.dir / f"iter_{j:02d}" / "code.py"
            if code.exists():
                return f"tree of iteration {j}", f"policy-tree:{code}{bayes}"
        if self.cfg.start == "seed":
            return "seed tree", f"policy-tree:seed:{self.cfg.layout}{bayes}"
        return "teacher", self.cfg.teacher

    def _candidate(self, k: int, it_dir: Path, status: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
        import time

        from beliefgate.eval.episode import run_episode
        from beliefgate.policytree.agent import close_sandboxes
        from beliefgate.policytree.seeds import tree_text

        started = time.perf_counter()
        what, ego = self._played(k)
        teacher_played = ego == self.cfg.teacher
        records: List[Dict[str, Any]] = []
        decisions = 0
        try:
            for partner, seat, seed in self.plan(k):
                result = run_episode(self.cfg.layout, ego, partner, seed=seed, horizon=self.cfg.horizon, seat=seat,
                                     env_options=self.cfg.env_options or None)
                recs, n = label_episode(result.trajectory, self.cfg, seat, seed, teacher_played)
                records += recs
                decisions += n
        finally:
            close_sandboxes()
        _put(it_dir / "data.jsonl", "".join(json.dumps(r) + "\n" for r in records))
        labelled = [r for r in records if r["teacher"] is not None]
        agreement = (sum(r["played"] == r["teacher"] for r in labelled) / len(labelled)) if labelled else None
        pool: List[Dict[str, Any]] = []
        for j in (range(k + 1) if self.cfg.aggregate else (k,)):
            path = self.dir / f"iter_{j:02d}" / "data.jsonl"
            pool += records if j == k else (read_records(path) if path.exists() else [])
        policy, stats = fit_policy(pool, self.cfg)
        header = (f"Distilled from: {self.cfg.teacher} (DAgger iteration {k}, {len(pool)} labelled states, "
                  f"CART depth <= {self.cfg.depth}; partners {', '.join(self.cfg.partners)})")
        code = emit_code(policy, self.cfg.layout, header)
        self.state.counts["states"] += len(records)
        self.state.counts["teacher_decisions"] += 0 if teacher_played else decisions
        status.update(played=what, states=len(records), total_states=len(pool),
                      agreement=None if agreement is None else round(agreement, 4),
                      fit_agreement=None if stats["fit_agreement"] is None else round(stats["fit_agreement"], 4),
                      partner_accuracy=None if stats["partner_accuracy"] is None else round(stats["partner_accuracy"], 4),
                      partner_leaves=stats["partner_leaves"], self_leaves=stats["self_leaves"],
                      teacher_decisions=decisions if not teacher_played else 0)
        _put(it_dir / "fit.json", json.dumps(stats, indent=2))
        errors = [e for e in (check_tree(code, self.cfg.layout, s, self.cfg.cpu_ms, self.cfg.memory_mb)
                              for s in (0, 1)) if e]
        status["seconds"] = round(time.perf_counter() - started, 1)
        if errors:
            self._write(it_dir, "code_refused.py", code)
            status["code_error"] = errors[0]
            self.state.counts["unusable"] += 1
            return None
        return "distil", tree_text(code), code

    def _summarize(self, k: int, tree: str, result: RolloutResult, it_dir: Path, status: Dict[str, Any]) -> None:
        summary = (f"tree distilled in iteration {k} from {status.get('total_states')} states: "
                   f"{status.get('partner_leaves')} partner leaves, {status.get('self_leaves')} self leaves, "
                   f"agreement with the teacher {status.get('fit_agreement')}")
        self.state.memory.append({"iteration": k, "score": result.mean, "summary": summary, "source": "distil"})

    def iteration(self, k: int) -> Dict[str, Any]:
        import time

        started = time.perf_counter()
        status = super().iteration(k)
        status["seconds"] = round(time.perf_counter() - started, 1)
        status["commit"] = git_commit()   # the code that played and fitted this iteration
        self.state.history[-1]["seconds"] = status["seconds"]
        self._write(self.dir / f"iter_{k:02d}", "status.json", json.dumps(status, indent=2))
        self._save_state()
        return status

    def run(self, progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        start = self.state.completed + 1 if self.state.history else 0
        for k in range(start, self.cfg.iterations):
            status = self.iteration(k)
            if progress is not None:
                progress(k, self.cfg.iterations, status)
        return self.write_summary()

    def write_summary(self) -> Dict[str, Any]:
        summary = {
            "kind": self.KIND, "config": self.cfg.to_dict(), "commit": git_commit(),
            "best_iteration": self.state.best_iteration, "best_reward": self.state.best_reward,
            "best": str(self.dir / "best.py") if self.state.best_iteration is not None else None,
            "history": self.state.history, "counts": self.state.counts, "nq": self.state.counts["teacher_decisions"],
        }
        _put(self.dir / "summary.json", json.dumps(summary, indent=2))
        return summary


def distil(layout: str, partners: Sequence[str], out: Union[str, Path],
           progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None, **settings) -> Dict[str, Any]:
    """Run (or resume) a distillation run; ``settings`` are :class:`DistilConfig` fields. The
    configuration is checked before anything is written."""
    cfg = DistilConfig(layout=layout, partners=tuple(partners), **settings)
    return Distiller(cfg, Path(out)).run(progress)


__all__ = ["DistilConfig", "DistilConfigError", "Distiller", "distil", "features", "v2_features", "layout_features",
           "fit_policy", "emit_code",
           "label_episode", "FittedPolicy"]
