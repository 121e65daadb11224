"""Evaluation grids: agents x layouts x partners x seeds x seats, as a validated file.

A grid file (YAML or JSON) names what to play; :func:`load_grid` parses it into a
:class:`GridSpec` and :func:`resolve_grid` checks every name (layouts, agents,
partners, the LLM settings) *before any episode runs*, then expands the grid
into :class:`EpisodeSpec` objects, one per episode::

    name: small
    agents: [bayes-belief:full, bayes-belief:no_replan, periodic-10]
    layouts: [cramped_room, coordination_ring]
    partners:
      - onion-sourcer
      - plater
      - {name: "bc", group: human-proxy, optional: true}   # skipped when no BC model can be loaded
    seeds: {start: 0, count: 5}        # or a list: [0, 1, 2]
    seats: [0, 1]                      # ego as player 0 and as player 1
    horizon: 400
    llm: {base_url: "http://127.0.0.1:8080/v1", model: smollm2}   # optional
    gate: {cooldown: 10, tau_obs: 0.3}   # optional GateParams overrides for every ego agent

A partner (or agent) may also be the path of a partner file (``.yaml``/``.yml``/``.json``,
relative to the working directory; Overcooked's format: :mod:`beliefgate.envs.overcooked.partners`): the file
is read and validated, and its switch windows checked against ``horizon``, before any
episode runs. Its ``group`` field, when set, is its report group.

On a layout with more than two players a partner entry names one partner per other player,
joined by ``+`` (``balanced+plater`` on ``cramped_room_3p``); an entry whose number of partners
does not fit a layout's players is skipped there, and the skip is listed.

``{layout}`` in an agent or partner name is replaced by the episode's layout
(``bc:{layout}``). A scripted partner restricted to some layouts
(``counter-passer``) is skipped on the others, and the skip is listed.
Every partner belongs to a *group* (the report's columns): by default its role
preference (``sourcing``, ``logistics`` or ``generalist`` for the scripted
population, from its preference weights; ``human-proxy`` for ``bc``; ``agents``
otherwise), or the ``group`` given in the file.

``gate`` (optional) sets :class:`~beliefgate.beliefs.gate.GateParams` fields of
every *ego* agent (partners keep theirs). The overrides are validated as a whole
``GateParams``; every agent of such a grid must run a gate (a ``bayes-belief``
condition other than ``no_belief``, ``periodic-N``, ...), else :class:`GridError`
before any episode. They are part of every episode's identity (its key and file
name), so runs with different gate settings never share an episode. A grid
without ``gate`` has exactly the episodes, keys and digest it had before the key
existed.
"""

from __future__ import annotations
from beliefgate.errors import InputError
from beliefgate.limits import MAX_HORIZON, MAX_PLAYERS, MAX_SEED_COUNT
from beliefgate.models.checks import are_names

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from beliefgate.agents.registry import uses_llm  # noqa: F401  (re-exported for grid users)
from beliefgate.envs.domain import (PartnerSpecError, UnknownLayoutError, UnknownPartnerError, domain_for_layout,
                                    partner_domain, resolve_layout)
from pydantic import ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from beliefgate.validation import CheckedModel

GRID_FORMAT = "beliefgate.grid/1"



class GridError(InputError):
    """A grid file that cannot be read, or names something that does not exist."""


class GridModel(CheckedModel):
    """Base of the grid file's models: a bad value is a :class:`GridError` listing every error."""

    error_type = GridError
    all_errors = True


