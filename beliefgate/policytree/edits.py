"""Constrained edits of a distilled policy tree, asked of an LLM under a JSON schema.

A distilled policy (:class:`~beliefgate.policytree.distil.FittedPolicy`: a partner tree and a
self tree, per seat group on a layout whose seats have different skills) is edited one operation
at a time. Every node is addressed by a **path**: the tree's root (``partner`` or ``self``; with
seat groups ``partner.seat0``, ``self.seat1``, ...) then ``.high`` (the condition holds) or
``.low`` (it does not) per level, e.g. ``self.high.low``. The operations:

========================  ==========================================================================
``insert_rule``           a leaf becomes a split on a named feature with a cut and two leaves
                          (``then_skill`` where the condition holds, ``else_skill`` otherwise)
``delete_rule``           a split is replaced by one of its children (``keep``: ``high`` or ``low``)
``reorder_rules``         in an ``if``/``elif`` chain, the rule at the split's ``low`` child is moved
                          before the split's own rule (they change places where both conditions hold)
``change_threshold``      a split on a numeric feature gets another ``cut`` (``feature > cut``)
``swap_skill``            a leaf answers another skill
========================  ==========================================================================

:func:`apply_edit` is pure: it returns a new policy or raises :class:`EditError` (an
:class:`~beliefgate.errors.InputError`, one line naming the bad value: an unknown path or
feature, a feature the tree cannot read, a skill the seat cannot use, a cut out of range), and
the policy it was given is never changed. After an edit, splits whose two children are the same
are merged (as distillation merges them), so an edit that changes nothing is recognisable.

:func:`edit_schema` is the JSON schema of one edit *of this policy*: the operations, the tree's
current paths, the feature names, cuts and skills are enums (per tree root and per cut range), so a
model decoding under it (llama.cpp turns the schema into a grammar) can only write an edit that
parses and applies. ``tests/test_policytree_edits.py`` checks that every edit the schema admits
applies.

A policy is stored as JSON (:func:`policy_to_json`, ``best_policy.json`` of an edit run); a tree
file emitted by distillation (``best.py``) is read back into the same structure
(:func:`parse_tree_file`), checked by emitting it again and comparing the text.

The loop (:class:`Editor`, ``beliefgate policytree edit``) is the LLM loop's
(:class:`~beliefgate.policytree.learn.Learner`): iteration 0 plays the starting tree, each later
iteration asks the model for one edit, applies it, emits the code with distillation's
:func:`~beliefgate.policytree.distil.emit_code`, checks it in the sandbox on both seats' probe
states, plays the rollouts and accepts the edit only when the mean reward beats the best so far.
"""

from __future__ import annotations

import ast
import json
import math
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict, List, Literal, Optional, Sequence, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from beliefgate.envs.domain import domain_for_layout
from beliefgate.errors import InputError
from beliefgate.fileio import read_text
from beliefgate.planners.errors import ModelOutputError
from beliefgate.policytree.distil import (Feature, FittedPolicy, Leaf, Node, Split, emit_code, layout_features,
                                           predicted_features)
from beliefgate.policytree.learn import (ENTRY, LearnConfigError, Learner, PoolConfig, RolloutResult, _json_object, _put,
                                         check_tree, fit, render, run_rollouts, system_prompt,
                                         two_seat_classic_layout)
from beliefgate.provenance import git_commit
from beliefgate.validation import CheckedModel, describe

POLICY_FORMAT = "beliefgate-policy-tree/1"
EDIT_VERSION = 1
#: the classic kitchen (schema overcooked/1): onions a pot takes, ticks a soup cooks
POT_CAPACITY = 3
COOK_TICKS = 20
#: deepest split an insert may create (a path's length); the sandbox's code-size limit is far above
MAX_DEPTH = 12
OPS = ("insert_rule", "delete_rule", "reorder_rules", "change_threshold", "swap_skill")


class EditError(InputError):
    """An edit that does not apply to the policy: unknown path, unknown feature or one the tree
    cannot read, a skill the seat cannot use, a cut out of range, a split that is not there."""


class PolicyFileError(InputError):
    """A policy JSON, tree file or run dir that cannot be read as a distilled policy."""


class EditConfigError(LearnConfigError):
    """An edit run's configuration or run dir that cannot be used."""


# ------------------------------------------------------------------------------ vocabulary
@dataclass(frozen=True)
class Vocabulary:
    """What one tree (one root) may read and answer."""

    features: Dict[str, Feature]
    skills: Tuple[str, ...]
    #: the smallest and largest cut of each feature (``feature > cut`` must be able to hold and to fail);
    #: (0, 0) for a true/false feature
    cut_range: Dict[str, Tuple[int, int]]

    def cuts(self, name: str) -> List[int]:
        lo, hi = self.cut_range[name]
        return list(range(lo, hi + 1))


def _value_range(f: Feature, kinds: Dict[str, int], probes: Sequence[Dict[str, Any]]) -> Tuple[int, int]:
    """(smallest, largest) value of numeric feature ``f``: by its kind where :func:`features` makes it
    (pot onions, cook ticks, onions missing, soups coming, counters), otherwise the values it takes on
    the domain's probe states (a feature distillation adds later still gets a range)."""
    for pattern, top in kinds.items():
        if re.fullmatch(pattern, f.name):
            return 0, top
    values = [f.value(d, None) for d in probes]
    return math.floor(min(values)), math.ceil(max(values))


def _group_key(group: Optional[int]) -> str:
    return "both" if group is None else f"seat{group}"


def root_name(tree: str, group: Optional[int]) -> str:
    return tree if group is None else f"{tree}.{_group_key(group)}"


