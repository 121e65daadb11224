"""Policy files, their JSON cards and the resumable training state; every write is atomic.

A policy is ``NAME.msgpack`` (flax's msgpack serialization of the network parameters, float32)
with its card ``NAME.json`` beside it: format, layout, kind, event weights, seed, steps, final
return, wall time, commit and versions, the observation shape, the network sizes and the SHA-256 of
the parameter file. The training state ``state.msgpack`` (parameters, optimiser, environments, RNG
key, learning curve, config) makes a killed run resumable.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from beliefgate.errors import InputError

FORMAT = "beliefgate-ppo/1"
POLICY_SUFFIX = ".msgpack"
CARD_SUFFIX = ".json"
#: a shipped policy file may not be larger than this
MAX_POLICY_BYTES = 1 << 20


class CheckpointError(InputError):
    """A policy or training-state file that cannot be used (corrupt, another layout or observation
    shape, an unknown format or kind): one line naming the file."""


def atomic_write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a
    kill leaves either the old file or the new one, never half of one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make shipped files private
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def card_path(policy: Path) -> Path:
    return Path(policy).with_suffix(CARD_SUFFIX)


def versions() -> Dict[str, str]:
    """Versions of the packages a policy depends on."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "jaxmarl", "flax", "optax", "beliefgate"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def save_policy(path: Path, params: Any, card: Dict[str, Any]) -> Path:
    """Write the parameters to ``path`` and ``card`` (with the file's digest added) beside it."""
    import numpy as np
    from flax import serialization

    import jax

    tree = jax.tree.map(lambda x: np.asarray(x, dtype=np.float32), params)
    data = serialization.msgpack_serialize(serialization.to_state_dict(tree))
    if len(data) > MAX_POLICY_BYTES:
        raise CheckpointError(f"{path}: the policy is {len(data)} bytes, more than {MAX_POLICY_BYTES} "
                              f"(use smaller hidden layers)")
    atomic_write(Path(path), data)
    full = {**card, "format": FORMAT, "file": Path(path).name, "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}
    atomic_write(card_path(path), (json.dumps(full, indent=2, sort_keys=True) + "\n").encode())
    return Path(path)


def read_card(path: Path) -> Dict[str, Any]:
    """The card of the policy file ``path``; :class:`CheckpointError` naming the file if it is
    missing, not JSON or not a card of this format."""
    card_file = card_path(path)
    if not card_file.is_file():
        raise CheckpointError(f"{path}: no card {card_file.name} beside it (not a beliefgate PPO policy)")
    try:
        card = json.loads(card_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{card_file}: not a JSON card ({exc})") from None
    if not isinstance(card, dict) or card.get("format") != FORMAT:
        got = card.get("format") if isinstance(card, dict) else type(card).__name__
        raise CheckpointError(f"{card_file}: format {got!r} is not {FORMAT!r}")
    for key in ("layout", "kind", "obs_shape", "num_actions", "hidden", "sha256"):
        if key not in card:
            raise CheckpointError(f"{card_file}: the card has no {key!r}")
    if card["kind"] not in ("sp", "bp", "fcp"):
        raise CheckpointError(f"{card_file}: unknown kind {card['kind']!r} (sp, bp, fcp)")
    return card


def check_card(path: Path, card: Dict[str, Any], layout: Optional[str] = None,
               obs_shape: Optional[Sequence[int]] = None) -> None:
    """Refuse a policy trained for another layout or observation shape than the one it will play."""
    if layout is not None and card["layout"] != layout:
        raise CheckpointError(f"{path}: trained on layout {card['layout']}, not {layout}")
    if obs_shape is not None and tuple(card["obs_shape"]) != tuple(obs_shape):
        raise CheckpointError(f"{path}: observation shape {tuple(card['obs_shape'])} does not match the "
                              f"layout's {tuple(obs_shape)}")


def load_params(path: Path, layout: Optional[str] = None,
                obs_shape: Optional[Sequence[int]] = None) -> Tuple[Any, Dict[str, Any]]:
    """``(params, card)`` of the policy file ``path``, checked: the card (format, kind, layout,
    observation shape), the digest and the parameter shapes against the card's network."""
    import numpy as np
    from flax import serialization

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such policy file")
    card = read_card(path)
    check_card(path, card, layout, obs_shape)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != card["sha256"]:
        raise CheckpointError(f"{path}: its contents do not match the card's sha256 (corrupt or replaced)")
    try:
        raw = serialization.msgpack_restore(data)
    except Exception as exc:  # noqa: BLE001 -- msgpack raises several unrelated types on bad bytes
        raise CheckpointError(f"{path}: not a parameter file ({type(exc).__name__})") from None
    expected = expected_shapes(card)
    got = _shapes(raw)
    if got != expected:
        raise CheckpointError(f"{path}: parameter shapes do not match the card's network "
                              f"(obs {tuple(card['obs_shape'])}, hidden {tuple(card['hidden'])})")
    params = _map(raw, lambda x: np.asarray(x, dtype=np.float32))
    return params, card


def expected_shapes(card: Dict[str, Any]) -> Dict[str, Any]:
    """The parameter shapes of the card's network (built abstractly: nothing is computed)."""
    import jax
    import jax.numpy as jnp

    from beliefgate.envs.overcooked_v2.policies.network import ActorCritic, input_size

    net = ActorCritic(num_actions=int(card["num_actions"]), hidden=tuple(card["hidden"]))
    n_in = input_size(card["obs_shape"], len(card.get("conditioned_events") or ()))
    shapes = jax.eval_shape(net.init, jax.random.PRNGKey(0), jnp.zeros((1, n_in)))
    return _shapes(shapes)


def _shapes(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _shapes(v) for k, v in tree.items()}
    return tuple(getattr(tree, "shape", ()))


def _map(tree: Any, fn) -> Any:
    if isinstance(tree, dict):
        return {k: _map(v, fn) for k, v in tree.items()}
    return fn(tree)


def find_policies(folder: Path) -> list:
    """Every policy file (``*.msgpack`` with a card beside it) under ``folder``, sorted."""
    return sorted(p for p in Path(folder).rglob(f"*{POLICY_SUFFIX}") if card_path(p).is_file())


__all__ = ["CheckpointError", "FORMAT", "atomic_write", "save_policy", "read_card", "check_card", "load_params",
           "find_policies", "versions", "MAX_POLICY_BYTES"]