def seed_list(text: str) -> List[int]:
    """The seeds of a command-line seed list: ``"0-19"``, ``"7"`` or ``"0-4,10,12-13"`` (ranges inclusive,
    in the order given). A part that is not a number or a range raises ``ValueError`` (``int``'s)."""
    out: List[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


class SeedRange(GridModel):
    """``count`` consecutive seeds starting at ``start``."""

    model_config = ConfigDict(extra="forbid")

    start: StrictInt = Field(0, ge=0)
    count: StrictInt = Field(ge=1, le=MAX_SEED_COUNT)


class PartnerEntry(GridModel):
    """A partner with options: its report group, and whether it may be skipped when unavailable."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    group: Optional[str] = Field(None, min_length=1)
    optional: StrictBool = False


class LLMConfig(GridModel):
    """How LLM-using agents reach their model (the API key comes from the environment, never the file)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str = Field(min_length=1)
    timeout_s: float = Field(30.0, gt=0)
    deadline_s: float = Field(60.0, gt=0)          # one call, all retries included
    budget_s: Optional[float] = Field(None, gt=0)  # LLM wall time per episode
    max_retries: int = Field(3, ge=0)
    cache_dir: Optional[str] = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {v!r}")
        return v


class GridSpec(GridModel):
    """The grid file. ``agents`` are the conditions compared; the rest is the matched design."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("grid", min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    description: str = ""
    agents: List[str] = Field(min_length=1)
    layouts: List[str] = Field(min_length=1)
    partners: List[Union[str, PartnerEntry]] = Field(min_length=1)
    # strict: a YAML ``true`` or ``"3"`` is refused, not read as 1 or 3
    seeds: Union[List[StrictInt], SeedRange]
    seats: List[StrictInt] = Field(min_length=1)
    horizon: StrictInt = Field(ge=1, le=MAX_HORIZON)
    llm: Optional[LLMConfig] = None
    gate: Optional[Dict[str, Any]] = None
    #: environment options per layout (``{layout: {option: value}}``: OvercookedV2's recipe sampling, view
    #: size...), checked by the layout's domain; they enter the episodes' keys only when given
    env_options: Optional[Dict[str, Dict[str, Any]]] = None

    @field_validator("gate", mode="before")
    @classmethod
    def _gate(cls, v):
        return None if v is None else normalise_gate(v)

    @field_validator("seats")
    @classmethod
    def _seats(cls, v: List[int]) -> List[int]:
        bad = [s for s in v if not 0 <= s < MAX_PLAYERS]
        if bad:
            raise ValueError(f"seats must be player slots in 0..{MAX_PLAYERS - 1} (the ego's seat), got {bad}")
        return _unique(v, "seats")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_shape(cls, v):
        if isinstance(v, dict):  # a range: its own errors, not the union's
            return SeedRange.from_data(v, "seeds {start, count}")  # a GridError: a ValueError to pydantic
        if not isinstance(v, (list, tuple, SeedRange)):
            raise ValueError(f"seeds must be a list of integers or {{start: S, count: N}}, got {v!r}")
        bad = [] if isinstance(v, SeedRange) else [s for s in v if isinstance(s, bool) or not isinstance(s, int)]
        if bad:
            raise ValueError(f"seeds must be integers, got {bad[0]!r}")
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v):
        if isinstance(v, list):
            if not v:
                raise ValueError("give at least one seed")
            if any(s < 0 for s in v):
                raise ValueError(f"seeds must be >= 0, got {v}")
            return _unique(v, "seeds")
        return v

    @field_validator("agents", "layouts")
    @classmethod
    def _names(cls, v: List[str], info) -> List[str]:
        if not are_names(v):
            raise ValueError(f"{info.field_name} must be non-empty names")
        if info.field_name == "layouts":
            from beliefgate.envs.domain import layout_key

            return _unique([n.strip() for n in v], "layouts", key=layout_key)
        return _unique([n.strip() for n in v], info.field_name)

    @model_validator(mode="after")
    def _partner_names(self) -> "GridSpec":
        from beliefgate.envs.domain import partner_key

        names = [p if isinstance(p, str) else p.name for p in self.partners]
        _unique(names, "partners", key=partner_key)
        return self

    @property
    def seed_list(self) -> List[int]:
        if isinstance(self.seeds, SeedRange):
            return list(range(self.seeds.start, self.seeds.start + self.seeds.count))
        return list(self.seeds)

    @property
    def partner_entries(self) -> List[PartnerEntry]:
        return [PartnerEntry(name=p) if isinstance(p, str) else p for p in self.partners]

    def canonical(self) -> Dict[str, Any]:
        """The grid as plain data with expanded seeds (what the run directory stores)."""
        data = self.model_dump(mode="json")
        data["seeds"] = self.seed_list
        data["partners"] = [e.model_dump(mode="json") for e in self.partner_entries]
        if data.get("gate") is None:  # a grid without gate overrides keeps its former digest
            data.pop("gate", None)
        if not data.get("env_options"):  # so does one without environment options
            data.pop("env_options", None)
        if data.get("llm"):  # so does an llm block that leaves the newer deadline/budget at their defaults
            for key in ("deadline_s", "budget_s"):
                if data["llm"].get(key) == LLMConfig.model_fields[key].default:
                    data["llm"].pop(key)
        return data

    def gate_params(self):
        """The ego agents' :class:`~beliefgate.beliefs.gate.GateParams` (``None`` without ``gate``)."""
        return None if self.gate is None else gate_params_of(self.gate)

    def with_gate(self, overrides: Optional[Dict[str, Any]]) -> "GridSpec":
        """A copy of this grid with ``gate`` replaced by ``overrides`` (validated; ``None`` removes it)."""
        data = self.model_dump(mode="json")
        data["gate"] = overrides
        return parse_grid(data, f"grid {self.name!r} with gate {overrides}")

    def digest(self) -> str:
        """A short hash of :meth:`canonical` (the grid that made a results table)."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _unique(values: List, what: str, key=None) -> List:
    """``values``, refused when two are the same (by ``key``: a layout alias, a file's resolved path)."""
    from beliefgate.validation import repeats

    dups = [f"{v} (same as {vs[0]})" if v != vs[0] else v
            for _, vs in repeats(values, key) for v in vs[1:]]
    if dups:
        raise ValueError(f"duplicate {what}: {sorted(set(map(str, dups)))}")
    return values


def normalise_gate(overrides: Any) -> Dict[str, Any]:
    """Validate ``GateParams`` field overrides and return them in canonical form.

    Overrides name fields by their flat names (``cooldown``, ``hazard``, ``gate: cusum``: the
    shorthand :meth:`GateParams.replace` takes) or give parts as mappings (``gate: {kind: cusum}``,
    ``filter: {hazard: 0.1}``). The result maps each given field, under its flat name (sorted), to
    its validated value as JSON data (``cooldown: 5.0`` becomes ``5``), so equal settings always
    give the same episode keys, however they were written. Raises :class:`~beliefgate.beliefs.config.GateParamError` (a
    ``ValueError``) naming an unknown field or a bad value (inside a grid file this becomes a
    :class:`GridError`).
    """
    from beliefgate.beliefs.config import FLAT_KEYS, GateParamError, GateParams, flat_values, flatten

    if not isinstance(overrides, dict):
        raise GateParamError(f"gate must be a mapping of GateParams fields to values, "
                             f"got {type(overrides).__name__}", "gate")
    try:
        flat = flatten(overrides)
    except ValueError as exc:
        raise GateParamError(f"invalid gate parameters: {exc}") from None
    fields = list(FLAT_KEYS)
    unknown = sorted(str(k) for k in flat if k not in fields)
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(k.rpartition(".")[2], fields, n=1) for k in unknown]
        hint = "".join(f" (did you mean {h[0]!r}?)" for h in hints if h)
        raise GateParamError(f"unknown GateParams field(s) {unknown}{hint}; fields: {', '.join(fields)}",
                             unknown[0])
    try:
        params = GateParams().replace(**flat)
    except GateParamError as exc:
        raise GateParamError(f"invalid gate parameters: {exc}", exc.field) from None
    values = flat_values(params)
    dumped = json.loads(json.dumps({k: values[k] for k in flat}))
    return {k: dumped[k] for k in sorted(flat)}


def gate_params_of(overrides: Dict[str, Any]):
    """The defaults with ``overrides`` (flat names or parts, as :meth:`GateParams.replace` takes them)."""
    from beliefgate.beliefs.gate import GateParams

    return GateParams().replace(**overrides)


def parse_grid(data: Any, source: str = "grid") -> GridSpec:
    """Validate already-parsed grid data (a mapping)."""
    if not isinstance(data, dict):
        raise GridError(f"{source}: a grid must be a mapping with keys agents, layouts, partners, seeds, "
                        f"seats and horizon; got {type(data).__name__}")
    return GridSpec.from_data(data, source)


def load_grid(path: str | Path) -> GridSpec:
    """Read a grid file (``.yaml``/``.yml`` or ``.json``) and validate its structure. A relative path
    not found from here is looked up among the shipped examples (:func:`beliefgate.fileio.shipped_path`)."""

    from beliefgate.fileio import DataSyntaxError, parse_data, read_text, shipped_path

    path = shipped_path(path)

    text = read_text(path, GridError, "grid file")
    try:
        data = parse_data(text, "json" if path.suffix.lower() == ".json" else "yaml")
    except DataSyntaxError as exc:
        raise GridError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {exc}") from None
    return parse_grid(data, str(path))


# ------------------------------------------------------------------------------ episodes
def slug(name: str) -> str:
    """A file-name-safe form of an agent name (``bayes-belief:full`` -> ``bayes-belief_full``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "x"


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a grid: everything that determines it, and its deterministic file name."""

    agent: str
    layout: str
    partner: str          # the partner's agent name on this layout
    partner_entry: str    # the grid's partner entry (``bc:{layout}`` before expansion)
    group: str
    seed: int
    seat: int
    horizon: int
    llm_model: Optional[str] = None
    llm_base_url: Optional[str] = None
    #: the grid's ``gate`` overrides for the ego (canonical form), ``None`` without them
    gate: Optional[Dict[str, Any]] = field(default=None, hash=False)
    #: sha256 prefix of the partner file's validated spec (file partners only), so an edited file is a new episode
    partner_digest: Optional[str] = None
    #: the same for the ego when it is defined by a file (a partner file, a ``policy-tree:PATH`` tree)
    agent_digest: Optional[str] = None
    #: played with a partner memory (``eval run --memory``): it starts from the episodes of its
    #: :attr:`sequence` with smaller seeds, so it is another episode than one played without
    memory: bool = False
    #: the layout's environment options from the grid's ``env_options`` (``None`` without them)
    env_options: Optional[Dict[str, Any]] = field(default=None, hash=False)

    def identity(self) -> Dict[str, Any]:
        """The fields that make two episodes the same episode (the group is a label, not identity).

        ``gate`` enters only when set, so grids without it keep their keys."""
        out = {"agent": self.agent, "layout": self.layout, "partner": self.partner, "seed": self.seed,
               "seat": self.seat, "horizon": self.horizon, "llm_model": self.llm_model,
               "llm_base_url": self.llm_base_url}
        if self.gate is not None:
            out["gate"] = dict(self.gate)
        if self.partner_digest is not None:
            out["partner_digest"] = self.partner_digest
        if self.agent_digest is not None:
            out["agent_digest"] = self.agent_digest
        if self.memory:
            out["memory"] = True
        if self.env_options:
            out["env_options"] = dict(self.env_options)
        return out

    @property
    def sequence(self) -> str:
        """The memory sequence this episode belongs to: every field of its identity but the seed (one
        per condition, layout, partner, seat and settings), as a readable scope with a short hash."""
        rest = {k: v for k, v in self.identity().items() if k != "seed"}
        digest = hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:8]
        return f"eval {self.agent} seat{self.seat} h{self.horizon} {digest}"

    def gate_params(self):
        """The ego's :class:`~beliefgate.beliefs.gate.GateParams` (``None``: the agent's own defaults)."""
        return None if self.gate is None else gate_params_of(self.gate)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:10]

    @property
    def stem(self) -> str:
        """Path of the episode's files inside the run directory, without suffix."""
        return (f"episodes/{self.layout}/{slug(self.agent)}__{slug(self.partner)}"
                f"__seed{self.seed}__seat{self.seat}__{self.key}")

    @property
    def gate_json(self) -> str:
        """The gate overrides as compact JSON (``""`` without them): the results table's ``gate_params``."""
        return "" if self.gate is None else json.dumps(self.gate, sort_keys=True, separators=(",", ":"))

    @property
    def log_name(self) -> str:
        return self.stem + ".jsonl"

    @property
    def metrics_name(self) -> str:
        return self.stem + ".metrics.json"

    @property
    def label(self) -> str:
        return f"{self.agent} + {self.partner} on {self.layout}, seed {self.seed}, seat {self.seat}"

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        if data["gate"] is None:  # metric rows of grids without gate overrides stay as they were
            del data["gate"]
        for optional in ("partner_digest", "agent_digest", "env_options"):
            if data[optional] is None:
                del data[optional]
        if not data["memory"]:  # rows of runs without memory stay as they were
            del data["memory"]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "EpisodeSpec":
        return cls(**data)


