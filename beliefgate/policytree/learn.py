"""The Co-pi-tree distillation loop: planner -> two-part tree -> coder -> sandbox -> rollouts -> summarizer.

One iteration ``k``:

1. **planner** (``prompts/planner_*.txt``): the task rules, the seat's skills, two example
   scenes and, once a tree is accepted, the memory pool of accepted-tree summaries (best
   first), the accepted tree ``T*`` and the summarizer's one-branch reflection. It answers a
   two-part textual tree (partner-inference tree, self-action tree).
2. **coder** (``prompts/coder_*.txt``): the tree -> ``PredictTeammateThenPlan(state)``. The code
   must load in the :class:`~beliefgate.policytree.sandbox.Sandbox` and answer legal skills on
   a battery of probe states (every holding pair x pot situation); otherwise the **repair**
   prompt gets the code and the error, at most ``repairs`` times.
3. **rollouts**: ``rollouts`` seeded episodes (seeds ``seed .. seed+rollouts-1``, the same every
   iteration) with the source partner, the tree in seat ``seat``; mean reward.
4. **accept or revert**: the first evaluated tree is accepted; later ones only when their mean
   reward is strictly higher than the best accepted one. Otherwise the accepted tree stays.
5. **summarizer** (accepted trees only, as in the paper): a JSON reflection validated with
   pydantic (summary with final score; target branch, scope, before/after, unchanged
   assumptions, expected effect). Its summary joins the memory pool; its reflection steers
   the next planner call.

If the first iteration yields no usable tree (unreadable planner answer, or code still failing
after the repairs) the layout's seed tree is evaluated in its place (counted as
``seed_fallbacks``). A later unusable iteration is simply rejected. An unreachable server makes
an unusable answer (counted), never a crash.

Everything goes into the run dir (``config.json``, ``llm_calls.jsonl`` with every call's messages
and reply, ``iter_KK/`` with the tree, each code attempt and its error, rollouts, reflection and
status, ``state.json``, ``best.py``/``best_tree.txt``/``best.json``, ``summary.json``). Running again
with the same directory resumes after the last finished iteration; NQ counts every call of the
run, across resumptions.

All LLM traffic goes through :class:`TreeLLM` (one method, :meth:`TreeLLM.ask`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Callable, ClassVar, Dict, List, Literal, Optional, Sequence, Tuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

import beliefgate
from beliefgate.envs.domain import domain_for_layout
from beliefgate.errors import InputError
from beliefgate.fileio import atomic_write
from beliefgate.provenance import git_commit
from beliefgate.validation import CheckedModel, describe
from beliefgate.planners.errors import ModelOutputError
from beliefgate.policytree.sandbox import Sandbox, SandboxError
from beliefgate.policytree.seeds import seed_code, tree_text

LEARN_VERSION = 1
ENTRY = "PredictTeammateThenPlan"
PARTNER_HEADER = "**Partner Inference Tree**"
SELF_HEADER = "**Self Action Selection Tree**"

# No maxLength: llama.cpp turns one into a grammar rule with that many repetitions (a long
# string bound makes the grammar huge); answers are bounded by the client's max_tokens instead.
PLANNER_SCHEMA = {"type": "object", "properties": {"partner_tree": {"type": "string"}, "self_tree": {"type": "string"}},
                  "required": ["partner_tree", "self_tree"]}
CODER_SCHEMA = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
_STR = {"type": "string"}
SUMMARIZER_SCHEMA = {
    "type": "object",
    "properties": {
        "tree_summary": {"type": "object", "properties": {"summary": _STR, "final_score": {"type": "number"}},
                         "required": ["summary", "final_score"]},
        "reflection": {"type": "object", "properties": {
            "target_branch": _STR, "scope": {"type": "string", "enum": ["local_single_branch"]},
            "before": _STR, "after": {"type": "array", "items": _STR, "minItems": 1, "maxItems": 4},
            "unchanged": {"type": "array", "items": _STR, "maxItems": 4}, "expected_effect": _STR},
            "required": ["target_branch", "scope", "before", "after", "unchanged", "expected_effect"]},
    },
    "required": ["tree_summary", "reflection"],
}


def _put(path: Path, text: str) -> None:
    atomic_write(path, text.encode())


class LearnConfigError(InputError):
    """A learning configuration or run directory that cannot be used."""


#: the flat-state schema (``Domain.flat_state_schema``) the prompts (``prompts/kitchen.txt``, the
#: example scenes) and the tree edits are written for: classic Overcooked's
CLASSIC_SCHEMA = "overcooked/1"
#: OvercookedV2's flat-state schema (distillation has features for it as well)
V2_SCHEMA = "overcooked_v2/1"


def two_seat_classic_layout(layout: str, what: str, schemas: Tuple[str, ...] = (CLASSIC_SCHEMA,)):
    """``(domain, canonical name)`` of a layout a distilled tree can play: two seats and a flat state
    of ``schemas`` (ValueError, for a validator, naming the layout otherwise)."""
    domain = domain_for_layout(layout)
    name = domain.resolve_layout(layout)
    if domain.players(name) != 2:
        raise ValueError(f"layout {name!r} seats {domain.players(name)} players; a policy tree plays two")
    check_classic_schema(domain, name, what, schemas)
    return domain, name


def check_classic_schema(domain, layout: str, what: str, schemas: Tuple[str, ...] = (CLASSIC_SCHEMA,)) -> None:
    """Refuse (ValueError, for a validator) a layout whose flat state is not of ``schemas`` (the classic one)."""
    schema = domain.flat_state_schema
    if schema not in schemas:
        raise ValueError(f"layout {layout!r}: {what} reads the flat state {' or '.join(schemas)}; this layout's "
                         f"is {schema or 'undeclared'} (play the layout's seed tree, policy-tree:seed:{layout}, "
                         f"or a tree file written for it)")


# ------------------------------------------------------------------------------ configuration
class PoolConfig:
    """For a config that plays a pool of ``partners`` (distillation, edits): what :class:`Learner`
    reads as the run's partner and seat (their rollout plans name every partner and seat)."""

    partners: Tuple[str, ...]

    @property
    def partner(self) -> str:
        return self.partners[0]

    @property
    def seat(self) -> int:
        return 0