@lru_cache(maxsize=64)
def vocabularies(layout: str, reads_partner: bool) -> Dict[str, Vocabulary]:
    """Per root (``partner``, ``self`` or ``partner.seat0`` ...): the features and skills it may use,
    built exactly as :func:`~beliefgate.policytree.distil.fit_policy` builds them. Cached: a
    :class:`~beliefgate.policytree.distil.Feature` compares by identity of its ``value`` function,
    so every tree of a layout must hold the same feature objects for equal trees to compare equal."""
    domain = domain_for_layout(layout)
    library = domain.controller(layout).library.names
    seat_sets = [tuple(domain.seat_skills(layout, s)) for s in (0, 1)]
    split = seat_sets[0] != seat_sets[1]
    probes = domain.probe_states(layout, 0) + domain.probe_states(layout, 1)
    pots = len(probes[0]["pot"])
    counters = max(p["num_empty_counters"] + p["num_onion_counters"] + p["num_dish_counters"]
                   + p["num_soup_counters"] for p in probes)
    kinds = {r"pot\d+_onions": POT_CAPACITY, r"pot\d+_ticks_left": COOK_TICKS, "onions_missing": POT_CAPACITY * pots,
             "soups_coming": pots, r"num_[a-z]+_counters": counters,
             r"reach_[a-z]+_counters": counters, "shared_empty_counters": counters}
    out: Dict[str, Vocabulary] = {}
    for group in ([0, 1] if split else [None]):
        own = seat_sets[group if group is not None else 0]
        mate = seat_sets[1 - group] if group is not None else seat_sets[1]
        base = layout_features(layout, library, own, with_seat=not split)
        predicted = predicted_features(mate) if reads_partner else []
        for tree, feats, skills in (("partner", base, mate), ("self", base + predicted, own)):
            cuts = {}
            for f in feats:
                lo, hi = (0, 1) if f.boolean else _value_range(f, kinds, probes)
                cuts[f.name] = (lo, max(lo, hi - 1))
            out[root_name(tree, group)] = Vocabulary({f.name: f for f in feats}, tuple(skills), cuts)
    return out


# ------------------------------------------------------------------------------ policy <-> JSON
def _roots(policy: FittedPolicy) -> Dict[str, Node]:
    out = {}
    for tree, trees in (("partner", policy.partner), ("self", policy.own)):
        for group in sorted(trees, key=lambda g: -1 if g is None else g):
            out[root_name(tree, group)] = trees[group]
    return out


def _node_json(node: Node) -> Dict[str, Any]:
    if isinstance(node, Leaf):
        return {"skill": node.label}
    return {"feature": node.feature.name, "cut": node.cut, "high": _node_json(node.high), "low": _node_json(node.low)}


def policy_to_json(policy: FittedPolicy, layout: str) -> Dict[str, Any]:
    """The policy as plain JSON: ``{"format", "layout", "reads_partner", "note", "trees": {root: node}}``;
    a node is ``{"skill": s}`` or ``{"feature": name, "cut": n, "high": node, "low": node}``."""
    return {"format": POLICY_FORMAT, "layout": layout, "reads_partner": policy.reads_partner, "note": policy.note,
            "trees": {root: _node_json(node) for root, node in _roots(policy).items()}}


def _node_from_json(data: Any, vocab: Vocabulary, where: str, depth: int = 0) -> Node:
    if depth > 64:
        raise PolicyFileError(f"{where}: the tree is nested deeper than 64 levels")
    if not isinstance(data, dict):
        raise PolicyFileError(f"{where}: a node must be an object, got {type(data).__name__}")
    if set(data) == {"skill"}:
        if data["skill"] not in vocab.skills:
            raise PolicyFileError(f"{where}: skill {data['skill']!r} is not one this tree may answer "
                                  f"({', '.join(vocab.skills)})")
        return Leaf(data["skill"])
    if set(data) != {"feature", "cut", "high", "low"}:
        raise PolicyFileError(f"{where}: a node has either 'skill' or 'feature', 'cut', 'high' and 'low', "
                              f"got keys {sorted(data)}")
    name, cut = data["feature"], data["cut"]
    if name not in vocab.features:
        raise PolicyFileError(f"{where}: unknown feature {name!r} for this tree")
    lo, hi = vocab.cut_range[name]
    if not isinstance(cut, int) or isinstance(cut, bool) or not lo <= cut <= hi:
        raise PolicyFileError(f"{where}: cut {cut!r} of {name} is out of range {lo}..{hi}")
    return Split(vocab.features[name], cut, _node_from_json(data["low"], vocab, f"{where}.low", depth + 1),
                 _node_from_json(data["high"], vocab, f"{where}.high", depth + 1))


def policy_from_json(data: Any, source: str = "policy") -> Tuple[FittedPolicy, str]:
    """(policy, layout) from :func:`policy_to_json`'s form; :class:`PolicyFileError` naming the bad part."""
    if not isinstance(data, dict) or data.get("format") != POLICY_FORMAT:
        raise PolicyFileError(f"{source}: not a policy of format {POLICY_FORMAT!r}")
    layout, reads, trees = data.get("layout"), data.get("reads_partner"), data.get("trees")
    if not isinstance(layout, str) or not isinstance(reads, bool) or not isinstance(trees, dict):
        raise PolicyFileError(f"{source}: needs 'layout' (text), 'reads_partner' (true/false) and 'trees' (object)")
    layout = _classic_layout(layout, source)
    vocab = vocabularies(layout, reads)
    if set(trees) != set(vocab):
        raise PolicyFileError(f"{source}: trees {sorted(trees)}, but layout {layout} needs {sorted(vocab)}")
    partner: Dict[Optional[int], Node] = {}
    own: Dict[Optional[int], Node] = {}
    for root, node in trees.items():
        tree, _, group = root.partition(".")
        key = None if not group else int(group[len("seat"):])
        (partner if tree == "partner" else own)[key] = _node_from_json(node, vocab[root], f"{source}: {root}")
    note = data.get("note", "")
    return FittedPolicy(partner, own, reads, note if isinstance(note, str) else ""), layout