@dataclass
class ResolvedGrid:
    """A validated grid: its episodes in a stable order, and what was left out and why."""

    spec: GridSpec
    episodes: List[EpisodeSpec]
    skipped: List[str] = field(default_factory=list)
    llm_agents: Tuple[str, ...] = ()

    @property
    def conditions(self) -> List[str]:
        return list(self.spec.agents)


def default_group(name: str) -> str:
    """The report group of a partner: its domain's group (the role preference of the scripted
    population); several partners (``A+B``) join their groups with ``+``."""
    from beliefgate.eval.episode import PARTNER_SEP, partner_list

    parts = partner_list(name)
    if len(parts) > 1:
        return PARTNER_SEP.join(default_group(p) for p in parts)
    owner = partner_domain(name)
    group = owner.partner_group(name) if owner is not None else None
    if group is not None:
        return group
    if name == "bc" or name.startswith("bc:"):
        return "human-proxy"
    return "agents"


def partner_file_digest(name: str) -> Optional[str]:
    """A short hash of a partner file's validated content (``None`` for registered names); several
    partners (``A+B``) hash their files' hashes together."""
    from beliefgate.eval.episode import partner_list

    digests = []
    for part in partner_list(name):
        owner = partner_domain(part)
        digests.append(owner.partner_file_digest(part) if owner is not None else None)
    if len(digests) == 1 or not any(digests):
        return digests[0] if len(digests) == 1 else None
    return hashlib.sha256(json.dumps(digests).encode()).hexdigest()[:12]


