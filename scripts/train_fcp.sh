#!/usr/bin/env bash
# FCP egos of issue 44 on the three BayesBelief layouts: each trained against a pool of the SP zoo's
# snapshots (4 stages) of seeds 0 and 1 (SP seed 2 stays held out, the partner FCP is measured
# against), a resumable run under runs/ppo/fcp/ (rerun after a kill: finished runs are skipped,
# an interrupted one continues). A layout whose SP seeds are not finished (no DONE in the zoo) is
# skipped with a message, and the script exits 3 at the end.
#
#   scripts/train_fcp.sh                       # everything, in order (after scripts/train_zoo.sh)
#   TIME_LIMIT=3600 scripts/train_fcp.sh       # stop after an hour; rerun to continue
#   LAYOUTS="cramped_room" STEPS=20000 ROOT=/tmp/fcp scripts/train_fcp.sh   # a smoke run
#   LAYOUTS=coord_ring POOL_SEEDS="2 3" CONFIG=scripts/ppo_hard.json scripts/train_fcp.sh
#       # a layout whose first SP seeds learnt nothing (train_zoo.sh KEEP=3): the pool is the first two
#       # that learnt, the third stays held out; CONFIG: further PPOConfig fields
set -euo pipefail
cd "$(dirname "$0")/.."
LAYOUTS=${LAYOUTS:-"cramped_room coord_ring forced_coord"}
SEEDS=${SEEDS:-"0"}
POOL_SEEDS=${POOL_SEEDS:-"0 1"}
STEPS=${STEPS:-4000000}
ZOO=${ZOO:-runs/ppo/zoo}
ROOT=${ROOT:-runs/ppo/fcp}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
deadline=$(( $(date +%s) + ${TIME_LIMIT:-1000000000} ))
source scripts/train_lib.sh
skipped=0
for layout in $LAYOUTS; do
  pool="$ROOT/pool_${layout}"
  missing=""
  for s in $POOL_SEEDS; do
    [ -f "$ZOO/sp_${layout}_seed${s}/DONE" ] || missing="$missing $ZOO/sp_${layout}_seed${s}"
  done
  if [ -n "$missing" ]; then echo "skip v2/$layout: SP runs not finished:$missing"; skipped=1; continue; fi
  if [ ! -f "$pool/READY" ]; then     # the pool: copies of the snapshots (policy + card), once
    rm -rf "$pool"
    for s in $POOL_SEEDS; do
      mkdir -p "$pool/seed$s"
      cp "$ZOO/sp_${layout}_seed${s}"/snapshots/*.msgpack "$ZOO/sp_${layout}_seed${s}"/snapshots/*.json "$pool/seed$s/"
    done
    touch "$pool/READY"
  fi
  for seed in $SEEDS; do
    train_run "$ROOT/fcp_${layout}_seed${seed}" "fcp v2/$layout seed $seed, pool $pool" --layout "v2/$layout" \
      --kind fcp --pool "$pool" --steps "$STEPS" --seed "$seed" ${CONFIG:+--config "$CONFIG"}
  done
done
if [ "$skipped" = 1 ]; then echo "fcp incomplete: rerun after the SP runs finish"; exit 3; fi
echo "fcp complete under $ROOT"