class LearnConfig(CheckedModel):
    """Everything that determines a learning run (saved as ``config.json``; frozen).

    Built as ``LearnConfig(layout, partner, **settings)`` or with keywords only. ``layout`` is
    resolved to its canonical name and ``partner`` must be one of its domain's partners (an
    unknown name is that domain's ``LookupFailure``); a bad value is a :class:`LearnConfigError`
    in one line naming the field and the value.
    """

    error_type = LearnConfigError
    model_config = ConfigDict(frozen=True, extra="forbid")

    layout: str
    partner: str
    seat: int = Field(0, ge=0, le=1)
    iterations: int = Field(10, ge=1)
    rollouts: int = Field(5, ge=1)
    horizon: int = Field(400, ge=1)
    seed: int = 0
    repairs: int = Field(2, ge=0, le=5)
    start: Literal["llm", "seed"] = "llm"
    cpu_ms: float = 50
    memory_mb: int = 256
    max_prompt_chars: int = Field(12_000, ge=2000)
    trace_entries: int = Field(40, ge=1)

    #: fields that may differ when a run is resumed (more iterations, a bigger prompt budget)
    RESUMABLE: ClassVar[Tuple[str, ...]] = ("iterations", "max_prompt_chars")

    def __init__(self, /, *args: Any, **data: Any):
        # the layout and the partner may come positionally, as when this was a dataclass
        if len(args) > 2:
            raise TypeError(f"LearnConfig takes at most 2 positional arguments (layout, partner), got {len(args)}")
        for name, value in zip(("layout", "partner"), args):
            if name in data:
                raise TypeError(f"LearnConfig got {name} both positionally and as a keyword")
            data[name] = value
        super().__init__(**data)

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # as CheckedModel's: not a custom init

    @field_validator("layout")
    @classmethod
    def _resolve_layout(cls, layout: str) -> str:
        domain = domain_for_layout(layout)
        name = domain.resolve_layout(layout)
        check_classic_schema(domain, name, "the LLM loop (its prompts describe the classic kitchen)")
        return name

    @model_validator(mode="after")
    def _known_partner(self) -> "LearnConfig":
        domain_for_layout(self.layout).check_partners([self.partner])
        return self

    def to_dict(self) -> Dict[str, Any]:
        return self.model_dump()


# ------------------------------------------------------------------------------ the LLM boundary
class TreeLLM:
    """The one place the loop talks to a model: every call is counted and saved.

    ``model`` is a :class:`~beliefgate.planners.model.ChatModel` (e.g.
    :class:`~beliefgate.planners.client.LLMClient`); calls go through
    :func:`beliefgate.planners.model.ask`, which never raises for a model or server fault.
    Every call appends one JSON line to ``log_path`` (iteration, role, messages, reply, the
    fallback reason when there was no reply, latency), so NQ is the number of lines, across
    resumed sessions.
    """

    def __init__(self, model, log_path: Path):
        self.model = model
        self.log_path = Path(log_path)
        self.session_queries = 0
        self.session_failures = 0

    def ask(self, role: str, messages: List[Dict[str, str]], schema: Dict[str, Any], iteration: int) -> Optional[str]:
        """The model's reply, or None when the server gave none (the reason is logged and counted)."""
        from beliefgate.planners.model import ask

        started = time.perf_counter()
        asked = ask(self.model, messages, str, role=f"policytree_{role}", output_schema=schema)
        error = None
        if asked.fallback is not None:
            error = f"{asked.fallback.reason}: {asked.fallback.detail}"
            self.session_failures += 1
        self.session_queries += 1
        record = {"iteration": iteration, "role": role, "latency_s": round(time.perf_counter() - started, 4),
                  "messages": messages, "reply": asked.value, "error": error}
        with self.log_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        return asked.value

    def queries(self) -> int:
        """NQ so far: every call this run has made (all sessions)."""
        if not self.log_path.exists():
            return 0
        with self.log_path.open() as fh:
            return sum(1 for line in fh if line.strip())