def _agent_digest(name: str) -> Optional[str]:
    """A short hash of what defines an ego given by a file: a partner file's validated spec, or
    what the agent table's row says (a policy tree's code, ``policy-tree:PATH[:bayes]``;
    :func:`beliefgate.agents.registry.agent_digest`); ``None`` for agents given by name."""
    digest = partner_file_digest(name)
    if digest is not None:
        return digest
    from beliefgate.agents.registry import agent_digest

    return agent_digest(name)


def _check_partner_file(name: str, role: str, horizon: int) -> None:
    """A partner file (or a shipped data-file partner): readable, valid, and its switch windows fit the horizon."""
    owner = partner_domain(name)
    if owner is None:
        return  # not a partner: the agent registry checks it
    try:
        owner.check_partners([name], horizon)
    except PartnerSpecError as exc:
        raise GridError(f"{role} {name!r}: {exc}") from None


def _grid_client(spec: "GridSpec"):
    """The client the grid's LLM agents get (None without an ``llm`` block); no request is made."""
    if spec.llm is None:
        return None
    from beliefgate.planners.client import LLMClient, LLMSettings
    from beliefgate.planners.errors import PlannerConfigError

    try:
        return LLMClient(LLMSettings(**spec.llm.model_dump()))
    except PlannerConfigError as exc:
        raise GridError(f"llm: {exc}") from None


