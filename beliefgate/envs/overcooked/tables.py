"""Static per-layout pose tables: the pose graph and BFS distances to every interactable cell.

A *pose* is (floor cell, orientation); its index is ``cell_index * 4 + dir``
with directions in Overcooked's order (N, S, E, W). Overcooked motion: a move
in direction d turns to d and steps if the target cell is floor, otherwise it
only turns; STAY and INTERACT keep the pose.

``dist[c, p]`` is the number of actions until a player in pose ``p`` faces
interactable cell ``c`` from an adjacent floor cell (``inf`` if impossible).
Tables are computed once per layout (and per blocked cell for the "other
player blocks" mode), kept in memory and cached on disk under the user cache
directory -- never inside site-packages.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np

from beliefgate.envs.overcooked.layouts import DIRECTIONS, LayoutInfo, Pos, layout_info, resolve_layout

NUM_ACTIONS = 6
STAY, INTERACT = 4, 5
ACTION_NAMES = ("north", "south", "east", "west", "stay", "interact")
_TABLE_VERSION = 1


def cache_dir() -> Path:
    """User cache directory for beliefgate (``$BELIEFGATE_CACHE`` overrides)."""
    env = os.environ.get("BELIEFGATE_CACHE")
    if env:
        path = Path(env)
    else:
        from platformdirs import user_cache_dir

        path = Path(user_cache_dir("beliefgate"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class PoseTables:
    """Pose graph and distance tables of one layout.

    Attributes
    ----------
    cells : int[F, 2]          floor cells (x, y)
    next_pose : int[P, 6]      pose after each action, other players ignored (P = 4F)
    facing : int[P]            interactable index faced by each pose, -1 if it faces floor
    dist : float[C, P]         actions until facing interactable c (inf = unreachable)
    """

    layout: str
    cells: np.ndarray
    next_pose: np.ndarray
    facing: np.ndarray
    dist: np.ndarray
    interactables: Tuple[Pos, ...]

    @property
    def num_poses(self) -> int:
        return self.next_pose.shape[0]

    @property
    def cell_index(self) -> Dict[Pos, int]:
        return _cell_index(self.layout)

    @property
    def inter_index(self) -> Dict[Pos, int]:
        return _inter_index(self.interactables)

    def pose(self, position: Pos, orientation: Pos) -> int:
        try:
            return self.cell_index[tuple(position)] * 4 + DIRECTIONS.index(tuple(orientation))
        except (KeyError, ValueError):
            raise ValueError(f"{position} facing {orientation} is not a pose of {self.layout}") from None

    def cell_of_pose(self, pose: int) -> Pos:
        x, y = self.cells[pose // 4]
        return (int(x), int(y))


@lru_cache(maxsize=None)
def _inter_index(interactables: Tuple[Pos, ...]) -> Dict[Pos, int]:
    return {c: i for i, c in enumerate(interactables)}


@lru_cache(maxsize=None)
def _cell_index(layout: str) -> Dict[Pos, int]:
    return {c: i for i, c in enumerate(layout_info(layout).floor)}


def _pose_graph(info: LayoutInfo, blocked: Optional[Pos] = None):
    cells = list(info.floor)
    index = {c: i for i, c in enumerate(cells)}
    inter_index = {c: i for i, c in enumerate(info.interactables)}
    num_poses = 4 * len(cells)
    next_pose = np.empty((num_poses, NUM_ACTIONS), dtype=np.int32)
    facing = np.full(num_poses, -1, dtype=np.int32)
    for ci, (x, y) in enumerate(cells):
        for d, (dx, dy) in enumerate(DIRECTIONS):
            p = ci * 4 + d
            front = (x + dx, y + dy)
            facing[p] = inter_index.get(front, -1)
            next_pose[p, STAY] = p
            next_pose[p, INTERACT] = p
            for a, (ax, ay) in enumerate(DIRECTIONS):
                target = (x + ax, y + ay)
                if target in index and target != blocked:
                    next_pose[p, a] = index[target] * 4 + a
                else:
                    next_pose[p, a] = ci * 4 + a
    return np.asarray(cells, dtype=np.int32), next_pose, facing


def _distances(next_pose: np.ndarray, facing: np.ndarray, num_inter: int,
               start_ok: Optional[np.ndarray] = None) -> np.ndarray:
    """Bellman iteration of the shortest-path recursion for all targets at once."""
    num_poses = next_pose.shape[0]
    dist = np.full((num_inter, num_poses), np.inf)
    poses = np.arange(num_poses)
    faced = facing >= 0
    dist[facing[faced], poses[faced]] = 0.0
    if start_ok is not None:  # poses standing on a blocked cell cannot be goals
        dist[:, ~start_ok] = np.inf
    moves = next_pose[:, :4]
    for _ in range(4 * num_poses + 1):
        cand = 1.0 + dist[:, moves].min(axis=2)
        if start_ok is not None:
            cand[:, ~start_ok] = np.inf
        new = np.minimum(dist, cand)
        if np.array_equal(new, dist):
            break
        dist = new
    return dist


def _digest(info: LayoutInfo, blocked: Optional[Pos]) -> str:
    key = f"v{_TABLE_VERSION}|{'/'.join(info.terrain)}|{blocked}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _load_or_compute(info: LayoutInfo, blocked: Optional[Pos]) -> PoseTables:
    path = cache_dir() / f"pose_tables_{info.name}_{_digest(info, blocked)}.npz"
    cells, next_pose, facing = _pose_graph(info, blocked)
    if path.exists():
        try:
            with np.load(path) as data:
                dist = data["dist"]
            if dist.shape == (len(info.interactables), next_pose.shape[0]):
                return PoseTables(info.name, cells, next_pose, facing, dist, info.interactables)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file is recomputed and rewritten below
    start_ok = None
    if blocked is not None:
        start_ok = np.array([tuple(c) != blocked for c in cells.tolist() for _ in range(4)])
    dist = _distances(next_pose, facing, len(info.interactables), start_ok)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, dist=dist)
    os.replace(tmp, path)
    return PoseTables(info.name, cells, next_pose, facing, dist, info.interactables)


@lru_cache(maxsize=None)
def pose_tables(layout: str, blocked: Optional[Pos] = None) -> PoseTables:
    """Pose tables of a layout, optionally with one floor cell blocked (another player)."""
    info = layout_info(resolve_layout(layout))
    if blocked is not None:
        blocked = (int(blocked[0]), int(blocked[1]))
    return _load_or_compute(info, blocked)