# ------------------------------------------------------------------------------ prompts
@lru_cache(maxsize=None)
def _template(name: str) -> Template:
    try:
        return Template(resources.files("beliefgate.policytree").joinpath("prompts", f"{name}.txt").read_text())
    except FileNotFoundError:
        raise LearnConfigError(f"no policy-tree prompt template named {name!r}") from None


def render(name: str, **fields: Any) -> str:
    """Render ``prompts/NAME.txt``; a missing field is a :class:`LearnConfigError`."""
    try:
        return _template(name).substitute(**{k: str(v) for k, v in fields.items()})
    except KeyError as exc:
        raise LearnConfigError(f"template {name!r} needs field {exc.args[0]!r}") from None


def system_prompt(role: str) -> str:
    """The shared kitchen rules, then the role's own instructions (``prompts/ROLE_system.txt``).

    Every role's system message starts with the same text, so a server that reuses a cached
    prompt prefix (llama.cpp does) evaluates it once for all roles.
    """
    return render("kitchen") + "\n" + render(f"{role}_system")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 20:
        return ""
    return text[: limit - 16].rstrip() + "\n[... cut ...]"


def fit(budget: int, fixed: int, parts: Dict[str, str]) -> Dict[str, str]:
    """Clip the variable ``parts`` so that ``fixed + sum(len(parts))`` stays within ``budget``.

    Short parts keep their text; the room left is shared evenly among the longer ones.
    """
    room = max(budget - fixed, 0)
    out = dict(parts)
    pending = sorted(out, key=lambda k: len(out[k]))
    while pending:
        share = room // len(pending)
        key = pending.pop(0)
        out[key] = _clip(out[key], share)
        room -= len(out[key])
    return out


# ------------------------------------------------------------------------------ parsing
@dataclass(frozen=True)
class TreeText:
    """A two-part textual tree."""

    partner: str
    own: str

    def render(self, layout: str) -> str:
        return (f"### FunctionDescription:\nName: {ENTRY}\nLayout: {layout}\n"
                f"Outputs: (inferred_teammate_current_skill, self_action_now)\n\n"
                f"{PARTNER_HEADER}\n{self.partner.strip()}\n\n{SELF_HEADER}\n{self.own.strip()}\n")


def _json_object(reply: str) -> Optional[Dict[str, Any]]:
    text = reply.strip()
    fence = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    if fence:
        text = fence.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start:end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def split_tree_text(text: str) -> Optional[TreeText]:
    """The two parts of a tree written with the two section headers (None if a header is missing)."""
    pat = re.compile(r"\**\s*partner[- ]inference(?:[- ]policy)?[- ]tree\s*\**", re.I)
    own = re.compile(r"\**\s*self[- ]action(?:[- ]selection)?(?:[- ]policy)?[- ]tree\s*\**", re.I)
    a, b = pat.search(text), own.search(text)
    if a is None or b is None or b.start() < a.end():
        return None
    return TreeText(text[a.end():b.start()].strip(" \n#"), text[b.end():].strip(" \n#"))


def parse_tree(reply: Optional[str]) -> TreeText:
    """The planner's two-part tree; :class:`ModelOutputError` when it is unusable."""
    if not reply or not reply.strip():
        raise ModelOutputError("the planner gave no answer", reply or "")
    obj = _json_object(reply)
    tree = None
    if obj is not None:
        partner, own = obj.get("partner_tree"), obj.get("self_tree")
        if isinstance(partner, str) and isinstance(own, str):
            tree = TreeText(partner, own)
    if tree is None:
        tree = split_tree_text(reply)
    if tree is None:
        raise ModelOutputError("the planner's answer has no partner tree and self tree", reply)
    for name, part in (("partner tree", tree.partner), ("self tree", tree.own)):
        if not part.strip():
            raise ModelOutputError(f"the {name} is empty", reply)
    return tree