def _check_agent(name: str, role: str, gate_params=None, llm=None) -> None:
    """Build ``name`` once as the episodes will (``llm``: the grid's client, given to agents that take one)."""
    from beliefgate.agents.registry import GateParamsNotUsedError, make_agent, uses_llm

    try:
        make_agent(name, gate_params=gate_params, llm=llm if llm is not None and uses_llm(name) else None)
    except GateParamsNotUsedError:
        raise GridError(f"{role} {name!r} runs no gate, so the grid's gate parameters would have no effect on it; "
                        "remove it from the grid or remove `gate:`") from None
    except UnknownPartnerError as exc:
        raise GridError(f"{role} {name!r}: {exc}") from None
    except ValueError as exc:
        raise GridError(f"{role} {name!r}: {exc}") from None


def _available(name: str, layout: str) -> Optional[str]:
    """None when ``name`` can play on ``layout``, else why not (probes an optional partner once)."""
    from beliefgate.agents.registry import make_agent

    try:
        make_agent(name).reset(layout, 1, 0)
    except (RuntimeError, OSError, KeyError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def resolve_grid(spec: GridSpec) -> ResolvedGrid:
    """Check every name of ``spec`` and expand it into episodes (agents x layouts x partners x seeds x seats).

    Raises :class:`GridError` naming the first unknown layout, agent or partner, or
    (with ``gate``) the first agent that runs no gate.
    Optional partners that cannot play (e.g. ``bc`` without a trained model) and
    scripted partners restricted to other layouts are skipped and listed in
    :attr:`ResolvedGrid.skipped`.
    """
    from beliefgate.eval.episode import partner_list

    def layout_restriction(name: str, layout: str) -> Optional[str]:
        domain = domain_for_layout(layout)
        parts = partner_list(name)
        for part in parts:
            why = domain.partner_restriction(part, layout)
            if why is not None:
                return why if len(parts) == 1 else f"{part}: {why}"
        return None

    def seats_mismatch(name: str, layout: str) -> Optional[str]:
        players, given = domain_for_layout(layout).players(layout), len(partner_list(name))
        if given == players - 1:
            return None
        return f"{layout} has {players} players, the entry names {given} partner{'s' if given != 1 else ''}"

    layouts = []
    for name in spec.layouts:
        try:
            layouts.append(resolve_layout(name))
        except UnknownLayoutError as exc:
            raise GridError(f"layouts: {exc}") from None
    if len(set(layouts)) != len(layouts):
        raise GridError(f"layouts: the same layout twice (after resolving names): {layouts}")
    env_options = _layout_options(spec.env_options, layouts)

    def expand(name: str, layout: str) -> str:
        return name.replace("{layout}", layout)

    client = _grid_client(spec)
    for role, names in (("agent", spec.agents), ("partner", [e.name for e in spec.partner_entries])):
        for raw in names:
            if "{" in raw.replace("{layout}", ""):
                raise GridError(f"{role} {raw!r}: the only placeholder is {{layout}}")
            # a layout-independent name is checked once, a templated one on every layout
            for layout in (layouts if "{layout}" in raw else layouts[:1]):
                for name in (partner_list(expand(raw, layout)) if role == "partner" else [expand(raw, layout)]):
                    _check_partner_file(name, role, spec.horizon)
                    _check_agent(name, role, spec.gate_params() if role == "agent" else None,
                                 client if role == "agent" else None)

    llm_agents: List[str] = []
    if spec.llm is not None:
        llm_agents = [a for a in spec.agents if uses_llm(expand(a, layouts[0]))]

    skipped: List[str] = []
    usable: Dict[Tuple[str, str], bool] = {}
    for entry in spec.partner_entries:
        for layout in layouts:
            name = expand(entry.name, layout)
            why = seats_mismatch(name, layout) or layout_restriction(name, layout)
            if why is not None:
                usable[(entry.name, layout)] = False
                skipped.append(f"partner {name} on {layout}: {why}")
                continue
            if entry.optional:
                why = _available(name, layout)
                if why is not None:
                    usable[(entry.name, layout)] = False
                    skipped.append(f"optional partner {name} on {layout}: unavailable ({why})")
                    continue
            elif name == "bc" or name.startswith("bc:"):  # needs data outside the package: probed now
                why = _available(name, layout)
                if why is not None:
                    raise GridError(f"partner {name} cannot play {layout} ({why}); mark it `optional: true` to "
                                    "skip it where it cannot")
            usable[(entry.name, layout)] = True

    # a seat the layout lacks (seat 2 of a two-player kitchen) is skipped there, and said so
    seats_of = {layout: [s for s in spec.seats if s < domain_for_layout(layout).players(layout)] for layout in layouts}
    for layout in layouts:
        missing = [s for s in spec.seats if s not in seats_of[layout]]
        if missing:
            skipped.append(f"seat{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} on {layout}: "
                           f"it has {domain_for_layout(layout).players(layout)} players")

    episodes: List[EpisodeSpec] = []
    llm = spec.llm
    for agent in spec.agents:
        for layout in layouts:
            ego = expand(agent, layout)
            why = layout_restriction(ego, layout)
            if why is not None:  # a scripted partner as the ego plays only its layouts, too
                skipped.append(f"agent {ego} on {layout}: {why}")
                continue
            ego_digest = _agent_digest(ego)
            with_llm = llm is not None and agent in llm_agents
            for entry in spec.partner_entries:
                if not usable[(entry.name, layout)]:
                    continue
                partner = expand(entry.name, layout)
                group = entry.group or default_group(partner)
                digest = partner_file_digest(partner)
                for seed in spec.seed_list:
                    for seat in seats_of[layout]:
                        episodes.append(EpisodeSpec(
                            agent=ego, layout=layout, partner=partner, partner_entry=entry.name, group=group,
                            seed=seed, seat=seat, horizon=spec.horizon,
                            llm_model=llm.model if with_llm else None,
                            llm_base_url=llm.base_url if with_llm else None,
                            gate=dict(spec.gate) if spec.gate is not None else None,
                            partner_digest=digest, agent_digest=ego_digest,
                            env_options=env_options.get(layout)))
    keys = {}
    for ep in episodes:
        if ep.stem in keys:
            raise GridError(f"two episodes of the grid are the same episode: {ep.label}")
        keys[ep.stem] = ep
    return ResolvedGrid(spec, episodes, skipped, tuple(llm_agents))


def _layout_options(given: Optional[Dict[str, Dict[str, Any]]], layouts: List[str]) -> Dict[str, Dict[str, Any]]:
    """The grid's ``env_options`` by resolved layout, each checked by its domain (``GridError`` naming the
    layout and the field: a layout the grid does not play, an unknown option, a bad value)."""
    out: Dict[str, Dict[str, Any]] = {}
    for name, options in (given or {}).items():
        try:
            layout = resolve_layout(name)
        except UnknownLayoutError as exc:
            raise GridError(f"env_options: {exc}") from None
        if layout not in layouts:
            raise GridError(f"env_options: {name} is not one of the grid's layouts ({', '.join(layouts)})")
        if layout in out:
            raise GridError(f"env_options: {layout} given twice")
        if not isinstance(options, dict):
            raise GridError(f"env_options: {name}: give a mapping of option: value, got {options!r}")
        domain = domain_for_layout(layout)
        try:
            domain.check_env_options(layout, **options)
        except (InputError, TypeError) as exc:
            raise GridError(f"env_options: {name}: {exc}") from None
        if options:
            out[layout] = dict(options)
    return out


def regate(resolved: ResolvedGrid, overrides: Optional[Dict[str, Any]]) -> ResolvedGrid:
    """``resolved`` with the ego gate overrides replaced (the same episodes otherwise).

    The names were checked when ``resolved`` was made; only the overrides are
    validated here (and every agent must run a gate when they are set). Cheaper
    than :func:`resolve_grid` for sweeps over gate settings.
    """
    from dataclasses import replace

    spec = resolved.spec.with_gate(overrides)
    if spec.gate is not None:
        params = spec.gate_params()
        client = _grid_client(spec)
        for agent in sorted({ep.agent for ep in resolved.episodes}):
            _check_agent(agent, "agent", params, client)
    episodes = [replace(ep, gate=dict(spec.gate) if spec.gate is not None else None) for ep in resolved.episodes]
    return ResolvedGrid(spec, episodes, list(resolved.skipped), resolved.llm_agents)