def _classic_layout(layout: str, source: str) -> str:
    try:
        name = two_seat_classic_layout(layout, "an edited policy tree (distillation's features)")[1]
    except (InputError, KeyError, ValueError) as exc:
        raise PolicyFileError(f"{source}: layout {layout!r}: {str(exc).splitlines()[0].split('; supported')[0]}") from None
    return name


# ------------------------------------------------------------------------------ tree files -> policy
def _tree_doc_parts(doc: str, source: str) -> Tuple[str, str]:
    head = f"### FunctionDescription:\nName: {ENTRY}\nLayout: "
    tail = "\nOutputs: (inferred_teammate_current_skill, self_action_now)\n"
    if not doc.startswith(head) or tail not in doc:
        raise PolicyFileError(f"{source}: not a tree file written by distillation (its docstring has no "
                              f"'Layout:' and 'Outputs:' lines)")
    layout, _, rest = doc[len(head):].partition("\n")
    header = rest.split(tail)[0]
    return layout, header


def _conditions(vocab: Vocabulary) -> Tuple[Dict[str, Feature], Dict[str, Feature]]:
    booleans, numbers = {}, {}
    for f in vocab.features.values():
        (booleans if f.boolean else numbers)[ast.dump(ast.parse(f.expr, mode="eval").body)] = f
    return booleans, numbers