def parse_code(reply: Optional[str]) -> str:
    """The coder's Python source; :class:`ModelOutputError` when there is none."""
    if not reply or not reply.strip():
        raise ModelOutputError("the coder gave no answer", reply or "")
    obj = _json_object(reply)
    if obj is not None and isinstance(obj.get("code"), str) and obj["code"].strip():
        code = obj["code"]
    else:
        fence = re.search(r"```(?:python)?\s*\n(.*?)```", reply, re.S)
        code = fence.group(1) if fence else reply
    if f"def {ENTRY}" not in code:
        raise ModelOutputError(f"the answer holds no 'def {ENTRY}(state)'", reply)
    return code.strip() + "\n"


def with_docstring(tree: str, code: str) -> str:
    """Tree file text: the textual tree as the module docstring, then the code."""
    escaped = tree.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{escaped}\n"""\n\n{code}'


class TreeSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str = Field(min_length=1, max_length=2000)
    final_score: float


class BranchReflection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_branch: str = Field(min_length=1, max_length=1000)
    scope: Literal["local_single_branch"]
    before: str = Field(min_length=1, max_length=1500)
    after: List[str] = Field(min_length=1, max_length=6)
    unchanged: List[str] = Field(max_length=8)
    expected_effect: str = Field(min_length=1, max_length=1500)


class Reflection(BaseModel):
    """The summarizer's JSON answer."""

    model_config = ConfigDict(extra="forbid")
    tree_summary: TreeSummary
    reflection: BranchReflection


def parse_reflection(reply: Optional[str], score: float) -> Tuple[Reflection, bool]:
    """Validated reflection and whether its ``final_score`` had to be corrected to ``score``."""
    obj = _json_object(reply or "")
    if obj is None:
        raise ModelOutputError("the summarizer's answer is not a JSON object", reply or "")
    try:
        parsed = Reflection.model_validate(obj)
    except ValidationError as exc:
        raise ModelOutputError(f"the summarizer's JSON is invalid: {describe(exc, 'reflection').message}",
                               reply or "") from None
    corrected = abs(parsed.tree_summary.final_score - score) > 1e-6
    if corrected:
        parsed = parsed.model_copy(update={"tree_summary": parsed.tree_summary.model_copy(update={"final_score": score})})
    return parsed, corrected


