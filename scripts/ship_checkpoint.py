#!/usr/bin/env python
"""Ship a finished training run as a trained partner of the package.

    python scripts/ship_checkpoint.py SRC NAME [--description TEXT] [--greedy]
    python scripts/ship_checkpoint.py runs/ppo/bp/bp_cramped_room_seed0 bp-cramped_room

A reward-conditioned BP network (its card names ``conditioned_events``) is shipped once, under
``trained/NAME/``, with one partner file per behaviour of the population
(``beliefgate/rl/bp_population.yaml``), ``trained/bp-<group>-<a>-<b>-<layout>.yaml``: the shared
checkpoint, the behaviour's event weights and its group. A behaviour whose weights the network was
not trained on is refused (exit 2, naming it).

SRC is a run folder (``runs/ppo/zoo/sp_cramped_room_seed0``) or its ``policy.msgpack``; NAME the
partner's name (lower case, digits, ``_ . -``; e.g. ``sp-cramped_room-s0``). The policy and its card
are checked (digest, parameter shapes, the layout's observation shape, at most 1 MB) and copied to
``beliefgate/envs/overcooked_v2/trained/NAME/``, and the partner file ``trained/NAME.yaml`` is
written beside it (``kind: ppo``, the checkpoint relative to the file). Exit 2 with one line naming
the file when the checkpoint is refused.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beliefgate.errors import InputError  # noqa: E402

TRAINED = ROOT / "beliefgate" / "envs" / "overcooked_v2" / "trained"


def ship(src: Path, name: str, description: str = "", greedy: bool = False, dest: Path = TRAINED) -> Path:
    """Copy ``src``'s policy and card under ``dest/name/`` and write ``dest/name.yaml``; the partner file."""
    import re

    import yaml

    from beliefgate.envs.overcooked_v2.policies.checkpoint import MAX_POLICY_BYTES, card_path, read_card
    from beliefgate.envs.overcooked_v2.policies.loader import load_policy

    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
        raise InputError(f"NAME {name!r}: lower-case letters, digits, '_', '.' and '-' only")
    policy = src / "policy.msgpack" if src.is_dir() else src
    if not policy.is_file():
        raise InputError(f"{policy}: no such policy file")
    if policy.stat().st_size > MAX_POLICY_BYTES:
        raise InputError(f"{policy}: {policy.stat().st_size} bytes, more than the {MAX_POLICY_BYTES} a shipped "
                         "checkpoint may have")
    card = read_card(policy)
    weights = card["event_weights"][0] if card.get("conditioned_events") else None
    load_policy(policy, layout=card["layout"], weights=weights)   # digest, shapes, the layout's observation shape
    # several weight sets: the population's behaviours; one set (a conditioned net whose teammates played
    # the zero weights) ships as one partner that names its weights
    several = len(card.get("event_weights") or []) > 1
    behaviours = population_specs(policy, name, card, greedy) if several else None
    folder = dest / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(policy, folder / "policy.msgpack")
    shutil.copyfile(card_path(policy), folder / "policy.json")
    if behaviours is not None:
        for spec in behaviours:
            (dest / f"{spec['name']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        return dest / f"{behaviours[0]['name']}.yaml"
    text = description or (f"{card['kind'].upper()} PPO policy on {card['layout']} (seed {card['seed']}, "
                           f"{card['steps']} steps, final return {card.get('final_return')})")
    spec = {"format": "beliefgate.v2partner/1", "name": name, "description": text, "kind": "ppo",
            "checkpoint": f"{name}/policy.msgpack", "greedy": bool(greedy)}
    if weights is not None:
        spec["weights"] = weights
    out = dest / f"{name}.yaml"
    out.write_text(yaml.safe_dump(spec, sort_keys=False))
    return out


def population_specs(policy: Path, folder: str, card: dict, greedy: bool) -> list:
    """One partner spec per behaviour of the BP population, all naming the conditioned network shipped
    as ``folder``; :class:`InputError` naming a behaviour the network was not trained on."""
    from beliefgate.rl.population import load_population

    trained = [{k: float(v) for k, v in w.items()} for w in card.get("event_weights", [])]
    norm = [{k: v for k, v in w.items() if v != 0.0} for w in trained]
    specs = []
    for b in load_population().behaviours():
        want = {k: v for k, v in b.weights.items() if v != 0.0}
        if want not in norm:
            raise InputError(f"{policy}: behaviour {b.name} ({b.weights_arg()}) is not among the weight sets the "
                             "network was trained on")
        name = b.partner_name(card["layout"])
        settings = ", ".join(f"{e} {s}" for e, s in b.settings.items())
        spec = {"format": "beliefgate.v2partner/1", "name": name,
                "description": f"BP PPO policy on {card['layout']}, group {b.group} ({settings}): one behaviour "
                               f"of the reward-conditioned network {folder} (seed {card['seed']}, "
                               f"{card['steps']} steps, final return {card.get('final_return')})",
                "kind": "ppo", "checkpoint": f"{folder}/policy.msgpack", "greedy": bool(greedy),
                "weights": b.weights, "group": b.group}
        specs.append(spec)
    return specs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="run folder or policy.msgpack")
    parser.add_argument("name", help="the partner's name")
    parser.add_argument("--description", default="")
    parser.add_argument("--greedy", action="store_true", help="play arg-max actions (default: sample)")
    args = parser.parse_args(argv)
    try:
        out = ship(args.src, args.name, args.description, args.greedy)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"shipped {args.name}: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