def _int_literal(node: ast.expr) -> Optional[int]:
    """The int of ``3`` or ``-1`` (how emitted code writes a cut), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _parse_body(body: List[ast.stmt], vocab: Vocabulary, source: str) -> Node:
    booleans, numbers = _conditions(vocab)

    def walk(stmts: List[ast.stmt]) -> Node:
        if len(stmts) != 1:
            raise PolicyFileError(f"{source}: line {stmts[0].lineno if stmts else '?'}: a tree branch holds "
                                  f"one 'if' or one 'return', got {len(stmts)} statements")
        s = stmts[0]
        if isinstance(s, ast.Return) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            if s.value.value not in vocab.skills:
                raise PolicyFileError(f"{source}: line {s.lineno}: skill {s.value.value!r} is not one this tree "
                                      f"may answer")
            return Leaf(s.value.value)
        if isinstance(s, ast.If):
            key = ast.dump(s.test)
            if key in booleans:
                feature, cut = booleans[key], 0
            elif (isinstance(s.test, ast.Compare) and len(s.test.ops) == 1 and isinstance(s.test.ops[0], ast.Gt)
                  and _int_literal(s.test.comparators[0]) is not None and ast.dump(s.test.left) in numbers):
                feature, cut = numbers[ast.dump(s.test.left)], _int_literal(s.test.comparators[0])
                lo, hi = vocab.cut_range[feature.name]
                if not lo <= cut <= hi:
                    raise PolicyFileError(f"{source}: line {s.lineno}: cut {cut} of {feature.name} is out of range "
                                          f"{lo}..{hi}")
            else:
                raise PolicyFileError(f"{source}: line {s.lineno}: condition {ast.unparse(s.test)!r} is not a "
                                      f"feature of this tree")
            return Split(feature, cut, walk(s.orelse), walk(s.body))
        raise PolicyFileError(f"{source}: line {s.lineno}: a tree branch holds one 'if' or one 'return "
                              f"\"skill\"', got {ast.unparse(s)[:60]!r}")

    return walk(body)


def parse_tree_file(text: str, source: str = "tree file") -> Tuple[FittedPolicy, str]:
    """(policy, layout) of a tree file emitted by :func:`~beliefgate.policytree.distil.emit_code`.

    The code is read, never run; the result is checked by emitting it again: a file that is not
    exactly what distillation writes (edited by hand, a model's code, a seed tree) is a
    :class:`PolicyFileError` (such a tree has no structure to edit)."""
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise PolicyFileError(f"{source}: not Python ({exc.msg}, line {exc.lineno})") from None
    doc = ast.get_docstring(module, clean=False)
    if doc is None:
        raise PolicyFileError(f"{source}: not a tree file written by distillation (no docstring)")
    layout, header = _tree_doc_parts(doc, source)
    defs = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    own_fn = defs.get("choose_own") or defs.get("choose_own_seat0")
    if own_fn is None or "predict_teammate" not in defs or not layout or " " in layout:
        raise PolicyFileError(f"{source}: not a tree file written by distillation (no predict_teammate and "
                              f"choose_own functions, or a 'Layout:' line that is not a layout name)")
    layout = _classic_layout(layout, source)
    reads = len(own_fn.args.args) == 2
    vocab = vocabularies(layout, reads)
    groups: List[Optional[int]] = [0, 1] if "partner.seat0" in vocab else [None]
    trees: Dict[str, Dict[Optional[int], Node]] = {"partner": {}, "self": {}}
    for tree, fn in (("partner", "predict_teammate"), ("self", "choose_own")):
        for g in groups:
            name = fn if g is None else f"{fn}_seat{g}"
            if name not in defs:
                raise PolicyFileError(f"{source}: no function {name} (layout {layout} has "
                                      f"{'two seat groups' if g is not None else 'one tree per part'})")
            trees[tree][g] = _parse_body(defs[name].body, vocab[root_name(tree, g)], f"{source}: {name}")
    policy = FittedPolicy(trees["partner"], trees["self"], reads, header)
    if emit_code(policy, layout, header) != text:
        raise PolicyFileError(f"{source}: does not read back as a distilled tree (emitting the parsed trees gives "
                              f"other code: edited by hand?)")
    return policy, layout


def load_policy(source: Union[str, Path]) -> Tuple[FittedPolicy, str, Path]:
    """(policy, layout, file read) from a policy JSON, a distilled tree file, or a run dir holding
    ``best_policy.json`` (an edit run) or a distillation's ``best.py``."""
    path = Path(source)
    if path.is_dir():
        if (path / "best_policy.json").is_file():
            path = path / "best_policy.json"
        elif (path / "best.py").is_file():
            path = path / "best.py"
        else:
            raise PolicyFileError(f"--from {source}: the folder holds neither best_policy.json (an edit run) nor "
                                  f"best.py (a distillation run)")
    text = read_text(path, lambda message: PolicyFileError(message), "policy file")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PolicyFileError(f"{path}: not JSON ({exc})") from None
        policy, layout = policy_from_json(data, str(path))
    else:
        policy, layout = parse_tree_file(text, str(path))
    return policy, layout, path


# ------------------------------------------------------------------------------ paths
def paths(policy: FittedPolicy) -> Dict[str, Node]:
    """Every node by its path, roots first, then depth first (high before low)."""
    out: Dict[str, Node] = {}

    def walk(node: Node, path: str) -> None:
        out[path] = node
        if isinstance(node, Split):
            walk(node.high, f"{path}.high")
            walk(node.low, f"{path}.low")

    for root, node in _roots(policy).items():
        walk(node, root)
    return out


def _split_path(path: str, roots: Sequence[str]) -> Tuple[str, List[str]]:
    for root in sorted(roots, key=len, reverse=True):
        if path == root or path.startswith(root + "."):
            steps = path[len(root):].split(".")[1:]
            if all(s in ("high", "low") for s in steps):
                return root, steps
    raise EditError(f"unknown path {path!r}: a path is a root ({', '.join(roots)}) then .high or .low per level")


def _depth(path: str) -> int:
    return path.count(".high") + path.count(".low")


def _replace(node: Node, steps: Sequence[str], new: Node) -> Node:
    if not steps or not isinstance(node, Split):  # _node_at has checked that the path exists
        return new
    if steps[0] == "high":
        return Split(node.feature, node.cut, node.low, _replace(node.high, steps[1:], new))
    return Split(node.feature, node.cut, _replace(node.low, steps[1:], new), node.high)


def simplify(node: Node) -> Node:
    """Splits whose two children are equal become that child (as distillation merges them)."""
    if isinstance(node, Leaf):
        return node
    low, high = simplify(node.low), simplify(node.high)
    return low if low == high else Split(node.feature, node.cut, low, high)


def same_trees(a: FittedPolicy, b: FittedPolicy, layout: str) -> bool:
    """Whether two policies have the same trees (their JSON forms without the note)."""
    return policy_to_json(a, layout)["trees"] == policy_to_json(b, layout)["trees"] and a.reads_partner == b.reads_partner


# ------------------------------------------------------------------------------ edits
class _Edit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str


class InsertRule(_Edit):
    op: Literal["insert_rule"]
    feature: str
    cut: int = 0
    then_skill: str
    else_skill: str


class DeleteRule(_Edit):
    op: Literal["delete_rule"]
    keep: Literal["high", "low"]


class ReorderRules(_Edit):
    op: Literal["reorder_rules"]


class ChangeThreshold(_Edit):
    op: Literal["change_threshold"]
    cut: int


class SwapSkill(_Edit):
    op: Literal["swap_skill"]
    skill: str


Edit = Union[InsertRule, DeleteRule, ReorderRules, ChangeThreshold, SwapSkill]


class _EditBox(BaseModel):
    edit: Edit = Field(discriminator="op")


def parse_edit(data: Any) -> Edit:
    """An edit from a JSON object; :class:`EditError` (one line) when it is not one."""
    if not isinstance(data, dict):
        raise EditError(f"an edit is a JSON object, got {type(data).__name__}")
    if data.get("op") not in OPS:
        raise EditError(f"unknown edit op {data.get('op')!r}; one of {', '.join(OPS)}")
    try:
        return _EditBox.model_validate({"edit": data}).edit
    except ValidationError as exc:
        raise EditError(f"{data['op']}: {describe(exc, 'edit').message}") from None


def describe_edit(edit: Edit, numeric: Sequence[str] = ()) -> str:
    """The edit in one short line (the history shown to the model, the tree file's note); ``numeric``:
    feature names to show with their cut (``feature > cut``)."""
    if isinstance(edit, InsertRule):
        cond = f"{edit.feature} > {edit.cut}" if edit.feature in numeric or edit.cut else edit.feature
        return f"insert_rule at {edit.path}: if {cond} -> {edit.then_skill} else {edit.else_skill}"
    if isinstance(edit, DeleteRule):
        return f"delete_rule at {edit.path}, keep {edit.keep}"
    if isinstance(edit, ReorderRules):
        return f"reorder_rules at {edit.path}"
    if isinstance(edit, ChangeThreshold):
        return f"change_threshold at {edit.path} to {edit.cut}"
    return f"swap_skill at {edit.path} to {edit.skill}"


def _node_at(root_node: Node, steps: Sequence[str], path: str) -> Node:
    node = root_node
    for step in steps:
        if not isinstance(node, Split):
            raise EditError(f"unknown path {path!r}: the tree ends in a leaf before it")
        node = node.high if step == "high" else node.low
    return node


def _check_skill(skill: str, vocab: Vocabulary, root: str, what: str = "skill") -> None:
    if skill not in vocab.skills:
        raise EditError(f"{what} {skill!r} is not one the {root} tree may answer ({', '.join(vocab.skills)})")


def _check_cut(name: str, cut: int, vocab: Vocabulary) -> None:
    lo, hi = vocab.cut_range[name]
    if not lo <= cut <= hi:
        raise EditError(f"cut {cut} of {name} is out of range {lo}..{hi}")


def apply_edit(policy: FittedPolicy, edit: Union[Edit, Dict[str, Any]], layout: str) -> FittedPolicy:
    """The policy after ``edit`` (a new object; ``policy`` is unchanged); :class:`EditError` when it does not apply."""
    if not isinstance(edit, _Edit):
        edit = parse_edit(edit)
    vocab_all = vocabularies(layout, policy.reads_partner)
    roots = _roots(policy)
    root, steps = _split_path(edit.path, list(roots))
    vocab = vocab_all[root]
    node = _node_at(roots[root], steps, edit.path)
    if isinstance(edit, (InsertRule, SwapSkill)) and not isinstance(node, Leaf):
        raise EditError(f"{edit.op} needs a leaf; {edit.path!r} is a split")
    if isinstance(edit, (DeleteRule, ReorderRules, ChangeThreshold)) and not isinstance(node, Split):
        raise EditError(f"{edit.op} needs a split; {edit.path!r} is a leaf")
    if isinstance(edit, InsertRule):
        if edit.feature not in vocab.features:
            raise EditError(f"unknown feature {edit.feature!r} for the {root} tree")
        _check_cut(edit.feature, edit.cut, vocab)
        _check_skill(edit.then_skill, vocab, root, "then_skill")
        _check_skill(edit.else_skill, vocab, root, "else_skill")
        if _depth(edit.path) + 1 > MAX_DEPTH:
            raise EditError(f"insert_rule at {edit.path!r} would make the tree deeper than {MAX_DEPTH}")
        new: Node = Split(vocab.features[edit.feature], edit.cut, Leaf(edit.else_skill), Leaf(edit.then_skill))
    elif isinstance(edit, SwapSkill):
        _check_skill(edit.skill, vocab, root)
        new = Leaf(edit.skill)
    elif isinstance(edit, DeleteRule):
        new = node.high if edit.keep == "high" else node.low
    elif isinstance(edit, ReorderRules):
        inner = node.low
        if not isinstance(inner, Split):
            raise EditError(f"reorder_rules at {edit.path!r}: its low branch is a leaf, not a following rule")
        new = Split(inner.feature, inner.cut, Split(node.feature, node.cut, inner.low, node.high), inner.high)
    else:
        if node.feature.boolean:
            raise EditError(f"change_threshold at {edit.path!r}: {node.feature.name} is true/false, it has no threshold")
        _check_cut(node.feature.name, edit.cut, vocab)
        new = Split(node.feature, edit.cut, node.low, node.high)
    replaced = simplify(_replace(roots[root], steps, new))
    tree, _, group = root.partition(".")
    key = None if not group else int(group[len("seat"):])
    partner, own = dict(policy.partner), dict(policy.own)
    (partner if tree == "partner" else own)[key] = replaced
    return FittedPolicy(partner, own, policy.reads_partner, policy.note)


# ------------------------------------------------------------------------------ the schema
def _branch(op: str, **props: Dict[str, Any]) -> Dict[str, Any]:
    properties = {"op": {"const": op}, **props}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _reads_prediction(node: Node) -> bool:
    if isinstance(node, Leaf):
        return False
    return (node.feature.name.startswith("predicted_") or _reads_prediction(node.low)
            or _reads_prediction(node.high))


def effective_roots(policy: FittedPolicy) -> List[str]:
    """The roots whose edits can change what the cook does: every self tree, and a partner tree only
    where its seat group's self tree reads the prediction (a ``predicted_<skill>`` split). The partner
    tree's answer is otherwise only reported, so an edit there cannot change the reward that judges it."""
    out = []
    for root in _roots(policy):
        tree, _, group = root.partition(".")
        key = None if not group else int(group[len("seat"):])
        if tree == "self" or _reads_prediction(policy.own[key]):
            out.append(root)
    return out


def edit_schema(policy: FittedPolicy, layout: str, roots: Optional[Sequence[str]] = None,
                ops: Sequence[str] = OPS) -> Dict[str, Any]:
    """The JSON schema of one edit that applies to ``policy`` (``anyOf`` per operation, tree root and
    cut range, every value an enum); no ``minimum``/``maximum`` or string patterns, which
    llama.cpp's converter does not turn into grammar. ``roots``: only edits of these trees
    (default: all of them); ``ops``: only these operations. ``anyOf`` is empty when no such edit
    applies (a tree without splits has nothing to delete)."""
    if not set(ops) <= set(OPS):
        raise EditError(f"unknown edit op {next(o for o in ops if o not in OPS)!r}; one of {', '.join(OPS)}")
    vocab_all = vocabularies(layout, policy.reads_partner)
    nodes = paths(policy)
    every = list(_roots(policy))
    unknown = [r for r in roots or () if r not in every]
    if unknown:
        raise EditError(f"unknown tree root {unknown[0]!r}; this policy has {', '.join(every)}")
    roots = every if roots is None else list(roots)

    def under(root: str, path: str) -> bool:
        return path == root or (path.startswith(root + ".") and not any(
            r != root and len(r) > len(root) and (path == r or path.startswith(r + ".")) for r in every))

    branches: List[Dict[str, Any]] = []
    for root in roots:
        vocab = vocab_all[root]
        mine = {p: n for p, n in nodes.items() if under(root, p)}
        leaf_paths = [p for p, n in mine.items() if isinstance(n, Leaf)]
        insertable = [p for p in leaf_paths if _depth(p) + 1 <= MAX_DEPTH]
        skills = {"enum": list(vocab.skills)}
        by_range: Dict[Tuple[int, int], List[str]] = {}
        for name, bounds in vocab.cut_range.items():
            by_range.setdefault(bounds, []).append(name)
        if insertable:
            for (lo, hi), names in sorted(by_range.items()):
                branches.append(_branch("insert_rule", path={"enum": insertable}, feature={"enum": names},
                                        cut={"enum": list(range(lo, hi + 1))}, then_skill=skills, else_skill=skills))
        if leaf_paths:
            branches.append(_branch("swap_skill", path={"enum": leaf_paths}, skill=skills))
        splits = [p for p, n in mine.items() if isinstance(n, Split)]
        if splits:
            branches.append(_branch("delete_rule", path={"enum": splits}, keep={"enum": ["high", "low"]}))
        chained = [p for p in splits if isinstance(mine[p].low, Split)]
        if chained:
            branches.append(_branch("reorder_rules", path={"enum": chained}))
        numeric: Dict[Tuple[int, int], List[str]] = {}
        for p in splits:
            f = mine[p].feature
            if not f.boolean:
                numeric.setdefault(vocab.cut_range[f.name], []).append(p)
        for (lo, hi), ps in sorted(numeric.items()):
            branches.append(_branch("change_threshold", path={"enum": ps}, cut={"enum": list(range(lo, hi + 1))}))
    return {"anyOf": [b for b in branches if b["properties"]["op"]["const"] in ops]}


def schema_size(schema: Dict[str, Any]) -> int:
    """How many distinct edits the schema admits (its enums multiplied out, summed over the branches)."""
    total = 0
    for branch in schema["anyOf"]:
        n = 1
        for v in branch["properties"].values():
            n *= 1 if "const" in v else len(v["enum"])
        total += n
    return total


# ------------------------------------------------------------------------------ showing the tree to a model
def tree_lines(policy: FittedPolicy) -> List[str]:
    """The trees with each node's path, indented: ``self.high: if pot0_onions > 1`` / ``self.high.high: pickup_dish``."""
    lines: List[str] = []

    def walk(node: Node, path: str, depth: int) -> None:
        pad = "  " * depth
        if isinstance(node, Leaf):
            lines.append(f"{pad}{path}: {node.label}")
            return
        cond = node.feature.name if node.feature.boolean else f"{node.feature.name} > {node.cut}"
        lines.append(f"{pad}{path}: if {cond}")
        walk(node.high, f"{path}.high", depth + 1)
        walk(node.low, f"{path}.low", depth + 1)

    for root, node in _roots(policy).items():
        walk(node, root, 0)
    return lines


#: boolean feature families shown to the model as one line each (prefix, meaning)
FAMILIES = (("mate_completed_", "the teammate last completed <skill>"), ("self_last_", "self's last skill is <skill>"),
            ("predicted_", "the partner tree predicts <skill>; self tree only"))


def feature_lines(layout: str, reads_partner: bool) -> List[str]:
    """The features the trees read, compactly: true/false names, the skill families, numbers with their cut range."""
    seen: Dict[str, Tuple[Feature, Tuple[int, int]]] = {}
    for vocab in vocabularies(layout, reads_partner).values():
        for name, f in vocab.features.items():
            seen.setdefault(name, (f, vocab.cut_range[name]))
    plain = [n for n, (f, _) in seen.items() if f.boolean and not n.startswith(tuple(p for p, _ in FAMILIES))]
    lines = [f"true/false: {', '.join(plain)}"]
    for prefix, meaning in FAMILIES:
        skills = [n[len(prefix):] for n in seen if n.startswith(prefix)]
        if skills:
            lines.append(f"true/false {prefix}<skill> ({meaning}), <skill> one of: {', '.join(skills)}")
    lines += [f"number {n}: {f.text}, cut {lo}..{hi}" for n, (f, (lo, hi)) in seen.items() if not f.boolean]
    return lines


def parse_reply(reply: Optional[str]) -> Edit:
    """The model's edit: :class:`ModelOutputError` when the reply is no JSON object or no edit."""
    if reply is None or not reply.strip():
        raise ModelOutputError("the model gave no answer", reply or "")
    obj = _json_object(reply)
    if obj is None:
        raise ModelOutputError("the answer is not a JSON object", reply)
    try:
        return parse_edit(obj)
    except EditError as exc:
        raise ModelOutputError(f"the JSON is not an edit: {exc}", reply) from None


# ------------------------------------------------------------------------------ the loop
class EditConfig(PoolConfig, CheckedModel):
    """Everything that determines an edit run (``config.json``, ``kind: edit``)."""

    error_type = EditConfigError
    model_config = ConfigDict(frozen=True, extra="forbid")

    layout: str
    partners: Tuple[str, ...] = Field(min_length=1)
    #: where the starting policy came from (a run dir, a policy JSON or a tree file), absolute
    source: str
    iterations: int = Field(10, ge=1)
    #: reward episodes a candidate (partners and seats in turn, seeds ``seed ...``)
    rollouts: int = Field(8, ge=1, le=1000)
    horizon: int = Field(400, ge=1)
    seed: int = Field(1000, ge=0)
    cpu_ms: float = 50
    memory_mb: int = 256
    max_prompt_chars: int = Field(12_000, ge=1500)
    trace_entries: int = Field(40, ge=1)
    #: the operations the schema offers (a weak model that keeps choosing one can be steered to others)
    ops: Tuple[str, ...] = Field(OPS, min_length=1)

    RESUMABLE: ClassVar[Tuple[str, ...]] = ("iterations", "max_prompt_chars")

    @field_validator("ops")
    @classmethod
    def _known_ops(cls, ops: Tuple[str, ...]) -> Tuple[str, ...]:
        unknown = [o for o in ops if o not in OPS]
        if unknown:
            raise ValueError(f"unknown edit op {unknown[0]!r}; one of {', '.join(OPS)}")
        if len(set(ops)) != len(ops):
            raise ValueError(f"edit op {next(o for o in ops if ops.count(o) > 1)!r} is given twice")
        return ops

    @field_validator("layout")
    @classmethod
    def _resolve_layout(cls, layout: str) -> str:
        return two_seat_classic_layout(layout, "tree edits (distillation's features)")[1]

    @field_validator("partners")
    @classmethod
    def _distinct(cls, partners: Tuple[str, ...]) -> Tuple[str, ...]:
        if len(set(partners)) != len(partners):
            raise ValueError(f"partner {next(p for p in partners if partners.count(p) > 1)!r} is given twice")
        return partners

    @model_validator(mode="after")
    def _playable(self) -> "EditConfig":
        domain = domain_for_layout(self.layout)
        domain.check_partners(list(self.partners))
        for name in self.partners:
            why = domain.partner_restriction(name, self.layout)
            if why is not None:
                raise ValueError(f"partner {name!r} does not play {self.layout}: {why}")
        return self

    def to_dict(self) -> Dict[str, Any]:
        return {**self.model_dump(mode="json"), "edit_version": EDIT_VERSION}


class Editor(Learner):
    """An edit run in ``run_dir``: iteration 0 plays the starting policy, iteration ``k >= 1`` asks the
    model for one schema-constrained edit of the best policy so far. Rollouts, accept/revert, the
    LLM call log, the run dir and resumption are :class:`~beliefgate.policytree.learn.Learner`'s;
    each iteration's policy is ``iter_KK/policy.json`` and the accepted one also ``best_policy.json``.
    """

    KIND = "edit"
    COUNTS = ("proposed", "no_answer", "unparsed", "invalid", "no_change", "repeated", "unusable", "applied",
              "reverted", "skipped", "rejected", "accepted")
    HISTORY_KEYS = ("iteration", "base", "source", "edit", "outcome", "reward", "accepted", "reason", "llm_seconds",
                    "seconds")

    def __init__(self, cfg: EditConfig, client, run_dir: Path, start: FittedPolicy,
                 llm_info: Optional[Dict[str, Any]] = None):
        super().__init__(cfg, client, run_dir, llm_info)
        first = self.dir / "iter_00" / "policy.json"   # a resumed run edits its own trees, whatever --from holds now
        self.start = load_policy(first)[0] if first.is_file() else start
        self.current = self.start
        if self.state.best_iteration is not None:
            saved = self.dir / f"iter_{self.state.best_iteration:02d}" / "policy.json"
            self.current = load_policy(saved)[0]
        self._candidate_policy: Optional[FittedPolicy] = None

    # ---------------------------------------------------------------- prompt
    def edit_messages(self, k: int) -> List[Dict[str, str]]:
        st = self.state
        recent = [h for h in st.history if h.get("iteration", 0) >= 1][-6:]
        history = "\n".join(
            f"- iteration {h['iteration']}: {h.get('edit') or 'no edit'} -> {h.get('outcome')}"
            + (f", reward {h['reward']:g}" if h.get("reward") is not None else "") for h in recent)
        system = system_prompt("edit")
        best = "none yet" if st.best_reward is None else f"{st.best_reward:g}"
        editable = effective_roots(self.current)
        frozen = [r for r in _roots(self.current) if r not in editable]
        scope = f"You may edit: {', '.join(editable)}."
        if tuple(self.cfg.ops) != OPS:
            scope += f" Allowed edits now: {', '.join(self.cfg.ops)}."
        if frozen:
            scope += (f" Not {', '.join(frozen)}: the self tree does not read its prediction (no predicted_<skill> "
                      f"split), so changing it cannot change what the cook does.")
        fixed_fields = dict(layout=self.cfg.layout, seat_note=self.seat_note, best=best, rollouts=self.cfg.rollouts,
                            features="", tree="", history="", scope=scope)
        fixed = len(system) + len(render("edit_user", **fixed_fields)) + 40
        parts = fit(self.cfg.max_prompt_chars, fixed, {
            "features": "\n".join(feature_lines(self.cfg.layout, self.current.reads_partner)),
            "tree": "\n".join(tree_lines(self.current)), "history": history or "(none yet)"})
        user = render("edit_user", **{**fixed_fields, **parts})
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # ---------------------------------------------------------------- steps
    def _emit(self, policy: FittedPolicy) -> str:
        return emit_code(policy, self.cfg.layout, policy.note)

    def _candidate(self, k: int, it_dir: Path, status: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
        from beliefgate.policytree.seeds import tree_text

        if k == 0:
            policy, source = self.start, "start"
            status["edit"] = None
            status["outcome"] = "starting tree"
        else:
            schema = edit_schema(self.current, self.cfg.layout, effective_roots(self.current), self.cfg.ops)
            if not schema["anyOf"]:  # nothing to ask: no edit of the allowed operations applies
                self.state.counts["skipped"] += 1
                status["outcome"] = f"skipped: no {', '.join(self.cfg.ops)} edit applies to the tree"
                return None
            self.state.counts["proposed"] += 1
            started = time.perf_counter()
            reply = self.llm.ask("edit", self.edit_messages(k), schema, k)
            status["llm_seconds"] = round(time.perf_counter() - started, 2)
            record: Dict[str, Any] = {"reply": reply, "schema_branches": len(schema["anyOf"]),
                                      "schema_edits": schema_size(schema)}
            policy, source = None, "edit"
            base = status["base"] = self.state.best_iteration
            numeric = [n for v in vocabularies(self.cfg.layout, self.current.reads_partner).values()
                       for n, f in v.features.items() if not f.boolean]
            try:
                edit = parse_reply(reply)
                record["edit"] = edit.model_dump()
                status["edit"] = describe_edit(edit, numeric)
                policy = apply_edit(self.current, edit, self.cfg.layout)
            except ModelOutputError as exc:
                kind = "no_answer" if reply is None else "unparsed"
                self.state.counts[kind] += 1
                status["outcome"] = record["error"] = f"{kind}: {exc}"
            except EditError as exc:
                self.state.counts["invalid"] += 1
                status["outcome"] = record["error"] = f"invalid: {exc}"
            if policy is not None and same_trees(policy, self.current, self.cfg.layout):
                self.state.counts["no_change"] += 1
                status["outcome"] = record["error"] = "no_change: the edit leaves the tree as it was"
                policy = None
            tried = next((h for h in self.state.history if policy is not None and h.get("base") == base
                          and h.get("edit") == status["edit"] and h.get("reward") is not None), None)
            if tried is not None:  # the rollouts are seeded: the same tree would score the same again
                self.state.counts["repeated"] += 1
                status["outcome"] = record["error"] = (f"repeated: the same edit of the same tree scored "
                                                       f"{tried['reward']:g} in iteration {tried['iteration']}")
                policy = None
            if policy is not None:
                policy = FittedPolicy(policy.partner, policy.own, policy.reads_partner,
                                      f"{self.current.note}\nEdit (iteration {k}): {status['edit']}".strip())
            _put(it_dir / "edit.json", json.dumps(record, indent=2))
            if policy is None:
                return None
        code = self._emit(policy)
        errors = [e for e in (check_tree(code, self.cfg.layout, s, self.cfg.cpu_ms, self.cfg.memory_mb)
                              for s in (0, 1)) if e]
        _put(it_dir / "policy.json", json.dumps(policy_to_json(policy, self.cfg.layout), indent=2))
        if errors:
            self._write(it_dir, "code_refused.py", code)
            status["code_error"] = errors[0]
            status["outcome"] = f"unusable: {errors[0]}"
            self.state.counts["unusable"] += 1
            return None
        if k > 0:
            self.state.counts["applied"] += 1
            status["outcome"] = "applied"
        self._candidate_policy = policy
        return source, tree_text(code), code

    def _rollouts(self, path: Path) -> RolloutResult:
        return run_rollouts(path, self.cfg, self.rollout_plan())

    def rollout_plan(self) -> List[Tuple[str, int, int]]:
        cfg, n = self.cfg, len(self.cfg.partners)
        return [(cfg.partners[(i // 2) % n], i % 2, cfg.seed + i) for i in range(cfg.rollouts)]

    def _summarize(self, k: int, tree: str, result: RolloutResult, it_dir: Path, status: Dict[str, Any]) -> None:
        """An accepted candidate (no model call): it becomes the tree to edit, ``best_policy.json``."""
        policy = self._candidate_policy
        self.current = policy
        _put(self.dir / "best_policy.json", json.dumps(policy_to_json(policy, self.cfg.layout), indent=2))
        what = status.get("edit") or "the starting tree"
        self.state.memory.append({"iteration": k, "score": result.mean, "summary": what, "source": "edit"})

    def iteration(self, k: int) -> Dict[str, Any]:
        started = time.perf_counter()
        self._candidate_policy = None
        status = super().iteration(k)
        if status.get("source") == "edit" and not status.get("accepted"):
            self.state.counts["reverted"] += 1
            status["outcome"] = "reverted"
        elif status.get("accepted") and k > 0:
            status["outcome"] = "accepted"
        status["seconds"] = round(time.perf_counter() - started, 1)
        status["commit"] = git_commit()
        self.state.history[-1].update({key: status.get(key) for key in self.HISTORY_KEYS})
        self._write(self.dir / f"iter_{k:02d}", "status.json", json.dumps(status, indent=2))
        self._save_state()
        return status

    def run(self, progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        start = self.state.completed + 1 if self.state.history else 0
        for k in range(start, self.cfg.iterations + 1):
            status = self.iteration(k)
            if progress is not None:
                progress(k, self.cfg.iterations, status)
        return self.write_summary()

    def write_summary(self) -> Dict[str, Any]:
        summary = super().write_summary()
        first = next((h for h in self.state.history if h["iteration"] == 0), None)
        edits = [h for h in self.state.history if h["iteration"] >= 1]
        summary.update(kind=self.KIND, source=self.cfg.source,
                       reward_before=first["reward"] if first else None, reward_after=self.state.best_reward,
                       best_policy=str(self.dir / "best_policy.json") if self.state.best_iteration is not None
                       else None,
                       mean_llm_seconds=(round(sum(h["llm_seconds"] or 0 for h in edits) / len(edits), 2)
                                         if edits else None),
                       mean_iteration_seconds=(round(sum(h["seconds"] or 0 for h in edits) / len(edits), 1)
                                               if edits else None))
        _put(self.dir / "summary.json", json.dumps(summary, indent=2))
        return summary


def prepare(source: Union[str, Path], layout: str, partners: Sequence[str], **settings) -> Tuple[EditConfig, FittedPolicy]:
    """The checked configuration and the starting policy (nothing written): the policy's layout
    must be ``layout``. The source is recorded as an absolute path (a run resumed from another
    folder names the same tree)."""
    cfg = EditConfig(layout=layout, partners=tuple(partners), source=str(Path(source).absolute()), **settings)
    policy, policy_layout, _ = load_policy(source)
    if policy_layout != cfg.layout:
        raise EditConfigError(f"--from {source}: the tree was made for {policy_layout}, not {cfg.layout}")
    return cfg, policy


def edit(source: Union[str, Path], layout: str, partners: Sequence[str], client, out: Union[str, Path],
         llm_info: Optional[Dict[str, Any]] = None,
         progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None, **settings) -> Dict[str, Any]:
    """Run (or resume) an edit run; ``settings`` are :class:`EditConfig` fields."""
    cfg, policy = prepare(source, layout, partners, **settings)
    return Editor(cfg, client, Path(out), policy, llm_info).run(progress)


__all__ = ["EditError", "PolicyFileError", "EditConfigError", "EditConfig", "Editor", "edit", "prepare",
           "apply_edit", "parse_edit", "edit_schema", "schema_size", "policy_to_json", "policy_from_json",
           "parse_tree_file", "load_policy", "paths", "effective_roots", "tree_lines", "describe_edit", "simplify", "vocabularies"]