def reflection_text(r: Reflection) -> str:
    x = r.reflection
    lines = [f"Target branch: {x.target_branch}", f"Now: {x.before}", "Change to:"]
    lines += [f"- {a}" for a in x.after]
    if x.unchanged:
        lines.append("Keep unchanged:")
        lines += [f"- {u}" for u in x.unchanged]
    lines.append(f"Expected effect: {x.expected_effect}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ checking and rollouts
def check_tree(code: str, layout: str, seat: int, cpu_ms: float = 50, memory_mb: int = 256) -> Optional[str]:
    """None when the code loads and answers legal skills on every probe state, else the error text."""
    domain = domain_for_layout(layout)
    try:
        with Sandbox(code, ENTRY, cpu_ms=cpu_ms, memory_mb=memory_mb, episode_cpu_ms=max(5000, 100 * cpu_ms),
                     self_skills=domain.seat_skills(layout, seat),
                     partner_skills=domain.seat_skills(layout, 1 - seat)) as box:
            for state in domain.probe_states(layout, seat):
                try:
                    box.call(state)
                except SandboxError as exc:
                    shown = {k: state[k] for k in ("holdings", "pot", "any_soup_ready", "any_pot_not_full")}
                    return f"{exc} (on the state {json.dumps(shown)})"
    except SandboxError as exc:
        return str(exc)
    return None


@dataclass
class RolloutResult:
    rewards: List[float]
    episodes: List[Dict[str, Any]]
    trace: str

    @property
    def mean(self) -> float:
        return sum(self.rewards) / len(self.rewards)


def build_trace(traj, seat: int, max_entries: int) -> str:
    """Scenes of one episode where the tree's choice changed or could not be done, in words."""
    domain = domain_for_layout(traj.header.layout)
    lines = []
    last = None
    hits = total = 0
    for row in traj.steps:
        info = row.info[seat]
        pred, choice, ok = info.get("partner_map"), info.get("tree_skill"), info.get("executable")
        truth = row.skills[1 - seat]
        if pred is not None and truth is not None:
            total += 1
            hits += pred == truth
        key = (choice, ok, info.get("tree_error"))
        if key == last:
            continue
        last = key
        if info.get("tree_error"):
            what = f"the tree failed ({info['tree_error']})"
        else:
            what = f"tree: teammate -> {pred} (actually {truth or 'idle'}), self -> {choice}"
            if ok is False:
                what += " (cannot be done now: self waits)"
        lines.append(f"t={row.t}: {domain.flat_state_text(domain.flat_state(row.state, seat))}. {what}")
    summary = traj.final.summary if traj.final is not None else {}
    head = (f"{summary.get('deliveries', 0)} soups delivered in {len(traj.steps)} steps; "
            f"teammate predicted right in {hits}/{total} steps")
    if len(lines) > max_entries:
        keep = max_entries // 2
        lines = lines[:keep] + [f"... {len(lines) - 2 * keep} scenes left out ..."] + lines[-keep:]
    return head + "\n" + "\n".join(lines)


def run_rollouts(tree_path: Path, cfg: LearnConfig,
                 plan: Optional[Sequence[Tuple[str, int, int]]] = None,
                 env_options: Optional[Dict[str, Any]] = None, bayes: bool = False) -> RolloutResult:
    """Seeded episodes of the tree file (no LLM): by default ``cfg.rollouts`` episodes with the source
    partner in seat ``cfg.seat``; ``plan`` lists ``(partner, seat, seed)`` per episode instead;
    ``env_options``: the episodes' environment options (a distillation's); ``bayes``: the tree plays
    with the belief gate (``policy-tree:PATH:bayes``)."""
    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes

    planned = plan is not None
    if plan is None:
        plan = [(cfg.partner, cfg.seat, cfg.seed + i) for i in range(cfg.rollouts)]
    rewards, episodes, trace = [], [], ""
    try:
        for i, (partner, seat, seed) in enumerate(plan):
            result = run_episode(cfg.layout, f"policy-tree:{tree_path}{':bayes' if bayes else ''}", partner, seed=seed,
                                 horizon=cfg.horizon, seat=seat, env_options=env_options or None)
            last = result.trajectory.steps[-1].info[seat] if result.trajectory.steps else {}
            rewards.append(float(result.summary["reward"]))
            episodes.append({"seed": seed, "reward": result.summary["reward"],
                             "deliveries": result.summary["deliveries"],
                             "tree_errors": int(last.get("tree_errors", 0)),
                             "not_executable": int(last.get("not_executable", 0)),
                             **({"partner": partner, "seat": seat} if planned else {})})
            if i == 0:
                trace = build_trace(result.trajectory, seat, cfg.trace_entries)
    finally:
        close_sandboxes()
    return RolloutResult(rewards, episodes, trace)


# ------------------------------------------------------------------------------ the loop
@dataclass
class LoopState:
    """What a resumed run needs (``state.json``)."""

    completed: int = 0
    best_iteration: Optional[int] = None
    best_reward: Optional[float] = None
    best_tree: Optional[str] = None
    memory: List[Dict[str, Any]] = field(default_factory=list)
    reflection: Optional[str] = None
    last_rejected: Optional[str] = None
    history: List[Dict[str, Any]] = field(default_factory=list)
    counts: Dict[str, int] = field(default_factory=lambda: {
        "planner_unusable": 0, "coder_unusable": 0, "repairs": 0, "seed_fallbacks": 0,
        "summarizer_unusable": 0, "score_corrected": 0, "rejected": 0, "accepted": 0})


class Learner:
    """Runs (or resumes) one learning run in ``run_dir``.

    The candidate of an iteration comes from :meth:`_candidate` (here: the LLM planner and coder);
    :class:`~beliefgate.policytree.distil.Distiller` overrides it (a CART fitted to a teacher's
    labels) and keeps everything else: rollouts, accept/revert, memory pool, run dir, resumption.
    """

    #: the run dir's kind (``config.json``'s ``kind``; LLM runs made before it existed have none)
    KIND = "llm"
    #: the counters ``state.json`` keeps
    COUNTS: Tuple[str, ...] = tuple(LoopState().counts)
    #: the keys of each iteration's status that go into the history
    HISTORY_KEYS: Tuple[str, ...] = ("iteration", "source", "reward", "accepted", "reason")

    def __init__(self, cfg: LearnConfig, client, run_dir: Path, llm_info: Optional[Dict[str, Any]] = None):
        self.cfg = cfg
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.llm = TreeLLM(client, self.dir / "llm_calls.jsonl")
        self.llm_info = llm_info or {}

        self.seat_note = domain_for_layout(cfg.layout).seat_note(cfg.layout, getattr(cfg, "seat", 0))
        self.state = self._load_or_init()

    # ---------------------------------------------------------------- persistence
    def _load_or_init(self) -> LoopState:
        """Read and check everything a resumed run carries (config, state, the LLM call log) before
        anything is written: a damaged run directory is one error naming the file, and no file changes."""
        config_path = self.dir / "config.json"
        mine = {**self.cfg.to_dict(), "learn_version": LEARN_VERSION}
        if config_path.exists():
            saved = _read_json_object(config_path)
            kind = saved.get("kind", "llm")
            if kind != self.KIND:
                raise LearnConfigError(f"run dir {self.dir} holds a {kind!r} run, not a {self.KIND!r} run; "
                                       f"use a new --out")
            resumable = type(self.cfg).RESUMABLE
            diff = [k for k in mine if k not in resumable and saved.get(k) != mine[k]]
            if diff:
                raise LearnConfigError(f"run dir {self.dir} was made with other settings ({', '.join(diff)}); "
                                       f"use a new --out")
        state_path = self.dir / "state.json"
        state = _read_state(state_path, self.COUNTS) if state_path.exists() else self.new_state()
        _count_failed(self.llm.log_path)  # a torn or foreign line fails now, not after the iterations
        extra = {"kind": self.KIND} if self.KIND != "llm" else {}
        _put(config_path, json.dumps({**mine, **extra, "beliefgate": beliefgate.__version__, "llm": self.llm_info},
                                     indent=2))
        return state

    def new_state(self) -> LoopState:
        return LoopState(counts={k: 0 for k in self.COUNTS})

    def _save_state(self) -> None:
        _put(self.dir / "state.json", json.dumps(asdict(self.state), indent=2))

    def _write(self, it_dir: Path, name: str, text: str) -> Path:
        path = it_dir / name
        _put(path, text)
        return path

    # ---------------------------------------------------------------- prompts
    def planner_messages(self) -> List[Dict[str, str]]:
        st = self.state
        memory = last = refl = ""
        if st.memory:
            ranked = sorted(st.memory, key=lambda m: -m["score"])[:5]
            memory = "\n".join(f"- iteration {m['iteration']}, score {m['score']:g}: {m['summary']}" for m in ranked)
        if st.best_tree is not None:
            last = st.best_tree
        if st.reflection:
            refl = st.reflection
        if st.last_rejected:
            refl = (refl + "\n" if refl else "") + st.last_rejected
        system = system_prompt("planner")
        fixed = len(system) + len(render("planner_user", layout=self.cfg.layout, seat_note=self.seat_note,
                                          memory="", last_tree="", reflection=""))
        fixed += 200 * sum(bool(x) for x in (memory, last, refl))  # the block headers
        parts = fit(self.cfg.max_prompt_chars, fixed, {"memory": memory, "last": last, "refl": refl})
        user = render("planner_user", layout=self.cfg.layout, seat_note=self.seat_note,
                      memory=render("memory_block", entries=parts["memory"]) if parts["memory"] else "",
                      last_tree=render("last_tree_block", score=f"{st.best_reward:g}", tree=parts["last"])
                      if parts["last"] else "",
                      reflection=render("reflection_block", reflection=parts["refl"]) if parts["refl"] else "")
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _coder_messages(self, tree: str) -> List[Dict[str, str]]:
        system = system_prompt("coder")
        fixed = len(system) + len(render("coder_user", tree=""))
        tree = fit(self.cfg.max_prompt_chars, fixed, {"tree": tree})["tree"]
        return [{"role": "system", "content": system}, {"role": "user", "content": render("coder_user", tree=tree)}]

    def _repair_messages(self, code: str, error: str) -> List[Dict[str, str]]:
        system = system_prompt("coder")
        fixed = len(system) + len(render("repair_user", code="", error=""))
        parts = fit(self.cfg.max_prompt_chars, fixed, {"code": code, "error": error[:600]})
        return [{"role": "system", "content": system},
                {"role": "user", "content": render("repair_user", code=parts["code"], error=parts["error"])}]

    def _summarizer_messages(self, tree: str, trace: str, score: float) -> List[Dict[str, str]]:
        system = system_prompt("summarizer")
        fixed = len(system) + len(render("summarizer_user", tree="", trace="", score=f"{score:g}"))
        parts = fit(self.cfg.max_prompt_chars, fixed, {"tree": tree, "trace": trace})
        return [{"role": "system", "content": system},
                {"role": "user", "content": render("summarizer_user", tree=parts["tree"], trace=parts["trace"],
                                                   score=f"{score:g}")}]

    # ---------------------------------------------------------------- steps
    def _code_for(self, tree: str, k: int, it_dir: Path, status: Dict[str, Any]) -> Optional[str]:
        """Coder + up to ``repairs`` repairs; the checked tree-file text, or None."""
        reply = self.llm.ask("coder", self._coder_messages(tree), CODER_SCHEMA, k)
        attempts = status.setdefault("code_attempts", [])
        for attempt in range(self.cfg.repairs + 1):
            code = ""
            try:
                code = with_docstring(tree, parse_code(reply))
                error = check_tree(code, self.cfg.layout, self.cfg.seat, self.cfg.cpu_ms, self.cfg.memory_mb)
            except ModelOutputError as exc:
                error = str(exc)
            name = f"code_attempt_{attempt}.py"
            self._write(it_dir, name, code or (reply or ""))
            attempts.append({"file": name, "error": error})
            if error is None:
                return code
            if attempt == self.cfg.repairs:
                break
            self.state.counts["repairs"] += 1
            reply = self.llm.ask("repair", self._repair_messages(code or (reply or ""), error), CODER_SCHEMA, k)
        self.state.counts["coder_unusable"] += 1
        return None

    def _candidate(self, k: int, it_dir: Path, status: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
        """(source, tree text, tree-file text) of this iteration's candidate, or None."""
        if k == 0:
            code = seed_code(self.cfg.layout)
            return "seed", tree_text(code), code
        tree_obj = None
        try:
            tree_obj = parse_tree(self.llm.ask("planner", self.planner_messages(), PLANNER_SCHEMA, k))
        except ModelOutputError as exc:
            self.state.counts["planner_unusable"] += 1
            status["planner_error"] = str(exc)
        if tree_obj is not None:
            tree = tree_obj.render(self.cfg.layout)
            self._write(it_dir, "tree.txt", tree)
            code = self._code_for(tree, k, it_dir, status)
            if code is not None:
                return "llm", tree, code
        if self.state.best_iteration is None:
            self.state.counts["seed_fallbacks"] += 1
            status["fallback"] = "seed tree (no usable tree from the model yet)"
            code = seed_code(self.cfg.layout)
            return "seed", tree_text(code), code
        return None

    def _summarize(self, k: int, tree: str, result: RolloutResult, it_dir: Path, status: Dict[str, Any]) -> None:
        score = result.mean
        reply = self.llm.ask("summarizer", self._summarizer_messages(tree, result.trace, score), SUMMARIZER_SCHEMA, k)
        try:
            parsed, corrected = parse_reflection(reply, score)
        except ModelOutputError as exc:
            self.state.counts["summarizer_unusable"] += 1
            status["summarizer_error"] = str(exc)
            self._write(it_dir, "reflection.json", json.dumps({"reply": reply, "error": str(exc)}, indent=2))
            summary = f"accepted tree of iteration {k} ({'seed' if status['source'] == 'seed' else 'model'})"
            self.state.memory.append({"iteration": k, "score": score, "summary": summary, "source": "fallback"})
            self.state.reflection = None
            return
        if corrected:
            self.state.counts["score_corrected"] += 1
        self._write(it_dir, "reflection.json", json.dumps({"reply": reply, "parsed": parsed.model_dump(),
                                                           "score_corrected": corrected}, indent=2))
        self.state.memory.append({"iteration": k, "score": score, "summary": parsed.tree_summary.summary,
                                  "source": "summarizer"})
        self.state.reflection = reflection_text(parsed)

    def iteration(self, k: int) -> Dict[str, Any]:
        """Run iteration ``k`` (0 = the seed tree, only with ``start='seed'``) and record it."""
        it_dir = self.dir / f"iter_{k:02d}"
        it_dir.mkdir(exist_ok=True)
        status: Dict[str, Any] = {"iteration": k, "queries_before": self.llm.queries()}
        candidate = self._candidate(k, it_dir, status)
        if candidate is None:
            status.update(source=None, accepted=False, reason="no usable tree this iteration")
            self.state.counts["rejected"] += 1
        else:
            source, tree, code = candidate
            status["source"] = source
            self._write(it_dir, "tree.txt", tree)
            path = self._write(it_dir, "code.py", code)
            result = self._rollouts(path)
            self._write(it_dir, "rollouts.json", json.dumps({"rewards": result.rewards, "mean": result.mean,
                                                             "episodes": result.episodes, "trace": result.trace},
                                                            indent=2))
            status["reward"] = result.mean
            best = self.state.best_reward
            accepted = best is None or result.mean > best
            status["accepted"] = accepted
            status["reason"] = ("first tree" if best is None else
                                f"mean reward {result.mean:g} {'>' if accepted else '<='} best {best:g}")
            if accepted:
                self.state.counts["accepted"] += 1
                self.state.best_iteration, self.state.best_reward, self.state.best_tree = k, result.mean, tree
                self.state.last_rejected = None
                _put(self.dir / "best.py", code)
                _put(self.dir / "best_tree.txt", tree)
                _put(self.dir / "best.json", json.dumps({"iteration": k, "source": source,
                                                                 "reward": result.mean, "rewards": result.rewards},
                                                                indent=2))
                self._summarize(k, tree, result, it_dir, status)
            else:
                self.state.counts["rejected"] += 1
                self.state.last_rejected = (f"Your last proposal scored {result.mean:g}, not better than "
                                            f"{best:g}, and was discarded; try a different local change.")
        status["queries_after"] = self.llm.queries()
        self._write(it_dir, "status.json", json.dumps(status, indent=2))
        self.state.history.append({k2: status.get(k2) for k2 in self.HISTORY_KEYS})
        self.state.completed = k
        self._save_state()
        return status

    def _rollouts(self, path: Path) -> "RolloutResult":
        """The candidate's reward episodes (the accept/revert evidence)."""
        return run_rollouts(path, self.cfg)

    def run(self, progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        """Run the remaining iterations and write ``summary.json``; returns it."""
        first = 0 if self.cfg.start == "seed" else 1
        done = self.state.completed if self.state.history else first - 1
        for k in range(max(done + 1, first), self.cfg.iterations + 1):
            status = self.iteration(k)
            if progress is not None:
                progress(k, self.cfg.iterations, status)
        return self.write_summary()

    def write_summary(self) -> Dict[str, Any]:
        model = self.llm.model
        ledger = model.usage_summary() if hasattr(model, "usage_summary") else {}
        nq = self.llm.queries()
        summary = {
            "config": self.cfg.to_dict(), "commit": git_commit(), "llm": self.llm_info, "nq": nq,
            "nq_failed": _count_failed(self.llm.log_path), "ledger_this_session": ledger,
            "best_iteration": self.state.best_iteration, "best_reward": self.state.best_reward,
            "best": str(self.dir / "best.py") if self.state.best_iteration is not None else None,
            "history": self.state.history, "counts": self.state.counts,
        }
        _put(self.dir / "summary.json", json.dumps(summary, indent=2))
        return summary


def _damaged(path: Path, what: str) -> LearnConfigError:
    return LearnConfigError(f"run dir file {path} {what}; repair or remove it (or use a new --out)")


def _read_json_object(path: Path) -> Dict[str, Any]:
    from beliefgate.fileio import DataSyntaxError, parse_data, read_text

    text = read_text(path, lambda message: LearnConfigError(f"{message}; repair or remove it (or use a new --out)"),
                     "run dir file")
    try:
        data = parse_data(text, "json")
    except DataSyntaxError as exc:
        raise _damaged(path, f"is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _damaged(path, f"holds a JSON {type(data).__name__}, not an object")
    return data


def _read_state(path: Path, known_counts: Optional[Sequence[str]] = None) -> LoopState:
    """``state.json``: an object with :class:`LoopState`'s fields, each strictly of its type (no
    ``"3"`` or ``true`` for a count), counts non-negative and only the counters a run keeps."""
    from typing import get_type_hints

    from pydantic import ConfigDict, TypeAdapter, ValidationError

    data = _read_json_object(path)
    unknown = sorted(set(data) - {f.name for f in fields(LoopState)})
    if unknown:
        raise _damaged(path, f"has fields a learning run does not write ({', '.join(unknown)})")
    hints = get_type_hints(LoopState)
    for name, value in data.items():
        try:
            TypeAdapter(hints[name], config=ConfigDict(strict=True)).validate_python(value)
        except ValidationError as exc:
            raise _damaged(path, f"has a bad {name}{'.' if exc.errors()[0]['loc'] else ''}"
                                 f"{describe(exc, name).message}") from None
    state = LoopState(**data)
    known = {k: 0 for k in known_counts} if known_counts is not None else LoopState().counts
    strange = sorted(set(state.counts) - set(known))
    if strange:
        raise _damaged(path, f"has counters a learning run does not keep ({', '.join(strange)})")
    state.counts = {**known, **state.counts}
    negative = [k for k, v in (("completed", state.completed), *state.counts.items()) if v < 0]
    if negative:
        raise _damaged(path, f"has a negative {negative[0]}")
    return state


def _count_failed(log_path: Path) -> int:
    """LLM calls without an answer in the run's call log (every line must be a JSON object)."""
    if not log_path.exists():
        return 0
    failed = 0
    with log_path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise _damaged(log_path, f"line {number} is not JSON (a write cut short?)") from None
            if not isinstance(record, dict):
                raise _damaged(log_path, f"line {number} is not a JSON object")
            failed += bool(record.get("error"))
    return failed


def learn(layout: str, partner: str, client, out: str | Path, llm_info: Optional[Dict[str, Any]] = None,
          progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None, **settings) -> Dict[str, Any]:
    """Run (or resume) a learning run; ``settings`` are :class:`LearnConfig` fields."""
    cfg = LearnConfig(layout=layout, partner=partner, **settings)
    return Learner(cfg, client, Path(out), llm_info).run(progress)


__all__ = ["LearnConfig", "Learner", "TreeLLM", "learn", "parse_tree", "parse_code", "parse_reflection",
           "check_tree", "Reflection", "TreeText", "LearnConfigError"]
