#!/usr/bin/env bash
# Self-play PPO on v2/cramped_room: the issue-44 target run (>= 200 mean reward per 400-step
# episode within 20 minutes on 2 CPU cores). Resumable: run the same command again after a kill
# (or with a TIME_LIMIT) and it continues from the last checkpoint (at most one update is lost).
#
#   scripts/train_sp.sh                 # seed 0 -> runs/ppo/sp_cramped_room_seed0
#   SEED=1 TIME_LIMIT=480 scripts/train_sp.sh   # stop after 8 minutes; rerun to continue
#
# Outputs (under $OUT): policy.msgpack + policy.json (card), curve.csv, curve.png, state.msgpack
# (the resumable state), snapshots/ (policies at 4 stages: an FCP pool).
set -euo pipefail
cd "$(dirname "$0")/.."
SEED=${SEED:-0}
LAYOUT=${LAYOUT:-v2/cramped_room}
STEPS=${STEPS:-12000000}
OUT=${OUT:-runs/ppo/sp_$(basename "$LAYOUT")_seed${SEED}}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
mkdir -p "$OUT"
cmd=(nice -n "${NICE:-10}" "$PY" -m beliefgate.cli train ppo --layout "$LAYOUT" --kind sp --steps "$STEPS"
     --seed "$SEED" --out "$OUT" --resume --snapshots 4)
if [ -n "${TIME_LIMIT:-}" ]; then
  cmd=(timeout "$TIME_LIMIT" "${cmd[@]}")
fi
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "${cmd[@]}" || {
  rc=$?
  if [ "$rc" = 124 ]; then echo "stopped after ${TIME_LIMIT}s; rerun to continue from $OUT/state.msgpack"; exit 0; fi
  exit "$rc"
}
